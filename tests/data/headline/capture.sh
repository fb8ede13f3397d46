#!/usr/bin/env bash
# A reproduced report that sweeps fio's block size (1m against 1024m direct writes), its
# planned runs only, for tests/test_headline.py: the campaign is judged in bytes per
# second, not in IOPS.
#
#   tests/data/headline/capture.sh      # writes bs-sweep.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/../capture_reproduced.sh" \
    tests/data/reports/ext4-dd-vs-fio-direct-seqwrite-1m-1024m-loops.txt \
    "$here/bs-sweep.json" --host
