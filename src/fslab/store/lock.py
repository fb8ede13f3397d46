"""One runner per campaign: an advisory lock beside the results database.

A campaign left 'running' by a fslab that was SIGKILLed must be resumable at
once, while `fslab run --resume` of a campaign another fslab is still running
must be refused (both would run the same pending points). A kernel lock does
both: it dies with its process. One lock file per database holds one byte per
campaign, locked with open-file-description locks (F_OFD_SETLK), which belong
to the open file rather than to the process, so two campaigns run from one
process do not release each other's lock.

Byte 0 (campaign ids start at 1) is the writers' turn: every fslab write
transaction on the file holds it (F_OFD_SETLKW), so concurrent writers wait in
the kernel and the next one is woken the moment the turn is free. Left to
SQLite alone they would poll with its busy handler, whose sleeps grow to
100 ms and let a waiter lose its turn again and again (docs/fleet.md, "The
store").
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
from collections.abc import Iterator
from pathlib import Path

from fslab.base.errors import FslabError

# struct flock: l_type, l_whence, (pad), l_start, l_len, l_pid, (pad)
_FLOCK = "hhqqi4x"


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + "-fslab-lock")


def _lock_byte(fd: int, offset: int, lock_type: int, *, wait: bool = False) -> None:
    command = fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK
    fcntl.fcntl(fd, command, struct.pack(_FLOCK, lock_type, os.SEEK_SET, offset, 1, 0))


@contextlib.contextmanager
def write_turn(db_path: Path) -> Iterator[None]:
    """Wait for the writers' turn (byte 0) and hold it for the with-block."""
    fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _lock_byte(fd, 0, fcntl.F_WRLCK, wait=True)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def campaign_lock(db_path: Path, campaign_id: int) -> Iterator[None]:
    """Hold the campaign's lock for the with-block; refuse if another process holds it."""
    fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            _lock_byte(fd, campaign_id, fcntl.F_WRLCK)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise FslabError(
                f"campaign {campaign_id} is being run by another fslab process right now; "
                "wait for it to finish (`fslab show` reads along) or stop it first"
            ) from None
        yield
    finally:
        os.close(fd)  # closing the description releases its locks


def campaign_running(db_path: Path, campaign_id: int) -> bool:
    """Whether some process holds the campaign's lock now (it is really running).

    A campaign stored as 'running' whose lock nobody holds was left by a fslab
    that died (SIGKILL, power loss): it is resumable, not running.
    """
    path = lock_path(db_path)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, campaign_id, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, probe)
        return struct.unpack(_FLOCK, answer)[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)
