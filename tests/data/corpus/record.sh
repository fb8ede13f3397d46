#!/bin/bash
# Record the diagnosis validation corpus: real fslab campaigns on this machine,
# one JSON export per case (see manifest.json for each case's true mechanism).
#
#   sudo tests/data/corpus/record.sh [CASE ...]     (default: every case)
#
# Each case is `fslab run specs/CASE.toml`, then trim.py exports it with
# fslab's own export and drops what the diagnosis never reads, so the files
# stay small for git. Run it under the exclusive machine lock, one case per call, so the lock
# is never held for long:
#
#   flock -x /work/machine.lock tests/data/corpus/record.sh journal
#
# The dirty case sets vm.dirty_bytes / vm.dirty_background_bytes small for
# its run and restores the previous values afterwards, whatever happens.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
FSLAB="${FSLAB:-$ROOT/.venv/bin/fslab}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
DB="$(mktemp -d /tmp/fslab-corpus.XXXXXX)/corpus.db"
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(journal device dirty lock flat throttled founding-limited btrfs lock-xfs-btrfs btrfs-reserve firstwrite logforce wbt recentdel lineardir btrfs-create)

restore_dirty() {
	if [ -n "${SAVED_DIRTY_BYTES:-}" ]; then
		# setting a *_ratio back re-enables it (the kernel zeroes the *_bytes twin)
		if [ "$SAVED_DIRTY_BYTES" = 0 ]; then
			sysctl -q -w vm.dirty_ratio="$SAVED_DIRTY_RATIO"
		else
			sysctl -q -w vm.dirty_bytes="$SAVED_DIRTY_BYTES"
		fi
		if [ "$SAVED_BG_BYTES" = 0 ]; then
			sysctl -q -w vm.dirty_background_ratio="$SAVED_BG_RATIO"
		else
			sysctl -q -w vm.dirty_background_bytes="$SAVED_BG_BYTES"
		fi
		echo "restored vm.dirty_*: $(sysctl -n vm.dirty_bytes vm.dirty_ratio vm.dirty_background_bytes vm.dirty_background_ratio | tr '\n' ' ')"
		SAVED_DIRTY_BYTES=""
	fi
}
trap restore_dirty EXIT INT TERM

for case in "${CASES[@]}"; do
	spec="$HERE/specs/$case.toml"
	[ -f "$spec" ] || { echo "no spec $spec" >&2; exit 2; }
	if [ "$case" = dirty ]; then
		SAVED_DIRTY_BYTES=$(sysctl -n vm.dirty_bytes)
		SAVED_DIRTY_RATIO=$(sysctl -n vm.dirty_ratio)
		SAVED_BG_BYTES=$(sysctl -n vm.dirty_background_bytes)
		SAVED_BG_RATIO=$(sysctl -n vm.dirty_background_ratio)
		sysctl -q -w vm.dirty_bytes=$((32 << 20))
		sysctl -q -w vm.dirty_background_bytes=$((16 << 20))
	fi
	start=$(date +%s)
	"$FSLAB" run "$spec" --db "$DB" --no-preflight
	restore_dirty
	"$PYTHON" "$HERE/trim.py" "$DB" > "$HERE/$case.json"
	echo "$case: $(( $(date +%s) - start )) s, $(du -k "$HERE/$case.json" | cut -f1) KiB"
done
