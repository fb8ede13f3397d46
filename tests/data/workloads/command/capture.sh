#!/bin/sh
# Records tests/data/workloads/command/*.txt, read by tests/test_workloads_command.py
# through src/fslab/workload/command/parse.py.
#
# Run as root from anywhere, when no measurement holds /work/bench.lock:
#   sh tests/data/workloads/command/capture.sh
#
# A `command` workload is the spec's own program; the sample is what such a
# script prints: a sh loop creating empty files in a fresh ext4 (scratch.sh),
# timing itself with date +%s%N and printing its rate on the last line.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE
. "$HERE/../scratch.sh"
export LC_ALL=C

scratch_init
manifest_start coreutils dash

SCRIPT='n=$1; start=$(date +%s%N); i=0; while [ $i -lt $n ]; do : > f$i; i=$((i + 1)); done; end=$(date +%s%N); echo "created $n files"; awk -v n=$n -v ns=$((end - start)) "BEGIN { printf \"rate: %.1f files/s\\n\", n / (ns / 1e9) }"'

scratch_up ext4
cd "$MNT"
record create_files ext4 sh -c "$SCRIPT" sh 2000
cd /
scratch_down
