"""The device guard: refuse a scratch target before anything is written to it.

fslab formats whatever it is pointed at, so every device passes `check_device`
first. The guard only reads (sysfs, procfs, a read-only exclusive open, and
`wipefs` in list mode, which opens the device read-only); it never opens a
device for writing. Each refusal
names a stable rule id and says how to proceed deliberately.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.base.errors import GuardRefusal
from fslab.base.proc import run

SYSFS_DEV_BLOCK = Path("/sys/dev/block")
MOUNTINFO = Path("/proc/self/mountinfo")
SWAPS = Path("/proc/swaps")
_DELETED_SUFFIX = " (deleted)"
TOOL_TIMEOUT_S = 60.0  # read-only probes answer in milliseconds; a hang means a sick device


@dataclass(frozen=True)
class DeviceIdentity:
    """What the guard saw of an accepted device, stored with every point."""

    path: str  # as named by the user
    resolved_path: str  # after symlinks (/dev/disk/by-id/... -> /dev/sdb)
    major_minor: str  # "7:3"
    size_bytes: int
    model: str | None  # from /sys/block/X/device/model where present
    serial: str | None


@dataclass(frozen=True)
class MountEntry:
    """One line of /proc/self/mountinfo."""

    major_minor: str
    mount_point: str
    per_mount_options: str
    fs_type: str
    source: str
    super_options: str


# --- procfs parsing -----------------------------------------------------------


def unescape_octal(text: str) -> str:
    r"""Undo the kernel's octal escapes in mount tables ("\040" is a space)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        chunk = text[i + 1 : i + 4]
        if text[i] == "\\" and len(chunk) == 3 and all(c in "01234567" for c in chunk):
            out.append(chr(int(chunk, 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Parse mountinfo; optional fields end at the lone "-" separator."""
    entries = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        tail = fields[sep + 1 :]
        entries.append(
            MountEntry(
                major_minor=fields[2],
                mount_point=unescape_octal(fields[4]),
                per_mount_options=fields[5],
                fs_type=tail[0] if tail else "",
                source=unescape_octal(tail[1]) if len(tail) > 1 else "",
                super_options=tail[2] if len(tail) > 2 else "",
            )
        )
    return entries


def read_mountinfo() -> list[MountEntry]:
    return parse_mountinfo(MOUNTINFO.read_text())


def parse_swaps(text: str) -> list[str]:
    """Paths of active swap areas (devices or files) from /proc/swaps."""
    lines = text.splitlines()[1:]
    return [unescape_octal(line.split()[0]) for line in lines if line.strip()]


# --- sysfs helpers (devices named by "major:minor") ---------------------------


def rdev_major_minor(st: os.stat_result) -> str:
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def dev_major_minor(st: os.stat_result) -> str:
    """major:minor of the filesystem holding a file (st_dev, not st_rdev)."""
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def block_major_minor(path: str) -> str | None:
    """major:minor of a block device node, None if path is no block device."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return rdev_major_minor(st) if stat.S_ISBLK(st.st_mode) else None


def sysfs_dir(mm: str) -> Path:
    return (SYSFS_DEV_BLOCK / mm).resolve()


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _dev_of_dir(block_dir: Path) -> str | None:
    return _read(block_dir / "dev")


def is_partition(mm: str) -> bool:
    return (sysfs_dir(mm) / "partition").exists()


def parent_disk(mm: str) -> str | None:
    """The whole disk a partition belongs to (None for a whole disk)."""
    if not is_partition(mm):
        return None
    return _dev_of_dir(sysfs_dir(mm).parent)


def partitions(mm: str) -> list[str]:
    """major:minor of each partition of a whole disk."""
    base = sysfs_dir(mm)
    found = []
    for child in sorted(base.iterdir()) if base.is_dir() else []:
        if (child / "partition").exists():
            dev = _dev_of_dir(child)
            if dev:
                found.append(dev)
    return found


def _linked_devices(mm: str, kind: str) -> list[str]:
    """Devices listed in sysfs holders/ or slaves/ of a block device."""
    links = sysfs_dir(mm) / kind
    if not links.is_dir():
        return []
    return [d for d in (_dev_of_dir(p.resolve()) for p in sorted(links.iterdir())) if d]


def device_name(mm: str) -> str:
    """Kernel name (loop3, sdb1) of a block device."""
    return sysfs_dir(mm).name


def loop_backing_file(mm: str) -> str | None:
    """Backing file of a loop device, without the " (deleted)" suffix."""
    text = _read(sysfs_dir(mm) / "loop" / "backing_file")
    if not text:
        return None
    return text.removesuffix(_DELETED_SUFFIX)


def descendants(mm: str) -> set[str]:
    """Everything stacked on a device: partitions and holders, recursively."""
    seen: set[str] = set()
    todo = [mm]
    while todo:
        cur = todo.pop()
        for child in partitions(cur) + _linked_devices(cur, "holders"):
            if child not in seen and child != mm:
                seen.add(child)
                todo.append(child)
    return seen


def file_host_device(path: str, mounts: Sequence[MountEntry]) -> str | None:
    """The block device holding the filesystem a file lives on, if any.

    Filesystems like btrfs report an anonymous st_dev (major 0), so the mount
    table's source is used to find the real device.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    mm = dev_major_minor(st)
    if (SYSFS_DEV_BLOCK / mm).exists():
        return mm
    for entry in mounts:
        if entry.major_minor == mm and entry.source.startswith("/dev/"):
            source_mm = block_major_minor(entry.source)
            if source_mm:
                return source_mm
    return None


def ancestors(mm: str, mounts: Sequence[MountEntry]) -> set[str]:
    """Everything a device depends on: its disk, its slaves, a loop's backing store."""
    seen: set[str] = set()
    todo = [mm]
    while todo:
        cur = todo.pop()
        below = _linked_devices(cur, "slaves")
        disk = parent_disk(cur)
        if disk:
            below.append(disk)
        backing = loop_backing_file(cur)
        if backing:
            host = file_host_device(backing, mounts)
            if host:
                below.append(host)
        for dev in below:
            if dev not in seen and dev != mm:
                seen.add(dev)
                todo.append(dev)
    return seen


# --- who uses what ------------------------------------------------------------


def busy_devices(mounts: Sequence[MountEntry], swaps: Iterable[str]) -> dict[str, str]:
    """major:minor -> what uses it ("mounted on /x", "swap"), for every busy device."""
    busy: dict[str, str] = {}
    for entry in mounts:
        where = f"mounted on {entry.mount_point}"
        busy.setdefault(entry.major_minor, where)
        if entry.source.startswith("/dev/"):
            source_mm = block_major_minor(entry.source)
            if source_mm:
                busy.setdefault(source_mm, where)
    for swap in swaps:
        swap_mm = block_major_minor(swap)
        if swap_mm:
            busy.setdefault(swap_mm, "in use as swap")
    return busy


def root_devices(mounts: Sequence[MountEntry]) -> set[str]:
    """The devices backing "/", and everything they sit on (disk, slaves)."""
    direct: set[str] = set()
    for entry in mounts:
        if entry.mount_point != "/":
            continue
        if (SYSFS_DEV_BLOCK / entry.major_minor).exists():
            direct.add(entry.major_minor)
        source_mm = block_major_minor(entry.source) if entry.source.startswith("/") else None
        if source_mm:
            direct.add(source_mm)
    result = set(direct)
    for mm in direct:
        result |= ancestors(mm, mounts)
    return result


# --- signatures ---------------------------------------------------------------


def parse_wipefs_json(text: str) -> list[str]:
    """Signature types ("ext4", "dos", ...) from `wipefs --json` list output."""
    if not text.strip():
        return []
    data = json.loads(text)
    return [str(sig.get("type")) for sig in data.get("signatures", [])]


def find_signatures(device: str) -> list[str]:
    """Signatures on a device; wipefs without --all only lists (opens read-only)."""
    record = run(["wipefs", "--no-act", "--json", device], timeout_s=TOOL_TIMEOUT_S)
    return parse_wipefs_json(record.stdout)


# --- identity -----------------------------------------------------------------


def _identity(path: str, resolved: str, mm: str) -> DeviceIdentity:
    sectors = _read(sysfs_dir(mm) / "size") or "0"
    disk = parent_disk(mm) or mm
    disk_dir = sysfs_dir(disk)
    model = _read(disk_dir / "device" / "model")
    serial = _read(disk_dir / "device" / "serial") or _read(disk_dir / "serial")
    return DeviceIdentity(
        path=path,
        resolved_path=resolved,
        major_minor=mm,
        size_bytes=int(sectors) * 512,
        model=model or None,
        serial=serial or None,
    )


# --- the rules ----------------------------------------------------------------


def _refuse_unless_allowed(path: str, resolved: str, allowed: Sequence[str]) -> None:
    allowed_resolved = {os.path.realpath(a) for a in allowed}
    if resolved not in allowed_resolved:
        shown = f"{path} (-> {resolved})" if resolved != path else path
        raise GuardRefusal(
            "not-allowed",
            f"{shown} is not among the allowed devices; fslab only formats devices "
            "named explicitly: add it to --allow-device (or allowed_devices in the spec) "
            "if it really is a scratch device",
        )


def _block_device_of(path: str, resolved: str) -> str:
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        raise GuardRefusal(
            "not-block-device", f"{path} does not exist; name an existing block device"
        ) from None
    if not stat.S_ISBLK(st.st_mode):
        raise GuardRefusal(
            "not-block-device",
            f"{path} is not a block device; to run on a file, use a loop image "
            "(target kind 'ram' or 'file') instead of naming it as a device",
        )
    return rdev_major_minor(st)


def _refuse_root(path: str, mm: str, roots: set[str]) -> None:
    if mm in roots:
        raise GuardRefusal(
            "root-device",
            f"{path} ({mm}) backs the root filesystem '/'; fslab never formats it. "
            "Use a spare disk or a loop image",
        )


def _refuse_in_use(path: str, mm: str, busy: dict[str, str]) -> None:
    if mm in busy:
        raise GuardRefusal(
            "mounted",
            f"{path} is {busy[mm]}; unmount it (or swapoff) yourself first "
            "if it really is a scratch device",
        )
    for below in sorted(descendants(mm)):
        if below in busy:
            raise GuardRefusal(
                "holds-mounted",
                f"{path} holds /dev/{device_name(below)}, which is {busy[below]}; "
                "unmount everything on it first if it really is a scratch device",
            )


def _refuse_busy_disk(path: str, mm: str, busy: dict[str, str], roots: set[str]) -> None:
    disk = parent_disk(mm)
    if disk is None:
        return
    disk_name = device_name(disk)
    if disk in roots:
        raise GuardRefusal(
            "partition-of-busy-disk",
            f"{path} is a partition of /dev/{disk_name}, the disk holding '/'; "
            "use a partition of a spare disk",
        )
    for other in sorted({disk} | descendants(disk)):
        if other in busy:
            raise GuardRefusal(
                "partition-of-busy-disk",
                f"{path} is a partition of /dev/{disk_name}, and /dev/{device_name(other)} "
                f"on that disk is {busy[other]}; unmount it first or use a spare disk",
            )


def _refuse_claimed(path: str, resolved: str) -> None:
    """Catch what this mount namespace cannot see: O_EXCL (read-only) fails with
    EBUSY while the kernel holds the device, e.g. mounted in another namespace."""
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.EBUSY:
            raise GuardRefusal(
                "mounted",
                f"{path} is in use by the kernel (held exclusively: mounted in another mount "
                "namespace, a RAID/LVM/dm member, or opened exclusively by a program); "
                "release it first if it really is a scratch device",
            ) from None
        return  # cannot tell (e.g. EPERM in a sandbox): the other rules still stand
    os.close(fd)


def _refuse_backing_on_target(
    path: str, mm: str, about_to_format: Sequence[str], mounts: Sequence[MountEntry]
) -> None:
    if loop_backing_file(mm) is None or not about_to_format:
        return
    doomed = {}
    for other in about_to_format:
        other_mm = block_major_minor(os.path.realpath(other))
        if other_mm and other_mm != mm:
            doomed[other_mm] = other
    for below in sorted(ancestors(mm, mounts)):
        if below in doomed:
            raise GuardRefusal(
                "backing-file-on-target",
                f"{path} is a loop device whose backing file {loop_backing_file(mm)} "
                f"lives on {doomed[below]}, which is about to be formatted; "
                "put the image on a filesystem fslab does not format",
            )


def _refuse_signature(path: str, resolved: str, force: bool) -> None:
    if force:
        return
    found = find_signatures(resolved)
    if found:
        kinds = ", ".join(dict.fromkeys(found))
        raise GuardRefusal(
            "signature",
            f"{path} carries existing signatures ({kinds}); "
            f"pass --force to overwrite the existing {kinds} signature",
        )


def check_device(
    path: str,
    *,
    allowed: Sequence[str],
    force: bool = False,
    about_to_format: Sequence[str] = (),
) -> DeviceIdentity:
    """Return the device's identity, or raise GuardRefusal; never writes anything.

    Rules run cheapest and most fundamental first: not-block-device (missing),
    not-allowed, not-block-device, root-device, mounted, holds-mounted,
    partition-of-busy-disk, mounted (kernel's exclusive claim),
    backing-file-on-target, signature.
    """
    resolved = os.path.realpath(path)
    if not os.path.lexists(resolved):
        raise GuardRefusal(
            "not-block-device", f"{path} does not exist; name an existing block device"
        )
    _refuse_unless_allowed(path, resolved, allowed)
    mm = _block_device_of(path, resolved)
    mounts = read_mountinfo()
    swaps = parse_swaps(SWAPS.read_text()) if SWAPS.exists() else []
    busy = busy_devices(mounts, swaps)
    roots = root_devices(mounts)
    _refuse_root(path, mm, roots)
    _refuse_in_use(path, mm, busy)
    _refuse_busy_disk(path, mm, busy, roots)
    _refuse_claimed(path, resolved)
    _refuse_backing_on_target(path, mm, about_to_format, mounts)
    _refuse_signature(path, resolved, force)
    return _identity(path, resolved, mm)
