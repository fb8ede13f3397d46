#!/usr/bin/env bash
# The first `make demo` of a fresh machine, kept as a cold-start case.
#
# Run it on a machine that has run nothing of fslab's yet (a new VM, a fresh
# clone), before anything else: its first runs are the ones that ran slow
# (memory the hypervisor has not backed yet, caches empty). It runs the README's
# `make demo` exactly as a new user would, then exports the demo's campaign and
# keeps the demo's output beside it:
#
#   tests/data/coldstart/capture.sh            # writes coldstart-<date>-<host>.{json,txt}
#
# tests/test_coldstart.py replays every case here: the falloff must be found and
# the journal's reserved credits named first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
stamp="coldstart-$(date -u +%Y%m%d-%H%M)-$(hostname -s)"
db=$(mktemp -d)/results.db
cd "$top"
{ uptime; date -u; } > "$here/$stamp.txt"
FSLAB_DB="$db" make demo 2>&1 | sed -n '/fslab doctor/,$p' >> "$here/$stamp.txt"
id=$(FSLAB_DB="$db" .venv/bin/fslab show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["campaign"]["id"])')
FSLAB_DB="$db" .venv/bin/fslab export "$id" > "$here/$stamp.json"
echo "$here/$stamp.json"
