"""Writes kept on this host while a shared results database is unreachable.

A campaign must not lose a point because the PostgreSQL server restarted or
the network dropped: the store appends the write it could not send to a local
file (one JSON line, fsynced) and the campaign goes on. The spool is sent, in
order and in one transaction, by the next write that reaches the database or
by the next fslab that opens it. Every spooled write replaces what it writes,
so sending one twice (a crash between commit and truncation) changes nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def spool_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fslab" / "spool"


def spool_path(location: str) -> Path:
    """One spool file per database (its URL without the password)."""
    digest = hashlib.sha256(location.encode()).hexdigest()[:16]
    return spool_dir() / f"{digest}.jsonl"


class Spool:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _locked(self) -> Iterator[int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)

    def pending(self) -> int:
        try:
            with self.path.open("rb") as handle:
                return sum(1 for _ in handle)
        except FileNotFoundError:
            return 0

    def append(self, op: str, args: dict[str, Any]) -> None:
        line = json.dumps({"op": op, "args": args}) + "\n"
        with self._locked() as fd:
            os.write(fd, line.encode())
            os.fsync(fd)

    def drain(self, apply: Callable[[list[tuple[str, dict[str, Any]]]], None]) -> int:
        """Apply every kept write (all or none), then empty the spool."""
        with self._locked() as fd:
            with open(self.path, encoding="utf-8") as handle:
                entries = [json.loads(line) for line in handle if line.strip()]
            if not entries:
                return 0
            apply([(e["op"], e["args"]) for e in entries])
            os.ftruncate(fd, 0)
            os.fsync(fd)
        return len(entries)
