#!/bin/sh
# Records the campaigns tests/test_report.py renders (root; about 5 minutes).
#
#   report_campaign_fsync_quick.json         ext4-fsync-storm --quick, 2 s runs
#   report_campaign_cached_write_quick.json  cached-write-ext4-vs-xfs --quick, 2 s runs
#   report_campaign_failed_points.json       xfs mount fails at every point, one fio killed
#   report_campaign_single_point.json        one point, no sweep
#
# The default run model: one clean repetition and one evidence run (every
# collector) per sweep point. The evidence runs' fio.json is dropped to keep
# the files small (the report's latency distributions come from clean runs).
# Run from the repository root, under the machine lock:
#   flock -x /work/machine.lock sh tests/data/report_capture.sh
set -eu
FSLAB=${FSLAB:-.venv/bin/fslab}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=tests/data
WORK=$(mktemp -d /tmp/fslab-report-capture-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

capture() {  # capture NAME fslab-run-arguments...
    name=$1
    shift
    "$FSLAB" run "$@" --db "$WORK/$name.db"
    "$FSLAB" export 1 --db "$WORK/$name.db" > "$WORK/$name.json"
    "$PYTHON" tests/data/drop_evidence_fio_json.py "$WORK/$name.json" \
        "$OUT/report_campaign_$name.json"
}

cat > "$WORK/single.toml" <<'EOF'
# One point, no sweep: the smallest campaign a report must handle.
name = "report-single-point"
description = "one fio fsync point on ext4, no sweep"

[target]
kind = "ram"
size = "1GiB"

[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]

[workload]
kind = "fio"
command_line = "fio --name=w --rw=randwrite --ioengine=sync --bs=16k --filesize=4m --fsync=1 --thread --time_based --numjobs=8"

[run]
repeat = 1
runtime = "2s"
ramp = "1s"
EOF

cat > "$WORK/failed.toml" <<'EOF'
# A campaign with failed points: the xfs configuration carries an ext4-only
# mount option (its mount fails at every point) and one ext4 point has its
# fio killed by fslab's fault injection (FSLAB_FAULTS).
name = "report-failed-points"
description = "fsync storm over 4..64 threads; xfs mount fails, one fio killed"

[target]
kind = "ram"
size = "2GiB"

[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]

[[filesystems]]
label = "xfs-badopt"
type = "xfs"
mount_options = ["data=ordered"]

[workload]
kind = "fio"
command_line = "fio --name=w --rw=randwrite --ioengine=sync --bs=16k --filesize=4m --fsync=1 --thread --time_based"

[sweep]
numjobs = [4, 16, 64]

[run]
repeat = 1
runtime = "2s"
ramp = "1s"
EOF

capture fsync_quick ext4-fsync-storm --quick --set run.runtime=2s
capture cached_write_quick cached-write-ext4-vs-xfs --quick --set run.runtime=2s
capture single_point "$WORK/single.toml"
# --no-preflight: the preflight would refuse the bad mount option before the run
export FSLAB_FAULTS='{"stage": "workload", "action": "sigkill-child:fio", "point_seq": 2, "delay_s": 1.5}'
capture failed_points "$WORK/failed.toml" --no-preflight
unset FSLAB_FAULTS
