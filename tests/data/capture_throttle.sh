#!/bin/bash
# Capture the blkio throttle's counters for the sysstat parser tests: a loop
# device on a RAM-backed image, capped at 1500 write IOPS at the blkio root,
# 200 buffered 16 KiB writes and an fsync, then the throttle's counter files
# and the device's diskstats line, before and after. Everything it sets up is
# torn down on exit.
#
#   sudo tests/data/capture_throttle.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT=/sys/fs/cgroup/blkio
IMG=$(mktemp /dev/shm/fslab-throttle.XXXXXX)
MNT=$(mktemp -d)
DEV=""
cleanup() {
	mountpoint -q "$MNT" && umount "$MNT"
	if [ -n "$DEV" ]; then
		echo "$(cat /sys/class/block/${DEV#/dev/}/dev) 0" > $ROOT/blkio.throttle.write_iops_device || true
		losetup -d "$DEV"
	fi
	rm -f "$IMG"; rmdir "$MNT"
}
trap cleanup EXIT INT TERM
truncate -s 1G "$IMG"
DEV=$(losetup --find --show "$IMG")
NAME=${DEV#/dev/}
DEVNO=$(cat /sys/class/block/$NAME/dev)
mkfs.ext4 -q "$DEV"
mount "$DEV" "$MNT"
echo "$DEVNO 1500" > $ROOT/blkio.throttle.write_iops_device
snap() {
	echo "# device $DEVNO"
	cat $ROOT/blkio.throttle.io_serviced > "$HERE/collect_throttle_io_serviced.$1"
	cat $ROOT/blkio.throttle.io_service_bytes > "$HERE/collect_throttle_io_service_bytes.$1"
	cat /sys/block/$NAME/stat > "$HERE/collect_throttle_block_stat.$1"
}
sync
snap before
dd if=/dev/zero of="$MNT/f" bs=16k count=200 conv=fsync status=none
snap after
echo "$DEVNO" > "$HERE/collect_throttle_devno.txt"
echo "captured for $DEVNO"
