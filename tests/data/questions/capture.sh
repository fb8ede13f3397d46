#!/usr/bin/env bash
# A reproduced report whose configurations do not fall off: the fast-commit fs_mark
# report, its spec run --quick with the planned runs only (--budget 0), so the question
# "does the report's change move the figure?" is left open for tests/test_questions.py
# to answer with rounds of replayed runs.
#
#   tests/data/questions/capture.sh      # writes fast-commit-fsmark-plan.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$top"
.venv/bin/fslab reproduce tests/data/reports/ext4-fast-commit-fsmark-8-threads.txt \
    -o "$work/spec.toml"
.venv/bin/fslab run "$work/spec.toml" --quick --budget 0 --db "$work/results.db"
id=$(.venv/bin/fslab show --db "$work/results.db" --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')
.venv/bin/fslab export "$id" --db "$work/results.db" > "$here/fast-commit-fsmark-plan.json"
echo "$here/fast-commit-fsmark-plan.json"
