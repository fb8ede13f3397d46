"""Scale a reported experiment to this machine; every rule says why in a comment.

The rules are the ones the seed preset follows: the scratch device is a sparse
RAM-backed image of at most 70% of memory (16 GiB on 24 GiB), the files all
jobs lay out fill at most half of it (and of memory), so the reporter's 2048
jobs x 27.5 MiB become 2048 x 4 MiB.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import TypeVar

from fslab.base.format import format_size
from fslab.base.hostfacts import nr_cpu_ids, online_cpu_count
from fslab.base.units import GIB, MIB
from fslab.target.md import MDSTAT

MAX_RUNTIME_S = 30  # per point; a sweep of 7 points x 3 configurations stays near 15 min
DEFAULT_RAMP_S = 5
QUICK_RUNTIME_S = 10  # long enough for the journal to fill at 1024 jobs (ext4-fsync-storm)
QUICK_RAMP_S = 3
QUICK_MAX_NUMJOBS = 1024
# a comparison verdict needs 3 runs a side (analyze.campaign.verdicts.MIN_REPS); with 4, one run
# spread wide does not leave the verdict on the remedy undecided (the fsync-storm preset)
QUICK_REPEAT = 4
QUICK_CROSS_POINTS = 4  # crossed loops this small stay whole in --quick (2 x 2)


@dataclass(frozen=True)
class HostShape:
    """What of this host the scaling needs."""

    kernel_release: str
    online_cpus: int
    nr_cpu_ids: int
    memory_bytes: int
    md: bool = False  # the kernel has md loaded (/proc/mdstat): target.array builds here

    @classmethod
    def current(cls) -> HostShape:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        md = MDSTAT.exists()
        return cls(platform.release(), online_cpu_count(), nr_cpu_ids(), memory, md)


@dataclass(frozen=True)
class Scaled:
    """A value for the spec and the comment that says where it came from."""

    value: int | str
    comment: str


T = TypeVar("T")


def target_size_bytes(
    reported: int | None, host: HostShape, *, dd: bool, said: str = "", holds: int = 0
) -> Scaled:
    """The scratch device's size: the reporter's within this machine's RAM cap, or a
    default that holds twice what the workload writes at once (`holds`)."""
    cap = _ram_image_cap(host)
    if reported is None:
        default = 4 * GIB if dd else 16 * GIB
        while default < 2 * holds and default < cap:
            default *= 2
        size = min(default, cap)
        return Scaled(
            size,
            f"the report gives no device size; {format_size(size)} sparse "
            f"RAM-backed image (only written blocks use memory)",
        )
    if reported <= cap:
        return Scaled(reported, "the reporter's device size, as a sparse RAM-backed image")
    return Scaled(
        cap,
        f"the reporter's {format_size(reported)} capped at {format_size(cap)}: "
        f"a RAM-backed image here is at most 70% of this machine's "
        f"{format_size(host.memory_bytes)} memory",
    )


def _ram_image_cap(host: HostShape) -> int:
    """The largest power-of-two GiB within 70% of memory (16 GiB on 24 GiB)."""
    cap = GIB
    while cap * 2 <= host.memory_bytes * 7 // 10:
        cap *= 2
    return cap


def file_budget_bytes(target_bytes: int, host: HostShape) -> int:
    """What all jobs' files together may take: half the device, half of memory."""
    return min(target_bytes // 2, host.memory_bytes // 2)


def per_job_size(reported: int | None, jobs: int, budget: int, block: int) -> Scaled | None:
    """A per-job file size whose total over `jobs` fits the budget (None: keep the report's)."""
    if reported is not None and reported * jobs <= budget:
        return None
    size = max(block, (budget // jobs) // MIB * MIB or budget // jobs // block * block)
    if reported is None:
        return Scaled(
            size,
            f"the report gives no file size; {format_size(size)} per job so "
            f"{jobs} jobs fit {format_size(budget)}",
        )
    return Scaled(
        size,
        f"scaled: the reporter's {format_size(reported)} per job x {jobs} jobs "
        f"= {format_size(reported * jobs)}; {format_size(size)} x {jobs} = "
        f"{format_size(size * jobs)} fits half the device",
    )


def numjobs_ladder(reported: int) -> list[int]:
    """1 up to the reporter's job count: powers of 2 to 16, of 4 beyond, then the count."""
    step = 2 if reported <= 16 else 4
    ladder, value = [], 1
    while value < reported:
        ladder.append(value)
        value *= step
    return [*ladder, reported]


def quick_numjobs(ladder: list[int]) -> list[int]:
    """Three points of the ladder (top, top/4, top/64), the top at most QUICK_MAX_NUMJOBS."""
    top = max(v for v in ladder if v <= QUICK_MAX_NUMJOBS)
    picked = sorted({v for v in (top, top // 4, top // 64) if v in ladder})
    return picked if len(picked) > 1 else sorted({ladder[0], top})


def quick_points(values: list[T]) -> list[T]:
    """The reporter's own sweep under --quick: its first, middle and last values, in the
    reporter's order (where it starts, where it ends, one step between)."""
    return values if len(values) <= 3 else [values[0], values[len(values) // 2], values[-1]]


def runtime_s(reported_s: float | None) -> Scaled:
    if reported_s is None:
        return Scaled(f"{MAX_RUNTIME_S}s", "the report gives no runtime; fslab's per-point default")
    if reported_s <= MAX_RUNTIME_S:
        return Scaled(f"{reported_s:g}s", "the reporter's runtime")
    return Scaled(
        f"{MAX_RUNTIME_S}s",
        f"the reporter ran {reported_s:g} s per point; "
        f"{MAX_RUNTIME_S} s keeps the sweep short (fio's figure settles within it)",
    )


def leave_free_bytes(written_per_run: int) -> int:
    """Free space to leave when a hypothesis is about free space: near, but room to write.

    At least 64 MiB (ext4 keeps ~16 MiB back for delayed-allocation metadata and
    root writes into the 5% reserve), and 4x what one run writes.
    """
    return max(64 * MIB, -(-4 * written_per_run // MIB) * MIB)


def fio_size_text(size: int) -> str:
    """A byte count as fio takes it, in the largest exact binary unit: 4m, 128g."""
    for unit, scale in (("g", GIB), ("m", MIB), ("k", 1024)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)
