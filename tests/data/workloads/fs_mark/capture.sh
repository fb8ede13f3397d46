#!/bin/sh
# Records tests/data/workloads/fs_mark/*.txt, read by tests/test_workload_parsers.py
# through src/fslab/workload/fs_mark/parse.py.
#
# Run as root from anywhere, when no measurement holds /work/bench.lock:
#   sh tests/data/workloads/fs_mark/capture.sh
#
# Each case gets a fresh filesystem on a sparse image in /dev/shm (loop device),
# mounted under a private directory, released on every exit path (scratch.sh).
# Shapes follow what bug reports run (-D 16 -N 256 -n N -L 8 -S 1 -s 8192),
# scaled down to seconds. <case>.txt is fs_mark's stdout, <case>.log.txt the
# -l log it writes, <case>.stderr.txt its stderr when not empty; manifest.tsv
# holds the versions, exit statuses and argv.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE
IMAGE_SIZE=2G
. "$HERE/../scratch.sh"
export LC_ALL=C

scratch_init
manifest_start fsmark

# fsmark_case CASE FS NDIRS ARGS...: a fresh FS with NDIRS -d directories under it
fsmark_case() {
    name=$1
    fs=$2
    ndirs=$3
    shift 3
    scratch_up "$fs"
    dirs=
    i=0
    while [ "$i" -lt "$ndirs" ]; do
        mkdir "$MNT/d$i"
        dirs="$dirs -d $MNT/d$i"
        i=$((i + 1))
    done
    # word splitting of $dirs wanted: the paths are mktemp's, without spaces
    # shellcheck disable=SC2086
    record "$name" "$fs" fs_mark $dirs "$@" -l "$TOP/$name.log"
    if [ -f "$TOP/$name.log" ]; then
        cp "$TOP/$name.log" "$OUT/$name.log.txt"
    fi
    scratch_down
}

# the robot report's shape, scaled: 8 iterations of 1000 fsync'ed 8 KiB files
for fs in ext4 xfs btrfs; do
    fsmark_case "${fs}_robot_s1" "$fs" 1 -D 16 -N 256 -n 1000 -L 8 -S 1 -s 8192
done
# sync modes 0 (no sync) and 1 (fsync before close), one thread
fsmark_case ext4_s0_t1 ext4 1 -D 16 -N 256 -n 2000 -L 3 -S 0 -s 8192
fsmark_case ext4_s1_t1 ext4 1 -D 16 -N 256 -n 2000 -L 3 -S 1 -s 8192
# threads and several -d directories (-t must be a multiple of the -d count)
fsmark_case ext4_s1_t2_d2 ext4 2 -D 16 -N 256 -n 2000 -L 3 -S 1 -s 8192 -t 2
fsmark_case ext4_s1_t4_d2 ext4 2 -D 16 -N 256 -n 1000 -L 3 -S 1 -s 8192 -t 4
fsmark_case xfs_s1_t4_d4 xfs 4 -D 16 -N 256 -n 1000 -L 3 -S 1 -s 8192 -t 4
fsmark_case btrfs_s0_t4_d4 btrfs 4 -D 16 -N 256 -n 1000 -L 3 -S 0 -s 8192 -t 4
# failures, as fs_mark prints them: threads not a multiple of the directories
fsmark_case fail_threads ext4 2 -D 16 -N 256 -n 100 -L 1 -S 1 -s 8192 -t 3
