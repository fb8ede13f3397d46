# Sourced by tests/data/workloads/*/capture.sh (POSIX sh, root): a scratch
# filesystem on a RAM-backed loop device, released on every exit path.
#
#   . tests/data/workloads/scratch.sh
#   scratch_init            # trap set: EXIT, INT, TERM, HUP all release
#   scratch_up ext4         # sparse image in /dev/shm, losetup, mkfs, mount at $MNT
#   ...                     # run the tool under $MNT
#   scratch_down            # unmount, detach, remove the image (idempotent)
#   record CASE FS CMD...   # run CMD, stdout -> $OUT/CASE.txt, stderr -> $OUT/CASE.stderr.txt,
#                           # one line in $OUT/manifest.tsv (case, fs, exit status, argv)
#
# The image is sparse and lives in tmpfs, so nothing touches a disk; each case
# gets a fresh filesystem so one run's leftovers never shape the next.

IMAGE_SIZE=${IMAGE_SIZE:-1G}
IMG=
LOOP=
MNT=
TOP=

scratch_down() {
    cd /
    if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
        umount "$MNT" || umount -l "$MNT" || echo "scratch: cannot unmount $MNT" >&2
    fi
    if [ -n "$LOOP" ]; then
        losetup -d "$LOOP" || echo "scratch: cannot detach $LOOP" >&2
    fi
    if [ -n "$IMG" ]; then
        rm -f "$IMG"
    fi
    if [ -n "$MNT" ]; then
        rmdir "$MNT" 2>/dev/null || true
    fi
    IMG= LOOP= MNT=
}

scratch_cleanup() {
    status=$?
    trap - EXIT INT TERM HUP
    cd /
    scratch_down
    if [ -n "$TOP" ]; then
        rm -rf "$TOP"
    fi
    exit "$status"
}

scratch_init() {
    trap scratch_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    # short: fs_mark refuses a -d path of 40 bytes or more
    TOP=$(mktemp -d /tmp/fslwl-XXXXXX)
}

scratch_up() {
    fs=$1
    scratch_down
    IMG=$(mktemp /dev/shm/fslab-wl-capture-XXXXXX.img)
    truncate -s "$IMAGE_SIZE" "$IMG"
    LOOP=$(losetup -f --show "$IMG")
    case "$fs" in
        ext4) mkfs.ext4 -q -F "$LOOP" ;;
        xfs) mkfs.xfs -q -f "$LOOP" ;;
        btrfs) mkfs.btrfs -q -f "$LOOP" ;;
        *) echo "scratch: unknown filesystem $fs" >&2; return 2 ;;
    esac
    MNT=$(mktemp -d "$TOP/mXXXX")
    mount "$LOOP" "$MNT"
}

record() {
    name=$1
    fs=$2
    shift 2
    rc=0
    "$@" >"$OUT/$name.txt" 2>"$OUT/$name.stderr.txt" || rc=$?
    if [ ! -s "$OUT/$name.stderr.txt" ]; then
        rm -f "$OUT/$name.stderr.txt"
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$fs" "$rc" "$*" >>"$OUT/manifest.tsv"
    return 0
}

# tool versions and kernel, first lines of the manifest
manifest_start() {
    : >"$OUT/manifest.tsv"
    printf '# captured %s on Linux %s by %s\n' "$(date -u +%Y-%m-%d)" "$(uname -r)" "$0" >>"$OUT/manifest.tsv"
    for pkg in "$@"; do
        printf '# %s %s\n' "$pkg" "$(dpkg-query -W -f '${Version}' "$pkg")" >>"$OUT/manifest.tsv"
    done
    printf '# case\tfs\texit\targv (paths under a private mount dir)\n' >>"$OUT/manifest.tsv"
}
