#!/bin/sh
# Records the guest campaign tests/test_diagnose.py ranks: the cached-write preset's
# guest form (cached-write-ext4-vs-xfs-guest --quick, two repetitions) in qemu guests
# booting Debian's 6.1 with 2 vCPUs and possible_cpus 2 or 1728, every collector on
# in the evidence runs, exported trimmed for git by corpus/trim.py.
#
#   guest_campaign_cached_write_1728.json   (about 15 minutes under TCG here)
#
# It boots guests and measures: run it as root under the exclusive machine lock,
# from the repository root, with the 6.1 kernel cached (`fslab kernels fetch 6.1`):
#   flock -x /work/machine.lock sh tests/data/guest_capture.sh
set -eu
FSLAB=${FSLAB:-.venv/bin/fslab}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=tests/data
WORK=$(mktemp -d /tmp/fslab-guest-capture-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

start=$(date +%s)
"$FSLAB" run cached-write-ext4-vs-xfs-guest --quick --set run.repeat=2 --db "$WORK/g.db"
"$FSLAB" compare 1 --by possible_cpus --db "$WORK/g.db"
"$FSLAB" diagnose --db "$WORK/g.db"
"$PYTHON" "$OUT/corpus/trim.py" "$WORK/g.db" > "$OUT/guest_campaign_cached_write_1728.json"
echo "guest_campaign_cached_write_1728: $(( $(date +%s) - start )) s," \
    "$(du -k "$OUT/guest_campaign_cached_write_1728.json" | cut -f1) KiB"
