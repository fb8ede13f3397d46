#!/bin/sh
# Records tests/data/workloads/sysbench/*.txt, read by tests/test_workload_parsers.py
# through src/fslab/workload/sysbench/parse.py.
#
# Run as root from anywhere, when no measurement holds /work/bench.lock:
#   sh tests/data/workloads/sysbench/capture.sh
#
# sysbench fileio on a fresh filesystem per filesystem type (sparse image in
# /dev/shm, loop device, private mount dir, released on every exit path by
# scratch.sh): prepare, the runs, cleanup, each phase's stdout in <case>.txt
# (<case>.stderr.txt when stderr is not empty), manifest.tsv the versions,
# exit statuses and argv. 16 files, 64 MiB, sync I/O, 3 s a run.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$HERE
. "$HERE/../scratch.sh"
export LC_ALL=C

scratch_init
manifest_start sysbench

FILES="--file-num=16 --file-total-size=64M --file-io-mode=sync"
RUN="--time=3 --percentile=99 --histogram=off"

# sb CASE FS MODE ARGS...: sysbench fileio in $MNT (it works in the current directory)
sb() {
    name=$1
    fs=$2
    mode=$3
    shift 3
    cd "$MNT"
    # shellcheck disable=SC2086  # option lists split on purpose
    record "$name" "$fs" sysbench fileio $FILES --file-test-mode="$mode" "$@"
    cd /
}

for fs in ext4 xfs; do
    scratch_up "$fs"
    # a run before prepare: the files are missing
    # shellcheck disable=SC2086
    sb "${fs}_rndwr_unprepared" "$fs" rndwr $RUN --threads=1 run
    sb "${fs}_prepare" "$fs" rndwr prepare
    # shellcheck disable=SC2086
    sb "${fs}_rndwr_t1" "$fs" rndwr $RUN --threads=1 run
    # shellcheck disable=SC2086
    sb "${fs}_rndwr_t4" "$fs" rndwr $RUN --threads=4 run
    # shellcheck disable=SC2086
    sb "${fs}_rndwr_t4_fsync1" "$fs" rndwr $RUN --threads=4 --file-fsync-freq=1 run
    # shellcheck disable=SC2086
    sb "${fs}_rndwr_t4_fsync0" "$fs" rndwr $RUN --threads=4 --file-fsync-freq=0 run
    # shellcheck disable=SC2086
    sb "${fs}_seqwr_t1" "$fs" seqwr $RUN --threads=1 run
    # shellcheck disable=SC2086
    sb "${fs}_seqwr_t4_fsync1" "$fs" seqwr $RUN --threads=4 --file-fsync-freq=1 run
    sb "${fs}_cleanup" "$fs" rndwr cleanup
    scratch_down
done
