"""CPU that other processes took while the workload ran.

A campaign run beside a build, a test suite or another benchmark on the same
machine loses throughput with neither steal nor a slower CPU to show it (a
test suite beside a recording once did, and nothing fslab recorded said so:
docs/collectors.md, "What every run records"). So the runner reads every
process's CPU time (utime + stime of /proc/PID/stat) before and after the
workload and stores what processes outside fslab's own tree took, as a
share of all CPUs: `host_cpu.others_cpu_pct` (OthersProbe, one of the
runner's probes: collect.probe).

- fslab's tree (fslab, and fio, dd, perf and the collectors it started) is
  the measurement, not a neighbour; so are kernel threads (PF_KTHREAD): the
  workload's own writeback, journal commits and workqueue items run in them.
- A process is matched by pid and start time, so a reused pid is a new
  process; one that started during the run counts with all its CPU time.
- A process that starts and exits between the two reads is not seen, nor
  one that exits before the second: a lower bound, cheap (two passes over
  /proc, a few milliseconds) and enough to name a busy neighbour.

Parsing is apart from reading (parse_pid_stat), and both are tested on
lines captured from this machine's /proc (tests/data/others).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from fslab.collect.probe import Probe, read_proc_stat
from fslab.collect.sysstat import all_cpu_ticks

PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread


@dataclass(frozen=True)
class PidStat:
    """What one /proc/PID/stat line says about whose process it is and its CPU."""

    pid: int
    ppid: int
    kernel_thread: bool
    cpu_ticks: int  # utime + stime, clock ticks (USER_HZ, as /proc/stat counts)
    start_ticks: int  # since boot: with the pid, which process this is


def parse_pid_stat(text: str) -> PidStat | None:
    """One /proc/PID/stat line (the command name may hold spaces and parentheses, so the
    fields are counted from its last ')'); None when it is not one."""
    head, sep, tail = text.rpartition(")")
    fields = tail.split()
    if not sep or len(fields) < 20 or "(" not in head:
        return None
    try:
        # tail fields: 0 state, 1 ppid, ..., 6 flags, 11 utime, 12 stime, 19 starttime
        return PidStat(
            pid=int(head.split("(", 1)[0]),
            ppid=int(fields[1]),
            kernel_thread=bool(int(fields[6]) & PF_KTHREAD),
            cpu_ticks=int(fields[11]) + int(fields[12]),
            start_ticks=int(fields[19]),
        )
    except ValueError:
        return None


def snapshot(proc: Path = Path("/proc")) -> dict[int, PidStat]:
    """Every process's stat line now (processes that exit while it reads are skipped)."""
    out: dict[int, PidStat] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            text = (Path(entry.path) / "stat").read_text()
        except OSError:
            continue
        if (stat := parse_pid_stat(text)) is not None:
            out[stat.pid] = stat
    return out


def others_ticks(before: Mapping[int, PidStat], after: Mapping[int, PidStat], own_pid: int) -> int:
    """CPU ticks that user processes outside `own_pid`'s tree took between the reads."""
    total = 0
    for stat in after.values():
        if stat.kernel_thread or _in_tree(stat, after, own_pid):
            continue
        total += stat.cpu_ticks
        earlier = before.get(stat.pid)
        if earlier is not None and earlier.start_ticks == stat.start_ticks:
            total -= earlier.cpu_ticks  # the same process: only what it took since
    return total


def _in_tree(stat: PidStat, processes: Mapping[int, PidStat], root: int) -> bool:
    seen: set[int] = set()
    pid = stat.pid
    while pid > 1 and pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        parent = processes.get(pid)
        pid = parent.ppid if parent is not None else 0
    return False


def others_cpu_pct(
    before: Mapping[int, PidStat], after: Mapping[int, PidStat], all_cpu_ticks: float
) -> float | None:
    """What processes outside this one's tree took, in percent of all CPUs over a window
    of `all_cpu_ticks` (the /proc/stat total over every CPU); None for an empty window."""
    if all_cpu_ticks <= 0:
        return None
    return round(100.0 * others_ticks(before, after, os.getpid()) / all_cpu_ticks, 3)


class OthersProbe(Probe):
    """What other processes took over every run (collect.probe): every process's CPU and
    /proc/stat read before and after, the window's size from the latter."""

    name: ClassVar[str] = "others"
    fact_names: ClassVar[tuple[str, ...]] = ("others_cpu_pct",)

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self.proc = proc
        self._cpu_before = self._cpu_after = ""
        self._before: dict[int, PidStat] = {}
        self._after: dict[int, PidStat] = {}

    def begin(self) -> None:
        self._cpu_before, self._before = read_proc_stat(self.proc), snapshot(self.proc)

    def end(self) -> None:
        self._cpu_after, self._after = read_proc_stat(self.proc), snapshot(self.proc)

    def facts(self) -> dict[str, float]:
        if not (self._cpu_before and self._cpu_after):
            return {}
        window = all_cpu_ticks(self._cpu_before, self._cpu_after)
        others = others_cpu_pct(self._before, self._after, window)
        return {} if others is None else {"others_cpu_pct": others}
