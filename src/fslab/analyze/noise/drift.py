"""Drift checks: what differs between the machines two campaigns ran on.

Reviewers of a performance claim ask first whether anything but the change
under test differed: the kernel command line (mitigations, isolcpus), the
CPU, its frequency governor, the tools that measured. A comparison states
each difference it finds as a warning; a fact one side did not record
(campaigns stored before fslab recorded it) is not a difference. Beside the
host's facts, its load: a hypervisor that gives the CPUs to other guests
(steal) slows a CPU-bound workload (docs/statistics.md, "The host's own
load: steal"), so sides whose runs saw different steal are warned about
too; and so are sides whose runs shared the machine with different amounts
of other processes' CPU (collect.others: a test suite or a build running
beside a campaign).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fslab.base.hostfacts import HostFacts
from fslab.store.facts import PointFacts

#: (host fact, what to call it), in the order warnings are given.
CHECKED_FACTS: tuple[tuple[str, str], ...] = (
    ("kernel_cmdline", "kernel command line"),
    ("cpu_model", "CPU model"),
    ("cpu_governor", "CPU frequency governor"),
    ("fio_version", "fio version"),
    ("perf_version", "perf version"),
    ("fslab_version", "fslab version"),
)
STEAL_FACT = "steal_pct"
OTHERS_FACT = "others_cpu_pct"
#: (host_cpu fact, what to call it, points of all CPUs): sides whose runs' medians lie
#: further apart than that are warned about. Steal costs a CPU-bound workload about its
#: own share; other processes' CPU is noisier (their bursts), so the bar is higher.
LOAD_FACTS: tuple[tuple[str, str, float], ...] = (
    (STEAL_FACT, "CPU time the host took (steal)", 2.0),
    (OTHERS_FACT, "CPU time other processes took", 5.0),
)
VALUE_WIDTH = 60  # a long command line is cut in the warning (the JSON has it whole)


@dataclass(frozen=True)
class Drift:
    """One host fact that differs between baseline and candidate."""

    fact: str
    label: str
    baseline: str
    candidate: str

    def describe(self) -> str:
        if self.fact == "kernel_cmdline":
            # a command line is long: say which words differ
            a, b = self.baseline.split(), self.candidate.split()
            only_a = " ".join(w for w in a if w not in b) or "-"
            only_b = " ".join(w for w in b if w not in a) or "-"
            return (
                f"drift: {self.label} differs: baseline only {_cut(only_a)!r}, "
                f"candidate only {_cut(only_b)!r}"
            )
        if self.fact in (STEAL_FACT, OTHERS_FACT):
            whose = "host" if self.fact == STEAL_FACT else "machine"
            return (
                f"drift: {self.label} differs: {self.baseline}% of the CPUs in the baseline's "
                f"runs vs {self.candidate}% in the candidate's (median): a busy {whose} slows "
                f"a CPU-bound workload, so part of any difference may be the {whose}'s"
            )
        return (
            f"drift: {self.label} differs: {_cut(self.baseline)!r} (baseline) vs "
            f"{_cut(self.candidate)!r} (candidate)"
        )

    def to_dict(self) -> dict[str, str]:
        return {
            "fact": self.fact,
            "label": self.label,
            "baseline": self.baseline,
            "candidate": self.candidate,
        }


def host_drift(baseline: HostFacts, candidate: HostFacts) -> list[Drift]:
    """Every checked fact recorded on both sides with different values."""
    found = []
    for fact, label in CHECKED_FACTS:
        a, b = baseline.fact(fact), candidate.fact(fact)
        if a is None or b is None or str(a) == str(b):
            continue
        found.append(Drift(fact, label, str(a), str(b)))
    return found


def load_drift(baseline: Sequence[PointFacts], candidate: Sequence[PointFacts]) -> list[Drift]:
    """Each LOAD_FACTS fact, median over each side's runs, when the medians lie further
    apart than its bar (runs stored before fslab recorded it are left out)."""
    found = []
    for fact, label, bar in LOAD_FACTS:
        a, b = (_median(runs, fact) for runs in (baseline, candidate))
        if a is not None and b is not None and abs(a - b) > bar:
            found.append(Drift(fact, label, f"{a:.1f}", f"{b:.1f}"))
    return found


def _median(runs: Sequence[PointFacts], fact: str) -> float | None:
    values = [
        value
        for f in runs
        if f.host_cpu is not None and (value := getattr(f.host_cpu, fact)) is not None
    ]
    return statistics.median(values) if values else None


def _cut(text: str) -> str:
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."
