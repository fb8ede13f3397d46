#!/bin/sh
# Records the campaigns tests/test_reply.py drafts replies from: each founding
# report reproduced by `fslab reproduce REPORT --run --quick` on this machine,
# every collector on, exported trimmed for git by corpus/trim.py.
#
#   reply_campaign_fsync_storm.json    ext4-fsync-storm.txt    (about 8 minutes)
#   reply_campaign_cached_write.json   ext4-cached-write-1728.txt (about 2 minutes)
#
# It measures: run it as root under the exclusive machine lock, one case per call,
# from the repository root:
#   flock -x /work/machine.lock sh tests/data/reply_capture.sh fsync_storm
#   flock -x /work/machine.lock sh tests/data/reply_capture.sh cached_write
set -eu
FSLAB=${FSLAB:-.venv/bin/fslab}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=tests/data
WORK=$(mktemp -d /tmp/fslab-reply-capture-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

capture() {  # capture NAME REPORT
    start=$(date +%s)
    "$FSLAB" reproduce "$OUT/reports/$2" --run --quick --db "$WORK/$1.db"
    "$PYTHON" "$OUT/corpus/trim.py" "$WORK/$1.db" > "$OUT/reply_campaign_$1.json"
    echo "$1: $(( $(date +%s) - start )) s, $(du -k "$OUT/reply_campaign_$1.json" | cut -f1) KiB"
}

[ $# -gt 0 ] || set -- fsync_storm cached_write
for case in "$@"; do
    case $case in
        fsync_storm) capture fsync_storm ext4-fsync-storm.txt ;;
        cached_write) capture cached_write ext4-cached-write-1728.txt ;;
        *) echo "unknown case $case (fsync_storm, cached_write)" >&2; exit 2 ;;
    esac
done
