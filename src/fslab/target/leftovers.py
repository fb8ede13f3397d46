"""Find and release what a killed fslab left behind: mounts, loop devices, images.

Only fslab's own objects are considered (mount points mnt-<pid>-<hex> under the
mount base, images fslab-<pid>-<hex>.img in the image directories, loop devices
over such images), and only when their owner pid is dead: a live pid means
another fslab is running and its devices are not ours to take.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fslab.base.errors import ToolError
from fslab.base.proc import CommandLog, marked_workload, pid_alive, run
from fslab.target.fs import process_users
from fslab.target.guard import read_mountinfo
from fslab.target.loop import (
    deferred_interrupts,
    detach_loop,
    image_owner_pid,
    loop_backing_files,
)
from fslab.target.md import arrays_holding, stop_array

MOUNT_DIR_RE = re.compile(r"^mnt-(?P<pid>\d+)-[0-9a-f]{8}$")


@dataclass
class Leftovers:
    mounts: list[str] = field(default_factory=list)  # mount points
    loop_devices: list[str] = field(default_factory=list)  # /dev/loopN
    images: list[str] = field(default_factory=list)  # image file paths

    def empty(self) -> bool:
        return not (self.mounts or self.loop_devices or self.images)


def mount_dir_owner_pid(path: str) -> int | None:
    match = MOUNT_DIR_RE.match(os.path.basename(path))
    return int(match.group("pid")) if match else None


def _orphaned(owner_pid: int | None) -> bool:
    return owner_pid is not None and not pid_alive(owner_pid)


def _in_dirs(path: str, dirs: Sequence[str]) -> bool:
    return os.path.dirname(path) in {os.path.realpath(d) for d in dirs}


def _orphan_mounts(mount_base: str) -> list[str]:
    base = os.path.realpath(mount_base)
    found = []
    for entry in read_mountinfo():
        mp = entry.mount_point
        if os.path.dirname(mp) == base and _orphaned(mount_dir_owner_pid(mp)):
            found.append(mp)
    return list(dict.fromkeys(found))


def _orphan_loops(image_dirs: Sequence[str]) -> list[str]:
    return [
        dev
        for dev, backing in loop_backing_files().items()
        if _in_dirs(backing, image_dirs) and _orphaned(image_owner_pid(backing))
    ]


def _orphan_images(image_dirs: Sequence[str]) -> list[str]:
    found = []
    for directory in image_dirs:
        folder = Path(os.path.realpath(directory))
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_file() and _orphaned(image_owner_pid(path.name)):
                found.append(str(path))
    return found


def find_leftovers(
    *, image_dirs: Sequence[str] = ("/dev/shm",), mount_base: str = "/run/fslab"
) -> Leftovers:
    """List fslab's orphaned mounts, loop devices and images; touches nothing."""
    return Leftovers(
        mounts=_orphan_mounts(mount_base),
        loop_devices=_orphan_loops(image_dirs),
        images=_orphan_images(image_dirs),
    )


def _release_mount(mountpoint: str, log: CommandLog | None) -> None:
    record = run(["umount", mountpoint], check=False, log=log)
    if record.returncode != 0:
        run(["umount", "--lazy", mountpoint], log=log)


def _remove_orphan_mount_dirs(mount_base: str) -> None:
    """Remove empty, unmounted mnt-<dead pid>-* directories (rmdir never deletes data)."""
    base = Path(mount_base)
    if not base.is_dir():
        return
    mounted = {e.mount_point for e in read_mountinfo()}
    for path in base.iterdir():
        if path.is_dir() and str(path) not in mounted and _orphaned(mount_dir_owner_pid(path.name)):
            with contextlib.suppress(OSError):
                path.rmdir()


ORPHAN_WORKLOADS = ("fio", "dd")
"""The built-in benchmarks' process names; callers above pass the registry's
(fslab.workload.registry.process_names), which this layer cannot import."""


def stop_orphan_workloads(
    mountpoint: str, wait_s: float = 10.0, names: Sequence[str] = ORPHAN_WORKLOADS
) -> list[int]:
    """SIGKILL the workloads a killed fslab left writing to its mount, so it can go.

    fslab starts fio and dd in their own session, so they outlive a SIGKILLed
    fslab and keep the mount busy until their runtime ends. Only those
    commands, and a spec command's processes (marked with WORKLOAD_MARK, as
    their names can be anything), are stopped; anything else using the mount
    is left to the user (the lazy unmount still detaches the mount point).
    """
    pids = [
        pid
        for pid, comm in process_users(mountpoint)
        if comm in names or marked_workload(pid, mountpoint)
    ]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if pid_alive(pid)]
        time.sleep(0.05)
    return pids


def cleanup_leftovers(
    *,
    image_dirs: Sequence[str] = ("/dev/shm",),
    mount_base: str = "/run/fslab",
    log: CommandLog | None = None,
    workloads: Sequence[str] = ORPHAN_WORKLOADS,
) -> Leftovers:
    """Unmount, detach and delete fslab's orphans (stopping the `workloads` processes
    that keep a mount busy); return what was released."""
    found = find_leftovers(image_dirs=image_dirs, mount_base=mount_base)
    released = Leftovers()
    errors: list[str] = []
    with deferred_interrupts():
        for mountpoint in found.mounts:
            stop_orphan_workloads(mountpoint, names=workloads)
            try:
                _release_mount(mountpoint, log)
                released.mounts.append(mountpoint)
            except ToolError as err:
                errors.append(str(err))
        _remove_orphan_mount_dirs(os.path.realpath(mount_base))
        for device in found.loop_devices:
            try:
                for array in arrays_holding(device):  # an md array over fslab's images
                    stop_array(array, log=log)
                detach_loop(device, log=log)
                released.loop_devices.append(device)
            except ToolError as err:
                errors.append(str(err))
        for image in found.images:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(image)
            released.images.append(image)
    if errors:
        raise ToolError("could not release all leftovers: " + "; ".join(errors))
    return released
