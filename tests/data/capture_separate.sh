#!/bin/sh
# Records tests/data/campaign_fsync_separate.json, read by tests/test_evidence.py
# (root, under the machine lock: flock -x /work/machine.lock sh tests/data/capture_separate.sh).
#
# ext4-fsync-storm --quick in fslab's default run model: 3 clean repetitions and
# one evidence run (every collector) per sweep point, 3 s after a 1 s ramp.
# To keep the file small, fio's JSON is dropped from the clean repetitions
# other than the first of each point (the report's latency CDFs read that one).
set -eu
FSLAB=${FSLAB:-.venv/bin/fslab}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=tests/data/campaign_fsync_separate.json
WORK=$(mktemp -d /tmp/fslab-separate-capture-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$FSLAB" run ext4-fsync-storm --quick --set run.repeat=3 --set run.runtime=3s \
    --set run.ramp=1s --db "$WORK/r.db"
"$FSLAB" export 1 --db "$WORK/r.db" > "$WORK/export.json"
"$PYTHON" - "$WORK/export.json" "$OUT" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
for point in data["points"]:
    if point["role"] == "clean" and point["repeat"] > 0:
        point["artifacts"].pop("fio.json", None)
data["captured"] = (
    "fslab run ext4-fsync-storm --quick --set run.repeat=3 --set run.runtime=3s "
    "--set run.ramp=1s; fio.json kept for the first clean repetition of each point "
    "and the evidence runs (tests/data/capture_separate.sh)"
)
json.dump(data, open(sys.argv[2], "w"), indent=1)
PY
