"""A spec's setup steps, done by fslab itself between mount and the workload.

Each step (spec.setup) is carried out in Python, never through a shell: files
and directories are made inside the scratch filesystem only (the path is
re-checked against the mount point after symlinks are resolved), a queue
setting goes to the point's own scratch devices only, and every vm.* and
queue setting changed is put back after the point, on success, failure and
Ctrl-C. Each step is logged as the command that would do the same by hand,
so the report's recipe can repeat it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from fslab.base.errors import FslabError
from fslab.base.format import format_bytes
from fslab.base.proc import CommandLog, CommandRecord
from fslab.spec.setup import (
    TWINS,
    DropCachesStep,
    FileStep,
    MkdirStep,
    NocowStep,
    QueueStep,
    SetupStep,
    SysctlStep,
)
from fslab.target.loop import deferred_interrupts

PROC_SYS = Path("/proc/sys")
SYS_BLOCK = Path("/sys/class/block")
WRITE_CHUNK = 1 << 20


def sysctl_path(name: str, root: Path = PROC_SYS) -> Path:
    return root / name.replace(".", "/")


def queue_path(device: str, name: str, sys_block: Path = SYS_BLOCK) -> Path:
    """The device's own request-queue setting; a partition has none (its disk's is shared)."""
    queue = sys_block / os.path.basename(os.path.realpath(device)) / "queue"
    if not queue.is_dir():
        raise FslabError(
            f"setup: queue.{name}: {device} has no request queue of its own (a partition's "
            "is its whole disk's); queue settings apply to whole scratch devices only"
        )
    return queue / name


@contextlib.contextmanager
def setup_steps(
    steps: Sequence[SetupStep],
    mountpoint: str,
    log: CommandLog,
    *,
    devices: Sequence[str] = (),
    proc_sys: Path = PROC_SYS,
    sys_block: Path = SYS_BLOCK,
) -> Iterator[None]:
    """Do the steps in order; put back every setting changed when the block ends."""
    saved: dict[str, str] = {}
    queues: dict[Path, str] = {}
    try:
        for step in steps:
            started = time.monotonic()
            if isinstance(step, QueueStep):
                argvs = [set_queue(step, d, queues, sys_block) for d in devices]
            elif isinstance(step, NocowStep):
                path = inside(mountpoint, step.path)
                refused = set_nocow(path)
                log.add(
                    CommandRecord(["chattr", "+C", str(path)], int(bool(refused)), "", refused, 0.0)
                )
                continue
            else:
                argvs = [_do(step, mountpoint, saved, proc_sys)]
            for argv in argvs:
                log.add(CommandRecord(argv, 0, "", "", time.monotonic() - started))
        yield
    finally:
        if saved or queues:
            with deferred_interrupts():
                restore_sysctls(saved, log, proc_sys)
                restore_queues(queues, log)


def set_queue(step: QueueStep, device: str, saved: dict[Path, str], sys_block: Path) -> list[str]:
    path = queue_path(device, step.name, sys_block)
    if path not in saved:
        saved[path] = current_queue_value(path)
    _write(path, step.value, f"queue.{step.name} of {device}")
    return _echo_argv(step.value, path)


def _echo_argv(value: str, path: Path) -> list[str]:
    """How the recipe repeats a write to a sysfs file by hand."""
    return ["sh", "-c", f"echo {value} > {path}"]


def current_queue_value(path: Path) -> str:
    """The setting as it can be written back: the scheduler's is the one in brackets."""
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise FslabError(f"setup: cannot read {path}: {exc.strerror}") from None
    chosen = [w[1:-1] for w in text.split() if w.startswith("[") and w.endswith("]")]
    return chosen[0] if chosen else text


def restore_queues(saved: dict[Path, str], log: CommandLog) -> None:
    """Put each queue setting back; a failure is said in the point's log, never raised."""
    for path, value in saved.items():
        _put_back(path, value, str(path), _echo_argv(value, path), log)


def _do(
    step: SysctlStep | DropCachesStep | FileStep | MkdirStep,
    mountpoint: str,
    saved: dict[str, str],
    proc_sys: Path,
) -> list[str]:
    if isinstance(step, SysctlStep):
        for name in (step.name, TWINS.get(step.name)):
            if name is not None and name not in saved:
                saved[name] = sysctl_path(name, proc_sys).read_text().strip()
        _write(sysctl_path(step.name, proc_sys), str(step.value), step.name)
        return ["sysctl", "-w", f"{step.name}={step.value}"]
    if isinstance(step, DropCachesStep):
        os.sync()
        _write(proc_sys / "vm" / "drop_caches", "3", "vm.drop_caches")
        return ["sysctl", "-w", "vm.drop_caches=3"]
    path = inside(mountpoint, step.path)
    if isinstance(step, MkdirStep):
        path.mkdir(parents=True, exist_ok=True)
        return ["mkdir", "-p", str(path)]
    assert isinstance(step, FileStep)
    return make_file(path, step, mountpoint)


FS_IOC_GETFLAGS = 0x80086601  # the inode-flag ioctls chattr and lsattr use (x86_64, arm64)
FS_IOC_SETFLAGS = 0x40086602
FS_NOCOW_FL = 0x00800000


def set_nocow(path: Path) -> str:
    """Set the No_COW flag on `path` (an empty file is made if it does not exist); "" when
    set, else why the filesystem refused it (ext4 and XFS have no such flag): the point
    then runs on the file as it is, and its log says so."""
    how = os.O_DIRECTORY if path.is_dir() else os.O_CREAT
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | how, 0o644)
    try:
        flags = bytearray(struct.pack("l", 0))
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags)
        (value,) = struct.unpack("l", flags)
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("l", value | FS_NOCOW_FL))
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL):
            return f"chattr +C: {exc.strerror}: this filesystem has no No_COW flag"
        raise FslabError(f"setup: chattr +C {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    return ""


def inside(mountpoint: str, relative: str) -> Path:
    """The step's path under the mount point; refused if it resolves anywhere else."""
    root = Path(os.path.realpath(mountpoint))
    path = Path(os.path.realpath(root / relative))
    if root not in path.parents:
        raise FslabError(f"setup: {relative!r} resolves outside the scratch filesystem")
    return path


def make_file(path: Path, step: FileStep, mountpoint: str) -> list[str]:
    size = step.size_bytes
    st = os.statvfs(mountpoint)
    if step.how != "truncate" and size > st.f_bavail * st.f_frsize:
        raise FslabError(
            f"setup: file {step.path} of {format_bytes(size)} does not fit: "
            f"{format_bytes(st.f_bavail * st.f_frsize)} free"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        if step.how == "truncate":
            os.ftruncate(fd, size)
            return ["truncate", "-s", str(size), str(path)]
        if step.how == "fallocate":
            os.posix_fallocate(fd, 0, size)
            return ["fallocate", "-l", str(size), str(path)]
        zeros = bytes(WRITE_CHUNK)
        left = size
        while left > 0:
            left -= os.write(fd, zeros[: min(left, WRITE_CHUNK)])
        os.fsync(fd)
        argv = ["dd", "if=/dev/zero", f"of={path}", f"bs={WRITE_CHUNK}", f"count={size}"]
        return [*argv, "iflag=count_bytes", "conv=fsync"]
    finally:
        os.close(fd)


def restore_sysctls(saved: dict[str, str], log: CommandLog, proc_sys: Path = PROC_SYS) -> None:
    """Put each setting back; of a twin pair, the one that was in force (non-zero)."""
    for name, value in saved.items():
        twin = TWINS.get(name)
        if twin in saved and value == "0" and saved[twin] != "0":
            continue  # the twin in force is restored, and zeroes this one
        argv = ["sysctl", "-w", f"{name}={value}"]
        _put_back(sysctl_path(name, proc_sys), value, name, argv, log)


def _put_back(path: Path, value: str, name: str, argv: list[str], log: CommandLog) -> None:
    """Write a saved setting back; a failure is said in the point's log, never raised over
    the point's own."""
    try:
        _write(path, value, name)
    except FslabError as exc:
        log.add(CommandRecord(argv, 1, "", str(exc), 0.0))
    else:
        log.add(CommandRecord(argv, 0, "", "", 0.0))


def _write(path: Path, value: str, name: str) -> None:
    try:
        path.write_text(f"{value}\n")
    except OSError as exc:
        raise FslabError(f"setup: cannot set {name} = {value}: {exc.strerror}") from None
