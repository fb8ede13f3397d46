#!/usr/bin/env bash
# A report's spec, as `fslab reproduce` writes it, run --quick with the planned runs only
# (--budget 0) and exported: a recorded campaign for the tests that replay one.
#
#   tests/data/capture_reproduced.sh REPORT OUT.json [fslab reproduce options...]
set -euo pipefail
report=$1 out=$2
shift 2
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$top"
.venv/bin/fslab reproduce "$report" "$@" -o "$work/spec.toml"
.venv/bin/fslab run "$work/spec.toml" --quick --budget 0 --db "$work/results.db"
id=$(.venv/bin/fslab show --db "$work/results.db" --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')
.venv/bin/fslab export "$id" --db "$work/results.db" > "$out"
echo "$out"
