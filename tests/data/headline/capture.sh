#!/usr/bin/env bash
# A reproduced report that sweeps fio's block size (1m against 1024m direct writes):
# its spec run --quick with the planned runs only, exported for tests/test_headline.py,
# which asserts the campaign is judged in bytes per second, not in IOPS.
#
#   tests/data/headline/capture.sh      # writes bs-sweep.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$top"
.venv/bin/fslab reproduce tests/data/reports/ext4-dd-vs-fio-direct-seqwrite-1m-1024m-loops.txt \
    --host -o "$work/spec.toml"
.venv/bin/fslab run "$work/spec.toml" --quick --budget 0 --db "$work/results.db"
id=$(.venv/bin/fslab show --db "$work/results.db" --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')
.venv/bin/fslab export "$id" --db "$work/results.db" > "$here/bs-sweep.json"
echo "$here/bs-sweep.json"
