"""A fresh filesystem on a RAM-backed loop device, for tests, benchmarks and captures.

The runner builds its points step by step (it records facts between steps);
everything else that just needs "an ext4 mounted somewhere, released after"
uses this one context manager.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from fslab.target.fs import Mount, make_filesystem
from fslab.target.loop import LoopImage


@contextlib.contextmanager
def scratch_filesystem(
    fs_type: str = "ext4",
    size_bytes: int = 2 * 1024**3,
    *,
    mkfs_options: Sequence[str] = (),
    mount_options: Sequence[str] = (),
) -> Iterator[tuple[str, Path]]:
    """Yield (device, mountpoint) of a new filesystem; unmount and detach on exit."""
    with LoopImage(size_bytes) as image:
        make_filesystem(fs_type, image.device, mkfs_options)
        with Mount(image.device, fs_type, mount_options) as mount:
            yield image.device, Path(mount.mountpoint)
