"""Where the workload's threads wait: sampled kernel stacks of blocked threads.

No kprobes, no BPF: every ~100 ms a sampler thread picks threads of the
workload processes (comm == ctx.workload_comm, or any process working in
the scratch filesystem when the workload runs programs of any name), reads each one's state from
`/proc/<pid>/task/<tid>/stat` and, for threads sleeping in D or S state, its
kernel stack (`stack`, root only) and `wchan`. Reading a blocked thread's
stack costs ~50 us, so with 1024 threads a full sweep would eat most of a
CPU; the sampler instead draws a random subset sized to a CPU budget
(default 5 % of one CPU) and weights each observation by
population / subset, so means are unbiased.

The off-CPU profile is folded like the on-CPU one (`comm;root;...;leaf N`,
root first, offsets stripped) with a pseudo-frame after the comm telling
the state: `fio;[D];entry_SYSCALL_64_after_hwframe;...;jbd2_log_wait_commit N`.
Counts are estimated thread-samples: summed over a flame graph they give
thread-samples, divided by `offcpu.samples` the mean number of threads there.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar, TypeVar

from pydantic import Field

from fslab.base.vocab import CatalogEntry, MetricDef, metric_safe
from fslab.collect.base import (
    Collector,
    CollectorOptions,
    CollectorResult,
    PointContext,
    Unavailable,
)
from fslab.collect.tracefs import Ticker

# Share of one CPU the sampler may use: 1%, because a 2% budget cost the evidence
# run at 1024 jobs measurably more (docs/collectors.md, "offcpu", has the figures).
DEFAULT_CPU_BUDGET = 0.01
PROC = Path("/proc")
BLOCKED_STATES = ("D", "S")
_FRAME_RE = re.compile(r"^\[<[0-9a-fx]+>\]\s+([^\s+]+)")


# --------------------------------------------------------------------------
# Parsers


def parse_stack(text: str) -> list[str]:
    """Function names of a /proc/<pid>/stack dump, leaf first, offsets/modules dropped."""
    frames: list[str] = []
    for line in text.splitlines():
        match = _FRAME_RE.match(line.strip())
        if match:
            frames.append(match.group(1))
    return frames


def parse_stat_state(text: str) -> str:
    """The one-letter state of a /proc/<pid>/task/<tid>/stat line ('' if unreadable)."""
    end = text.rfind(")")
    if end < 0 or end + 2 >= len(text):
        return ""
    return text[end + 2]


def parse_wchan(text: str) -> str:
    """The wait channel symbol; '0' or empty (running, or woke meanwhile) -> ''."""
    value = text.strip()
    return "" if value in ("", "0") else value


def folded_key(comm: str, state: str, frames_leaf_first: list[str]) -> str:
    """`comm;[state];root;...;leaf` as flame-graph tools expect (';' in names escaped)."""
    parts = [comm, f"[{state}]"] + [f.replace(";", ":") for f in reversed(frames_leaf_first)]
    return ";".join(p.replace(" ", "_") for p in parts)


# --------------------------------------------------------------------------
# Profile

_K = TypeVar("_K")


@dataclass
class OffcpuProfile:
    """Weighted observations: each is one thread seen in one sample, weight pop/subset."""

    samples: int = 0
    population_total: float = 0.0
    state_weight: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    stack_weight: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    # (state, wchan) -> weight, and the stacks seen there
    wchan_weight: defaultdict[tuple[str, str], float] = field(
        default_factory=lambda: defaultdict(float)
    )
    wchan_stack: dict[tuple[str, str], defaultdict[str, float]] = field(default_factory=dict)
    observed: int = 0

    def add(self, comm: str, state: str, frames: list[str], wchan: str, weight: float) -> None:
        self.observed += 1
        self.state_weight[state] += weight
        if state not in BLOCKED_STATES:
            return
        key = folded_key(comm, state, frames) if frames else f"{comm};[{state}];[unknown]"
        self.stack_weight[key] += weight
        # the kernel's wchan skips scheduler functions; without one use the leaf frame
        where = wchan or (frames[0] if frames else "[unknown]")
        self.wchan_weight[(state, where)] += weight
        self.wchan_stack.setdefault((state, where), defaultdict(float))[key] += weight

    def folded(self) -> str:
        lines = [
            f"{stack} {round(w)}"
            for stack, w in sorted(self.stack_weight.items(), key=lambda kv: -kv[1])
            if round(w) > 0
        ]
        return "\n".join(lines) + ("\n" if lines else "")

    def metrics(self) -> dict[str, float]:
        n = max(self.samples, 1)
        out = {
            "offcpu.samples": float(self.samples),
            "offcpu.observations": float(self.observed),
            "offcpu.threads_mean": self.population_total / n,
            "offcpu.blocked_threads_mean": sum(self.state_weight[s] for s in BLOCKED_STATES) / n,
            "offcpu.d_threads_mean": self.state_weight["D"] / n,
            "offcpu.s_threads_mean": self.state_weight["S"] / n,
            "offcpu.running_threads_mean": self.state_weight["R"] / n,
        }
        per_func: defaultdict[str, float] = defaultdict(float)
        for (_, where), w in self.wchan_weight.items():
            per_func[where] += w
        for func, w in per_func.items():
            out[f"offcpu.wchan.{metric_safe(func)}.threads_mean"] = w / n
        return out

    def top_tsv(self, limit: int = 50) -> str:
        n = max(self.samples, 1)
        blocked = sum(self.wchan_weight.values()) or 1.0
        rows = ["state\twchan\tthreads_mean\tshare_pct\ttop_stack"]
        for (state, where), w in _heaviest(self.wchan_weight, limit):
            top = _heaviest(self.wchan_stack[(state, where)], 1)[0][0]
            rows.append(f"{state}\t{where}\t{w / n:.2f}\t{100 * w / blocked:.1f}\t{top}")
        return "\n".join(rows) + "\n"


def _heaviest(weights: dict[_K, float], n: int) -> list[tuple[_K, float]]:
    """The n heaviest entries, heaviest first; ties in insertion order (as Counter's)."""
    return sorted(weights.items(), key=lambda item: -item[1])[:n]


# --------------------------------------------------------------------------
# Sampling


def _read(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536).decode("utf-8", "replace")
    finally:
        os.close(fd)


def find_processes(comm: str, proc: Path = PROC) -> list[int]:
    """PIDs whose comm is `comm` (the kernel truncates comm to 15 bytes); every PID
    when comm is ""."""
    want = comm[:15]
    pids: list[int] = []
    for entry in os.listdir(proc):
        if entry.isdigit():
            if not want:
                pids.append(int(entry))
                continue
            with contextlib.suppress(OSError):
                if _read(f"{proc}/{entry}/comm").rstrip("\n") == want:
                    pids.append(int(entry))
    return pids


def _under(path: str, mountpoint: str) -> bool:
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def uses_mountpoint(pid: int, mountpoint: str, proc: Path = PROC) -> bool:
    """True if the process's cwd or one of its open files lies under `mountpoint`.

    Tells the point's workload from other processes of the same name (another
    fio on the machine) without relying on process ancestry.
    """
    with contextlib.suppress(OSError):
        if _under(os.readlink(f"{proc}/{pid}/cwd"), mountpoint):
            return True
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"{proc}/{pid}/fd"):
            with contextlib.suppress(OSError):
                if _under(os.readlink(f"{proc}/{pid}/fd/{fd}"), mountpoint):
                    return True
    return False


class OffcpuSampler:
    """Draws thread subsets within a CPU budget and folds what they wait on."""

    def __init__(
        self,
        comm: str,
        *,
        mountpoint: str = "",
        proc: Path = PROC,
        interval_s: float = 0.1,
        cpu_budget: float = DEFAULT_CPU_BUDGET,
        max_threads_per_sample: int = 4096,
        rescan_s: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not comm and not mountpoint:
            raise ValueError("a sampler needs a process name or a mountpoint")
        self.comm = comm
        self.mountpoint = mountpoint
        self.proc = proc
        self.interval_s = interval_s
        self._known: set[int] = set()  # pids seen using the mountpoint
        self.ignored_pids: set[int] = set()  # same comm, elsewhere
        # comm "": any process working in the mountpoint; one found elsewhere is not
        # looked at again (the workload's start there, with their cwd in it)
        self._elsewhere: set[int] = set()
        self.cpu_budget = cpu_budget
        self.max_threads = max_threads_per_sample
        self.rescan_s = rescan_s
        self.profile = OffcpuProfile()
        self.cpu_s = 0.0
        self.sample_cpu_s: list[float] = []
        self.threads_per_sample: list[int] = []
        self._rng = random.Random(seed)
        self._threads: list[tuple[int, int]] = []
        self._last_scan = -math.inf
        self._cost_per_thread_s = 50e-6  # first guess, learnt from each sample
        self.unreadable_stacks = 0

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._last_scan < self.rescan_s:
            return
        self._last_scan = now
        threads: list[tuple[int, int]] = []
        for pid in find_processes(self.comm, self.proc):
            if pid in self._elsewhere:
                continue
            if self.mountpoint and pid not in self._known:
                if not uses_mountpoint(pid, self.mountpoint, self.proc):
                    (self.ignored_pids if self.comm else self._elsewhere).add(pid)
                    continue
                self._known.add(pid)
                self.ignored_pids.discard(pid)
            with contextlib.suppress(OSError):
                threads.extend((pid, int(t)) for t in os.listdir(f"{self.proc}/{pid}/task"))
        self._threads = threads

    def subset_size(self) -> int:
        budget_s = self.cpu_budget * self.interval_s
        return max(1, min(self.max_threads, int(budget_s / max(self._cost_per_thread_s, 1e-7))))

    def sample(self) -> None:
        """One sampling round."""
        cpu0 = time.thread_time()
        self._refresh()
        population = len(self._threads)
        if population == 0:
            self.cpu_s += time.thread_time() - cpu0
            return
        k = min(population, self.subset_size())
        chosen = self._threads if k == population else self._rng.sample(self._threads, k)
        weight = population / k
        for pid, tid in chosen:
            base = f"{self.proc}/{pid}/task/{tid}"
            try:
                state = parse_stat_state(_read(f"{base}/stat"))
                frames: list[str] = []
                wchan = ""
                if state in BLOCKED_STATES:
                    try:
                        frames = parse_stack(_read(f"{base}/stack"))
                    except PermissionError:
                        self.unreadable_stacks += 1
                    wchan = parse_wchan(_read(f"{base}/wchan"))
            except OSError:  # the thread exited meanwhile
                continue
            self.profile.add(self.comm, state, frames, wchan, weight)
        self.profile.samples += 1
        self.profile.population_total += population
        spent = time.thread_time() - cpu0
        self.cpu_s += spent
        self.sample_cpu_s.append(spent)
        self.threads_per_sample.append(k)
        # learn the cost per thread (smoothed) so the next subset fits the budget
        self._cost_per_thread_s = 0.7 * self._cost_per_thread_s + 0.3 * (spent / k)


# --------------------------------------------------------------------------
# The collector


class OffcpuOptions(CollectorOptions):
    cpu_budget: Annotated[float, Field(gt=0, le=0.5)] = DEFAULT_CPU_BUDGET  # of one CPU


class OffcpuCollector(Collector):
    """Sampled kernel stacks of the workload's blocked threads (off-CPU profile)."""

    name: ClassVar[str] = "offcpu"
    Options: ClassVar[type[CollectorOptions]] = OffcpuOptions
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
        (
            "offcpu.wchan.**.threads_mean",
            MetricDef("none", "threads", "mean threads blocked in this kernel function"),
        ),
        ("offcpu.*threads_mean", MetricDef("none", "threads", "mean threads per state sample")),
        ("offcpu.**", MetricDef("none", "", "off-CPU (blocked thread) statistics")),
    )
    no_data: ClassVar[str] = "no thread of the workload was seen blocked in the kernel"

    def __init__(
        self,
        *,
        proc: Path = PROC,
        interval_s: float = 0.1,
        cpu_budget: float = DEFAULT_CPU_BUDGET,
        seed: int | None = None,
        only_mountpoint: bool = True,
    ) -> None:
        self.proc = proc
        self.interval_s = interval_s
        self.cpu_budget = cpu_budget
        self.seed = seed
        self.only_mountpoint = only_mountpoint
        self._sampler: OffcpuSampler | None = None
        self._ticker: Ticker | None = None
        self._ramp_end = 0.0

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/stack").exists():
            return "kernel has no /proc/<pid>/stack (CONFIG_STACKTRACE off)"
        if os.geteuid() != 0:
            return "reading kernel stacks in /proc/<pid>/stack needs root"
        return None

    def begin(self, ctx: PointContext) -> None:
        if not self.proc.is_dir():
            raise Unavailable(f"{self.proc} does not exist")
        by_mount = self.only_mountpoint or not ctx.workload_comm  # "": known by it alone
        self._sampler = OffcpuSampler(
            ctx.workload_comm,
            mountpoint=ctx.mountpoint if by_mount else "",
            proc=self.proc,
            interval_s=self.interval_s,
            cpu_budget=self.cpu_budget,
            seed=self.seed,
        )
        self._ramp_end = time.monotonic() + ctx.ramp_s
        self._ticker = Ticker(self._tick, self.interval_s, "fslab-offcpu")
        self._ticker.start()

    def _tick(self) -> None:
        if self._sampler is not None and time.monotonic() >= self._ramp_end:
            self._sampler.sample()

    def end(self) -> CollectorResult:
        assert self._ticker is not None and self._sampler is not None
        self._ticker.stop()
        sampler = self._sampler
        prof = sampler.profile
        if self._ticker.error is not None:
            return CollectorResult(status="failed", reason=f"sampler: {self._ticker.error!r}")
        if prof.samples == 0:
            where = f" using {sampler.mountpoint}" if sampler.mountpoint else ""
            named = f" named {sampler.comm!r}" if sampler.comm else ""
            return CollectorResult(
                status="failed", reason=f"no thread of a process{named}{where} was seen"
            )
        metrics = prof.metrics()
        metrics["offcpu.collector_cpu_s"] = sampler.cpu_s
        metrics["offcpu.sample_cpu_ms_mean"] = 1000 * sampler.cpu_s / prof.samples
        metrics["offcpu.threads_per_sample_mean"] = sum(sampler.threads_per_sample) / len(
            sampler.threads_per_sample
        )
        reasons = []
        if sampler.ignored_pids:
            reasons.append(
                f"ignored {len(sampler.ignored_pids)} other {sampler.comm!r} process(es) "
                "not using the mountpoint"
            )
        if sampler.unreadable_stacks:
            reasons.append(f"{sampler.unreadable_stacks} stacks unreadable (not root?)")
        return CollectorResult(
            metrics=metrics,
            artifacts={
                "profile.offcpu.folded": prof.folded(),
                "offcpu.top.tsv": prof.top_tsv(),
            },
            reason="; ".join(reasons),
        )
