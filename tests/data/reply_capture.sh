#!/bin/sh
# Records the campaigns tests/test_reply.py drafts replies from: each founding
# report reproduced by `fslab reproduce REPORT --run --quick`, every collector on,
# exported trimmed for git by corpus/trim.py.
#
#   reply_campaign_fsync_storm.json    ext4-fsync-storm.txt, on this host (--host;
#                                      about 8 minutes)
#   reply_campaign_cached_write.json   ext4-cached-write-1728.txt, in a qemu guest
#                                      with possible_cpus 1728 (6.1 cached; about
#                                      10 minutes under TCG)
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

capture() {  # capture NAME REPORT [FLAGS]
    start=$(date +%s)
    name=$1 report=$2
    shift 2
    "$FSLAB" reproduce "$OUT/reports/$report" --run --quick "$@" --db "$WORK/$name.db"
    set -- "$name"
    "$PYTHON" "$OUT/corpus/trim.py" "$WORK/$1.db" > "$OUT/reply_campaign_$1.json"
    echo "$1: $(( $(date +%s) - start )) s, $(du -k "$OUT/reply_campaign_$1.json" | cut -f1) KiB"
}

[ $# -gt 0 ] || set -- fsync_storm cached_write
for case in "$@"; do
    case $case in
        fsync_storm) capture fsync_storm ext4-fsync-storm.txt --host ;;
        cached_write) capture cached_write ext4-cached-write-1728.txt ;;
        *) echo "unknown case $case (fsync_storm, cached_write)" >&2; exit 2 ;;
    esac
done
