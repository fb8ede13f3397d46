"""How fast the CPUs ran while the workload ran: a fixed loop timed beside it.

A virtual CPU can run slower for tens of seconds without the guest counting
any steal (a busy hyperthread sibling on the host, a lower host clock): the
same CPU time does less work, and a CPU-bound workload loses throughput in
proportion. /proc/stat does not see it, so the runner times a fixed piece of
work beside every run, clean or not (SpeedProbe, one of its probes:
collect.probe): SPEED_LOOPS iterations of a small pure-Python loop, every
SPEED_INTERVAL_S, on each allowed CPU in turn, in the thread's own CPU time
(so the probe's own preemption and steal do not count). The median over the
run is the run's probe time: higher is slower.

Its cost is stated with it (`speed_probe_cpu_pct`, the probe's own CPU time
as a share of all CPUs over the window), and is never more than
MAX_SPEED_DUTY of one CPU (it waits longer where a sample is slow, as under
emulation). The median, because a single sample spreads (the vCPU's speed
really does vary from one millisecond to the next). What it costs and how
well it reads: docs/collectors.md, "What every run records".
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from typing import ClassVar

from fslab.collect.probe import Probe

SPEED_LOOPS = 4000
SPEED_INTERVAL_S = 0.1
MIN_SPEED_SAMPLES = 5
# the probe waits long enough after each sample to stay under this share of one CPU: on
# a native or KVM CPU the 0.1 s interval holds; under emulation (qemu TCG) a sample
# takes far longer, and the probe backs off (docs/collectors.md)
MAX_SPEED_DUTY = 0.006


def fixed_work(loops: int = SPEED_LOOPS) -> int:
    """The probe's unit of work: integer arithmetic on a few locals, no memory traffic."""
    total = 0
    for i in range(loops):
        total += i * i & 0xFF
    return total


class SpeedProbe(Probe):
    """`with SpeedProbe() as probe: <workload>`, then `probe.facts()` (collect.probe)."""

    name: ClassVar[str] = "speed"
    fact_names: ClassVar[tuple[str, ...]] = (
        "speed_probe_us",
        "speed_probe_samples",
        "speed_probe_cpu_pct",
    )

    def __init__(self, interval_s: float = SPEED_INTERVAL_S, loops: int = SPEED_LOOPS) -> None:
        self.interval_s = interval_s
        self.loops = loops
        self.samples_ns: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="fslab-speed-probe", daemon=True)
        self._window_s = 0.0
        self._started = 0.0

    def begin(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def end(self) -> None:
        self._stop.set()
        self._thread.join()
        self._window_s = time.monotonic() - self._started

    def _sample(self) -> None:
        try:
            cpus = sorted(os.sched_getaffinity(0))
        except OSError:
            cpus = []
        turn = 0
        while not self._stop.is_set():
            if cpus:  # each CPU in turn: a slow one is as likely to be sampled as a fast one
                try:
                    os.sched_setaffinity(0, {cpus[turn % len(cpus)]})  # this thread only
                except OSError:
                    cpus = []
                turn += 1
            before = time.thread_time_ns()
            fixed_work(self.loops)
            took_ns = time.thread_time_ns() - before
            self.samples_ns.append(took_ns)
            self._stop.wait(max(self.interval_s, took_ns / 1e9 / MAX_SPEED_DUTY))

    def facts(self) -> dict[str, float]:
        """speed_probe_us (the median probe time, in µs of the thread's CPU time), its
        sample count and its cost; {} with fewer than MIN_SPEED_SAMPLES samples."""
        if len(self.samples_ns) < MIN_SPEED_SAMPLES or self._window_s <= 0:
            return {}
        cpus = os.cpu_count() or 1
        return {
            "speed_probe_us": round(statistics.median(self.samples_ns) / 1000.0, 3),
            "speed_probe_samples": len(self.samples_ns),
            "speed_probe_cpu_pct": round(
                100.0 * sum(self.samples_ns) / 1e9 / self._window_s / cpus, 4
            ),
        }
