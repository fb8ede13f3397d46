"""Pre-fill a fresh filesystem so a workload runs on an aged, fuller one.

Free space changes allocator behaviour (ext4 group search, XFS AG choice), so
experiments sweep it. Filling uses fallocate: blocks are reserved without
writing data, so tens of GiB take seconds.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass

from fslab.base.errors import FslabError, UsageError
from fslab.base.format import format_bytes

FILL_PREFIX = "fslab-fill-"
CHUNK_BYTES = 1 << 30


@dataclass
class FillResult:
    bytes_filled: int
    free_bytes_before: int
    free_bytes_after: int
    seconds: float


def free_bytes(mountpoint: str) -> int:
    """Free bytes as root sees them (f_bfree: includes ext4's reserved blocks)."""
    st = os.statvfs(mountpoint)
    return st.f_bfree * st.f_frsize


def total_bytes(mountpoint: str) -> int:
    st = os.statvfs(mountpoint)
    return st.f_blocks * st.f_frsize


def target_free_bytes(
    total_bytes: int, *, percent: float | None, leave_free_bytes: int | None
) -> int:
    """How many bytes should remain free once the fill is done."""
    if (percent is None) == (leave_free_bytes is None):
        raise UsageError("fill needs exactly one of percent or leave_free_bytes")
    if percent is not None:
        if not 0 <= percent < 100:
            raise UsageError(f"fill percent must be in [0, 100), got {percent}")
        return total_bytes - int(total_bytes * percent / 100)
    assert leave_free_bytes is not None
    if leave_free_bytes < 0:
        raise UsageError(f"leave_free_bytes must not be negative, got {leave_free_bytes}")
    return leave_free_bytes


def _next_fill_index(mountpoint: str) -> int:
    taken = [
        int(name.removeprefix(FILL_PREFIX))
        for name in os.listdir(mountpoint)
        if name.startswith(FILL_PREFIX) and name.removeprefix(FILL_PREFIX).isdigit()
    ]
    return max(taken, default=-1) + 1


def _allocate(path: str, size_bytes: int) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.posix_fallocate(fd, 0, size_bytes)
    except OSError as err:
        if err.errno == errno.ENOSPC:
            raise FslabError(
                f"filesystem full while pre-filling {path} with {format_bytes(size_bytes)}; "
                "ask for a lower fill percent or more leave_free_bytes"
            ) from err
        if err.errno in (errno.EOPNOTSUPP, errno.EINVAL):
            raise FslabError(f"this filesystem does not support fallocate ({path})") from err
        raise
    finally:
        os.close(fd)


def fill_filesystem(
    mountpoint: str, *, percent: float | None = None, leave_free_bytes: int | None = None
) -> FillResult:
    """Allocate fslab-fill-N files until `percent` of the size is used, or only
    `leave_free_bytes` remain free. Partial files stay on ENOSPC: the
    filesystem is thrown away after the point anyway."""
    start = time.monotonic()
    st = os.statvfs(mountpoint)
    block_bytes = st.f_frsize
    goal_free = target_free_bytes(
        st.f_blocks * st.f_frsize, percent=percent, leave_free_bytes=leave_free_bytes
    )
    before = free_bytes(mountpoint)
    index = _next_fill_index(mountpoint)
    current = before
    # Free space is re-read after every file, so metadata the filesystem spends
    # on the fill itself (extent trees, bitmaps) is accounted for.
    while current - goal_free >= block_bytes:
        want = min(CHUNK_BYTES, current - goal_free)
        want -= want % block_bytes
        _allocate(os.path.join(mountpoint, f"{FILL_PREFIX}{index}"), want)
        index += 1
        now = free_bytes(mountpoint)
        if now >= current:
            os.sync()  # btrfs counts fallocated extents only once a transaction commits
            now = free_bytes(mountpoint)
        if now >= current:
            break  # still no progress: stop rather than spin
        current = now
    return FillResult(
        bytes_filled=max(0, before - current),
        free_bytes_before=before,
        free_bytes_after=current,
        seconds=time.monotonic() - start,
    )
