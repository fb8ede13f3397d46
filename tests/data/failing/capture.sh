#!/bin/sh
# Record failing-config.json: spec.toml run without preflight (which would refuse
# the 8 MiB log before anything ran), exported trimmed as the corpus cases are.
# xfsprogs 6.1, 2026-12-04 18:38 UTC, this 2-CPU VM; the export checked in was
# recorded from this spec under the name corpus-xfs-log.
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
db=$(mktemp -d)/failing.db
"$top/.venv/bin/fslab" run "$here/spec.toml" --db "$db" --no-preflight || true
"$top/.venv/bin/python" "$top/tests/data/corpus/trim.py" "$db" > "$here/failing-config.json"
