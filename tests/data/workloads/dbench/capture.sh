#!/bin/sh
# Records tests/data/workloads/dbench/*.txt, read by tests/test_workload_parsers.py
# through src/fslab/workload/dbench/parse.py.
#
# Run as root from anywhere, when no measurement holds /work/bench.lock:
#   sh tests/data/workloads/dbench/capture.sh
#
# dbench with the loadfile Debian ships (/usr/share/dbench/client.txt), 5 s
# (dbench's warmup is a fifth of that), each case on a fresh filesystem
# (sparse image in /dev/shm, loop device, private mount dir, released on every
# exit path by scratch.sh). <case>.txt is dbench's stdout, <case>.stderr.txt
# its stderr when not empty; manifest.tsv the versions, exit statuses and argv.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE
. "$HERE/../scratch.sh"
export LC_ALL=C
LOADFILE=/usr/share/dbench/client.txt

scratch_init
manifest_start dbench

# db CASE FS ARGS...: dbench on a fresh FS
db() {
    name=$1
    fs=$2
    shift 2
    scratch_up "$fs"
    record "$name" "$fs" dbench -D "$MNT" -t 5 "$@"
    scratch_down
}

db ext4_c1 ext4 -c "$LOADFILE" 1
db ext4_c4 ext4 -c "$LOADFILE" 4
db ext4_c4_sync ext4 -s -c "$LOADFILE" 4
db ext4_c4_fsync ext4 -F -c "$LOADFILE" 4
db ext4_c4_syncdirs ext4 -S -c "$LOADFILE" 4
db xfs_c4 xfs -c "$LOADFILE" 4
db btrfs_c4 btrfs -c "$LOADFILE" 4
# a failure, as dbench prints it: the loadfile is missing
db fail_loadfile ext4 -c "$LOADFILE.missing" 1
