#!/bin/sh
# Captures the /proc/PID/stat lines tests/test_others.py parses (collect.others):
# a user process, a kernel thread (kthreadd, pid 2), and a process whose command
# name holds spaces and parentheses. Run from the repository root:
#   sh tests/data/others/capture.sh
set -eu
here=tests/data/others
cat /proc/self/stat > "$here/user.stat"
cat /proc/2/stat > "$here/kthreadd.stat"
sh -c 'printf "a (b) c" > /proc/$$/comm; cat /proc/$$/stat' > "$here/odd_comm.stat"
