"""Find and stop what a killed fslab left of its guests: qemu (and vng) processes,
shared directories.

A guest's processes carry its name, `fslab-<pid>-<hex>`, on their command line
(vng's `--name`, qemu's `-name`), and its directories are
`fslab-guest-<pid>-*` and `fslab-probe-<pid>-*` in the temporary directory.
Only those whose owner pid is dead are touched: a live pid is another fslab
running its own guests.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fslab.base.proc import pid_alive

GUEST_NAME_RE = re.compile(r"^fslab-(?P<pid>\d+)-[0-9a-f]{8}$")
WORKDIR_RE = re.compile(r"^fslab-(?:guest|probe)-(?P<pid>\d+)-")


@dataclass
class GuestLeftovers:
    processes: list[str] = field(default_factory=list)  # "<pid> <comm> <guest name>"
    directories: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.processes or self.directories)


def _guest_name(argv: list[str]) -> str | None:
    for flag, value in itertools.pairwise(argv):
        if flag in ("-name", "--name") and GUEST_NAME_RE.match(value.split(",")[0]):
            return value.split(",")[0]
    return None


def _orphan_processes() -> list[tuple[int, str, str]]:
    """(pid, comm, guest name) of guest processes whose fslab is gone."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        name = _guest_name(argv)
        if name is None:
            continue
        match = GUEST_NAME_RE.match(name)
        assert match is not None
        if not pid_alive(int(match.group("pid"))):
            found.append((int(entry.name), comm, name))
    return found


def _orphan_directories(tmp: Path) -> list[Path]:
    found = []
    if tmp.is_dir():
        for path in sorted(tmp.iterdir()):
            match = WORKDIR_RE.match(path.name)
            if match and path.is_dir() and not pid_alive(int(match.group("pid"))):
                found.append(path)
    return found


def find_guest_leftovers(tmp: Path | None = None) -> GuestLeftovers:
    """List orphaned guest processes and directories; touches nothing."""
    return GuestLeftovers(
        processes=[f"{pid} {comm} {name}" for pid, comm, name in _orphan_processes()],
        directories=[str(p) for p in _orphan_directories(tmp or Path(tempfile.gettempdir()))],
    )


def stop_guest_leftovers(tmp: Path | None = None, wait_s: float = 10.0) -> GuestLeftovers:
    """SIGKILL orphaned guests (qemu holds nothing a kill could corrupt: its disks are
    RAM in the guest, the host's root is shared read-only), remove their directories."""
    stopped = GuestLeftovers()
    orphans = _orphan_processes()
    for pid, comm, name in orphans:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            stopped.processes.append(f"{pid} {comm} {name}")
    deadline = time.monotonic() + wait_s
    pids = [pid for pid, _, _ in orphans]
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if pid_alive(pid)]
        time.sleep(0.05)
    for path in _orphan_directories(tmp or Path(tempfile.gettempdir())):
        shutil.rmtree(path, ignore_errors=True)
        stopped.directories.append(str(path))
    return stopped
