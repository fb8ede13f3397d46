"""Drift checks: what differs between the machines two campaigns ran on.

Reviewers of a performance claim ask first whether anything but the change
under test differed: the kernel command line (mitigations, isolcpus), the
CPU, its frequency governor, the tools that measured. A comparison states
each difference it finds as a warning; a fact one side did not record
(campaigns stored before fslab recorded it) is not a difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from fslab.hostfacts import HostFacts

#: (host fact, what to call it), in the order warnings are given.
CHECKED_FACTS: tuple[tuple[str, str], ...] = (
    ("kernel_cmdline", "kernel command line"),
    ("cpu_model", "CPU model"),
    ("cpu_governor", "CPU frequency governor"),
    ("fio_version", "fio version"),
    ("perf_version", "perf version"),
    ("fslab_version", "fslab version"),
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


def _cut(text: str) -> str:
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."
