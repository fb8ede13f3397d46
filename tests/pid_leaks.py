"""What fslab processes with known pids still hold: mounts, loop devices, images.

fslab names its objects after the pid that made them (images fslab-<pid>-<hex>.img,
mount points /run/fslab/mnt-<pid>-<hex>), so a test can look for exactly its own
leaks while other fslab runs on the machine come and go.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from fslab.target.guard import read_mountinfo
from fslab.target.leftovers import Leftovers, mount_dir_owner_pid
from fslab.target.loop import image_owner_pid, loop_backing_files

IMAGE_DIRS = ("/dev/shm",)
MOUNT_BASE = "/run/fslab"


def owned_by(pids: Iterable[int]) -> Leftovers:
    """Mounts, loop devices and images (and mount point dirs) made by these pids."""
    wanted = set(pids)
    found = Leftovers()
    for entry in read_mountinfo():
        mp = entry.mount_point
        if os.path.dirname(mp) == MOUNT_BASE and mount_dir_owner_pid(mp) in wanted:
            found.mounts.append(mp)
    for device, backing in loop_backing_files().items():
        if image_owner_pid(backing) in wanted:
            found.loop_devices.append(device)
    for directory in IMAGE_DIRS:
        for path in Path(directory).iterdir():
            if image_owner_pid(path.name) in wanted:
                found.images.append(str(path))
    base = Path(MOUNT_BASE)
    if base.is_dir():
        for path in base.iterdir():
            if mount_dir_owner_pid(path.name) in wanted and str(path) not in found.mounts:
                found.images.append(str(path))  # an empty mount point directory left behind
    return found


def wait_released(pids: Iterable[int], timeout_s: float = 15.0) -> Leftovers:
    """Poll until the pids' objects are gone (a lazily unmounted loop goes when its
    last user exits); return what is still there at the deadline."""
    pids = list(pids)
    deadline = time.monotonic() + timeout_s
    while True:
        left = owned_by(pids)
        if left.empty() or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)
