"""md arrays over fslab's own loop devices: one filesystem on several scratch devices.

A report's RAID 0 or RAID 1 of several drives becomes an md array over as many
loop images (target.array). The array is created over loop devices fslab has
just attached, and it is stopped whatever happens inside the with-block,
Ctrl-C included, before those loops are detached. RAID 1 is created clean
(--assume-clean): a resync would run under the measurement. The kernel needs
the md driver; this host's may not have it, Debian's guest kernels do.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from fslab.base.errors import ToolError, UsageError
from fslab.base.proc import CommandLog, run
from fslab.target.loop import SYS_BLOCK, Released, deferred_interrupts

ArrayKind = Literal["md-raid0", "md-raid1"]
MDSTAT = Path("/proc/mdstat")
FIRST_MINOR = 100  # fslab's arrays take /dev/md100 and up, clear of the usual md0, md127
MDADM_TIMEOUT_S = 120.0
_STOP_TRIES = 10
_STOP_PAUSE_S = 0.2


def md_problem(kind: ArrayKind) -> str | None:
    """Why this kernel cannot build `kind` (None: it can), after loading md and the
    level's module."""
    module = kind.removeprefix("md-")
    for name in ("md_mod", module):
        with contextlib.suppress(ToolError):  # no modprobe (kmod): what is built in counts
            run(["modprobe", name], check=False, timeout_s=60)
    if not MDSTAT.exists():
        return (
            f"target.array = '{kind}' needs the kernel's md driver, and this kernel "
            f"({os.uname().release}) has none (no {MDSTAT}): run the campaign in a guest "
            '([vm] kernel = "6.1"; Debian\'s kernels have md)'
        )
    if module not in MDSTAT.read_text().split("Personalities :", 1)[-1].split("\n", 1)[0]:
        return f"target.array = '{kind}': this kernel's md has no {module} personality"
    return None


def mdadm_create_argv(kind: ArrayKind, device: str, members: Sequence[str]) -> list[str]:
    """mdadm --create for a new array over `members`, without questions or a resync."""
    argv = [
        "mdadm",
        "--create",
        device,
        "--run",
        f"--level={kind.removeprefix('md-raid')}",
        f"--raid-devices={len(members)}",
        "--metadata=1.2",
        "--homehost=fslab",
    ]
    if kind == "md-raid1":
        argv += ["--assume-clean", "--bitmap=none"]
    return [*argv, *members]


def free_md_device() -> str:
    """The first /dev/mdN (N >= FIRST_MINOR) the kernel has no array on."""
    minor = FIRST_MINOR
    while (SYS_BLOCK / f"md{minor}").exists():
        minor += 1
    return f"/dev/md{minor}"


def arrays_holding(device: str) -> list[str]:
    """The md arrays a block device is a member of (/sys/block/<dev>/holders)."""
    holders = SYS_BLOCK / os.path.basename(device) / "holders"
    if not holders.is_dir():
        return []
    return [
        f"/dev/{entry.name}" for entry in sorted(holders.iterdir()) if entry.name.startswith("md")
    ]


def stop_array(device: str, *, log: CommandLog | None = None) -> None:
    """`mdadm --stop`, retrying while the kernel still holds it open (a lazy unmount)."""
    for attempt in range(_STOP_TRIES):
        if not (SYS_BLOCK / os.path.basename(device)).exists():
            return
        try:
            run(["mdadm", "--stop", device], log=log, timeout_s=MDADM_TIMEOUT_S)
            return
        except ToolError:
            if attempt == _STOP_TRIES - 1:
                raise
            time.sleep(_STOP_PAUSE_S)


class MdArray(Released):
    """An md array over fslab's loop devices (context manager): created on entry,
    stopped on exit."""

    def __init__(
        self, kind: ArrayKind, members: Sequence[str], *, log: CommandLog | None = None
    ) -> None:
        if len(members) < 2:
            raise UsageError(f"target.array = '{kind}' needs 2 or more devices (target.devices)")
        self.kind = kind
        self.members = tuple(members)
        self.log = log
        self.device = ""

    def __enter__(self) -> MdArray:
        problem = md_problem(self.kind)
        if problem is not None:
            raise UsageError(problem)
        device = free_md_device()
        try:
            self.device = device
            argv = mdadm_create_argv(self.kind, device, self.members)
            run(argv, log=self.log, timeout_s=MDADM_TIMEOUT_S)
        except BaseException:
            with deferred_interrupts():
                self.release()
            raise
        return self

    def describe(self) -> dict[str, object]:
        """The array as the kernel made it: level, members, chunk size."""
        md = SYS_BLOCK / os.path.basename(self.device) / "md"

        def read(name: str) -> str:
            try:
                return (md / name).read_text().strip()
            except OSError:
                return ""

        chunk = read("chunk_size")
        return {
            "device": self.device,
            "level": read("level"),
            "members": list(self.members),
            "chunk_bytes": int(chunk) if chunk.isdigit() and int(chunk) else None,
        }

    def release(self) -> None:
        """Stop every array over our members (ours, made or half made by mdadm); an array
        of the same name over other devices is someone else's and is left alone."""
        arrays = {a for member in self.members for a in arrays_holding(member)}
        for array in sorted(arrays):
            stop_array(array, log=self.log)
