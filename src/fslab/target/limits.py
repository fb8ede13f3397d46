"""Device limits: cap a scratch device's IOPS and bandwidth with the blkio throttle.

The first seed report's volume was provisioned at 64000 IOPS; a RAM-backed
loop device has no such ceiling. `target.limits` puts one back with the
cgroup-v1 blkio throttle, written at the ROOT blkio cgroup
(`<root>/blkio.throttle.{read,write}_{iops,bps}_device`, lines "MAJ:MIN
value"; the root is where the blkio hierarchy is mounted, usually
/sys/fs/cgroup/blkio). At the root, every bio to the device is throttled,
including writeback issued by the kernel's flusher threads, which a child
cgroup holding only the workload would miss. Writing 0 clears a limit;
`device_limits` always clears what it set, on success, failure and Ctrl-C.

A qemu guest applies them the same way: its agent mounts the blkio hierarchy
(`mount_blkio`) and the runner's point code throttles the guest's loop device.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fslab.base.errors import FslabError
from fslab.base.format import format_bytes_per_s, format_iops
from fslab.base.proc import run
from fslab.target.guard import block_major_minor, read_mountinfo
from fslab.target.loop import deferred_interrupts

BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")  # where systemd and most distributions mount it
GUEST_BLKIO_ROOT = Path("/run/fslab-blkio")  # a guest's: its /sys/fs/cgroup is cgroup2
KINDS = ("read_iops", "write_iops", "read_bps", "write_bps")


@dataclass(frozen=True)
class DeviceLimits:
    """Per-direction caps; None leaves that direction unlimited."""

    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None

    def items(self) -> list[tuple[str, int]]:
        return [(kind, v) for kind in KINDS if (v := getattr(self, kind)) is not None]

    def describe(self) -> str:
        """'write 2000 IOPS, write 262.1MB/s' (empty when nothing is limited)."""
        parts = []
        for kind, value in self.items():
            direction, unit = kind.split("_")
            amount = format_iops(value) if unit == "iops" else format_bytes_per_s(value)
            parts.append(f"{direction} {amount}")
        return ", ".join(parts)


def mounted_blkio() -> Path | None:
    """Where the cgroup-v1 blkio hierarchy is mounted, or None."""
    for entry in read_mountinfo():
        if entry.fs_type == "cgroup" and "blkio" in entry.super_options.split(","):
            return Path(entry.mount_point)
    return None


def blkio_root() -> Path:
    """The blkio hierarchy's root: where it is mounted, else BLKIO_ROOT (for the message)."""
    return mounted_blkio() or BLKIO_ROOT


def mount_blkio(where: Path = GUEST_BLKIO_ROOT) -> str | None:
    """Mount the cgroup-v1 blkio hierarchy at `where` unless one is mounted; why not, or None.

    For a guest without systemd: v1 blkio mounts beside cgroup2 as long as no
    cgroup2 group has the io controller enabled. Left mounted: the guest powers off.
    """
    if mounted_blkio() is not None:
        return None
    where.mkdir(parents=True, exist_ok=True)
    record = run(["mount", "-t", "cgroup", "-o", "blkio", "blkio", str(where)], check=False)
    if record.returncode != 0:
        return f"mount -t cgroup -o blkio: exit {record.returncode}: {record.stderr.strip()}"
    return None


def throttle_file(kind: str, root: Path) -> Path:
    return root / f"blkio.throttle.{kind}_device"


def unavailable_reason(limits: DeviceLimits, root: Path | None = None) -> str | None:
    """Why the limits cannot be applied on this host, or None when they can."""
    root = blkio_root() if root is None else root
    for kind, _ in limits.items():
        path = throttle_file(kind, root)
        if not path.exists():
            return (
                f"target.limits needs the cgroup-v1 blkio throttle, and {path} does not "
                "exist (mount it: mount -t cgroup -o blkio blkio /sys/fs/cgroup/blkio; "
                "a kernel needs CONFIG_BLK_DEV_THROTTLING)"
            )
        if not os.access(path, os.W_OK):
            return f"target.limits: {path} is not writable (run as root)"
    return None


def device_number(device: str) -> str:
    """'MAJ:MIN' of a block device node; only a block device can be throttled."""
    devno = block_major_minor(device)
    if devno is None:
        raise FslabError(f"target.limits: {device} is not a block device")
    return devno


def _write(kind: str, devno: str, value: int, root: Path) -> None:
    try:
        throttle_file(kind, root).write_text(f"{devno} {value}\n")
    except OSError as exc:
        raise FslabError(f"target.limits.{kind}: cannot set {devno} {value}: {exc}") from None


@contextlib.contextmanager
def device_limits(
    limits: DeviceLimits | None, device: str, *, root: Path | None = None
) -> Iterator[dict[str, object]]:
    """Throttle `device` while the block runs; yields the facts to record with the point.

    Limits set before a failure are cleared too; a limit that cannot be
    cleared is an error after the block (the device would stay throttled).
    """
    if limits is None or not limits.items():
        yield {}
        return
    root = blkio_root() if root is None else root
    reason = unavailable_reason(limits, root)
    if reason is not None:
        raise FslabError(reason)
    devno = device_number(device)
    applied: list[str] = []
    try:
        for kind, value in limits.items():
            _write(kind, devno, value, root)
            applied.append(kind)
        yield {
            "device": device,
            "devno": devno,
            **{kind: value for kind, value in limits.items()},
            "how": f"blkio throttle at the root cgroup ({root})",
            "blkio_root": str(root),
        }
    finally:
        failures = []
        with deferred_interrupts():  # a second Ctrl-C must not leave the device throttled
            for kind in applied:
                try:
                    _write(kind, devno, 0, root)
                except FslabError as exc:
                    failures.append(str(exc))
        if failures:
            raise FslabError("device limit not cleared: " + "; ".join(failures))


def current_limits(device: str, root: Path | None = None) -> dict[str, int]:
    """The throttle values in force for `device` (for checks and leftovers)."""
    root = blkio_root() if root is None else root
    devno = device_number(device)
    found: dict[str, int] = {}
    for kind in KINDS:
        path = throttle_file(kind, root)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            number, _, value = line.partition(" ")
            if number == devno and value.strip().isdigit():
                found[kind] = int(value)
    return found
