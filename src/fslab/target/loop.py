"""Loop devices over sparse image files: fslab's own scratch devices.

Every image is named fslab-<pid>-<8 hex>.img so a later run can tell fslab's
leftovers from anything else and know whether their owner is still alive.
The device is released and the image deleted whatever happens inside the
with-block, Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, TracebackType

from fslab.base.errors import FslabError, ToolError, UsageError
from fslab.base.format import format_bytes
from fslab.base.proc import CommandLog, run
from fslab.target.guard import read_mountinfo

LABEL = "fslab"
IMAGE_RE = re.compile(rf"^{LABEL}-(?P<pid>\d+)-(?P<token>[0-9a-f]{{8}})\.img$")
SYS_BLOCK = Path("/sys/block")
RAM_FS_TYPES = ("tmpfs", "ramfs")

LOSETUP_TIMEOUT_S = 60.0
_ATTACH_TRIES = 4
_DETACH_TRIES = 10
_RETRY_PAUSE_S = 0.2


def image_name(pid: int | None = None) -> str:
    """A fresh image file name carrying the owner's pid."""
    return f"{LABEL}-{os.getpid() if pid is None else pid}-{secrets.token_hex(4)}.img"


def image_owner_pid(name: str) -> int | None:
    """The pid encoded in an fslab image name, None for any other name."""
    match = IMAGE_RE.match(os.path.basename(name))
    return int(match.group("pid")) if match else None


def loop_backing_files() -> dict[str, str]:
    """/dev/loopN -> backing file path for every attached loop device."""
    found = {}
    for entry in sorted(SYS_BLOCK.glob("loop*")):
        try:
            backing = (entry / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue
        if backing:
            found[f"/dev/{entry.name}"] = backing.removesuffix(" (deleted)")
    return found


def loops_backed_by(image_path: str) -> list[str]:
    """Loop devices attached to this image file."""
    target = os.path.realpath(image_path)
    return [dev for dev, backing in loop_backing_files().items() if backing == target]


DEFERRED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold back Ctrl-C and SIGTERM while releasing devices, then deliver them.

    A signal during cleanup would otherwise interrupt umount or losetup and
    leave a mount or a loop device behind (the runner turns SIGTERM into the
    same KeyboardInterrupt as Ctrl-C). Only the main thread can install signal
    handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda signum, _frame: received.append(signum))
        for signum in DEFERRED_SIGNALS
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signum = signal.Signals(received[0])
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL and signum == signal.SIGINT:
                raise KeyboardInterrupt
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)  # the default action, now that cleanup is done


class InterruptGuard:
    """SIGINT and SIGTERM both raise KeyboardInterrupt, so the context managers
    release what was made; a signal while that cleanup runs only says so.

    The runner and preflight both run under it. Only the main thread can
    install signal handlers; elsewhere this does nothing.
    """

    def __init__(self, on_again: Callable[[str], None] | None = None) -> None:
        self.on_again = on_again
        self.interrupted = False
        self._previous: dict[int, signal._HANDLER] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.interrupted:
            if self.on_again is not None:
                self.on_again(f"{name} again: still cleaning up")
            return
        self.interrupted = True
        raise KeyboardInterrupt(name)

    def __enter__(self) -> InterruptGuard:
        if threading.current_thread() is threading.main_thread():
            for signum in DEFERRED_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def _is_busy(err: ToolError) -> bool:
    text = (err.stderr or str(err)).lower()
    return "busy" in text or "resource temporarily unavailable" in text


def detach_loop(device: str, *, log: CommandLog | None = None) -> None:
    """`losetup --detach`, retrying while the kernel still reports the device busy."""
    for attempt in range(_DETACH_TRIES):
        try:
            run(["losetup", "--detach", device], log=log, timeout_s=LOSETUP_TIMEOUT_S)
            return
        except ToolError as err:
            if not os.path.exists(f"/sys/block/{os.path.basename(device)}/loop"):
                return  # already gone (autoclear, or someone else detached it)
            if not _is_busy(err) or attempt == _DETACH_TRIES - 1:
                raise
            time.sleep(_RETRY_PAUSE_S)


def _fs_type_of(directory: str) -> str:
    """Filesystem type of the mount holding a directory (longest mount prefix)."""
    best, best_type = "", ""
    real = os.path.realpath(directory)
    for entry in read_mountinfo():
        mp = entry.mount_point
        inside = real == mp or real.startswith(mp.rstrip("/") + "/")
        if inside and len(mp) >= len(best):
            best, best_type = mp, entry.fs_type
    return best_type


def _mem_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_image_space(size_bytes: int, directory: str) -> None:
    """Refuse an image that can never be fully backed; warn when RAM is tight.

    The image is sparse, so it only costs what the workload writes, but an
    image larger than the free space turns late writes into I/O errors.
    """
    try:
        st = os.statvfs(directory)
    except FileNotFoundError:
        raise UsageError(f"image directory {directory} does not exist") from None
    free_bytes = st.f_bavail * st.f_frsize
    if size_bytes > free_bytes:
        raise FslabError(
            f"a {format_bytes(size_bytes)} image does not fit in {directory}: only "
            f"{format_bytes(free_bytes)} free there (statvfs); use a smaller size or "
            "another image directory"
        )
    available = _mem_available_bytes()
    if _fs_type_of(directory) in RAM_FS_TYPES and available and size_bytes > available:
        warnings.warn(
            f"{format_bytes(size_bytes)} RAM image in {directory} exceeds available memory "
            f"({format_bytes(available)}); filling it would exhaust RAM",
            stacklevel=3,
        )


class Released:
    """A context manager that releases what it made when its block ends, however it ends;
    Ctrl-C and SIGTERM wait until the release is done (deferred_interrupts)."""

    def release(self) -> None:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with deferred_interrupts():
            self.release()


class LoopImage(Released):
    """A sparse image file attached to a free loop device (context manager).

    `prepare(image_path)` runs on the file before it is attached: mkfs on a
    sparse file writes straight to page cache, ~50x faster than through the
    loop device (mkfs.ext4 lazy_itable_init=0 on 16 GiB: 0.02 s vs ~1 s).
    """

    def __init__(
        self,
        size_bytes: int,
        directory: str = "/dev/shm",
        log: CommandLog | None = None,
        prepare: Callable[[str], None] | None = None,
        attach: bool = True,
    ) -> None:
        if size_bytes <= 0 or size_bytes % 512:
            raise UsageError(
                f"image size must be a positive multiple of 512 bytes, got {size_bytes}"
            )
        self.size_bytes = size_bytes
        self.directory = directory
        self.log = log
        self.prepare = prepare  # runs on the image file before it is attached (mkfs)
        self.attach = attach  # False: a sparse file only (preflight's mkfs without root)
        self.device = ""
        self.image_path = ""

    def __enter__(self) -> LoopImage:
        check_image_space(self.size_bytes, self.directory)
        self.image_path = os.path.join(os.path.realpath(self.directory), image_name())
        fd = os.open(self.image_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.ftruncate(fd, self.size_bytes)
        finally:
            os.close(fd)
        try:
            if self.prepare is not None:
                self.prepare(self.image_path)
            if self.attach:
                self.device = self._attach()
        except BaseException:
            with deferred_interrupts():
                self.release()
            raise
        return self

    def attach_now(self) -> str:
        """Attach the image made with attach=False (several images made first, then one
        mkfs over all of them, then attached); released like any other."""
        try:
            self.device = self._attach()
        except BaseException:
            with deferred_interrupts():
                self.release()
            raise
        return self.device

    def _attach(self) -> str:
        for attempt in range(_ATTACH_TRIES):
            try:
                record = run(
                    ["losetup", "--find", "--show", self.image_path],
                    log=self.log,
                    timeout_s=LOSETUP_TIMEOUT_S,
                )
                return record.stdout.strip()
            except ToolError as err:
                if not _is_busy(err) or attempt == _ATTACH_TRIES - 1:
                    raise ToolError(
                        f"could not attach a loop device to {self.image_path}: {err}",
                        stderr=err.stderr,
                    ) from err
                time.sleep(_RETRY_PAUSE_S)
        raise AssertionError("unreachable")

    def release(self) -> None:
        """Detach every loop on our image (even one losetup set up before a
        Ctrl-C hid its name from us), then delete the image."""
        if not self.image_path:
            return
        devices = set(loops_backed_by(self.image_path))
        if self.device:
            devices.add(self.device)
        try:
            for device in sorted(devices):
                detach_loop(device, log=self.log)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.image_path)
        still = loops_backed_by(self.image_path)
        if still:
            warnings.warn(
                f"{', '.join(still)} still in use (a lazy unmount or an open file); "
                "the kernel detaches it when the last user closes it",
                stacklevel=2,
            )
