"""The contract every probe follows: an always-on measurement around each run.

A collector observes what the kernel did and runs only when the point's role
is instrumented (collect.base); a probe says how much of the machine the
workload had, and runs beside every workload, clean repetitions included:
steal and idle (/proc/stat), other processes' CPU (collect.others), the
CPUs' speed (collect.cpuspeed). Analysis takes their facts out as
covariates (analyze.noise), so they must be cheap and never fail a point.

The runner (fslab.measure.point.probing) loops over the registry
(collect.registry.ALL_PROBES): it makes each probe (no arguments), calls
`begin()` just before the workload starts and `end()` just after it ends (in
the reverse order, also when the workload fails), then `facts()`. Their facts
together are the point's `host_cpu` (fslab.store.facts.HostCpuFacts), whose
fields are what a probe may record: each probe declares its own in
`fact_names` and returns a subset of them. A probe that cannot read what it
needs records nothing ({}); one that raises is left out, never the point.

Adding a probe: its class here or in its module, one line in the registry,
and its facts as HostCpuFacts fields (the store writes them strictly).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self


class Probe(ABC):
    """One always-on measurement around a workload run: begin(), end(), facts()."""

    name: ClassVar[str]
    fact_names: ClassVar[tuple[str, ...]]  # the host_cpu facts it may record

    @abstractmethod
    def begin(self) -> None:
        """Just before the workload starts: read or start what it needs (quickly)."""

    @abstractmethod
    def end(self) -> None:
        """Just after the workload ends: read again, or stop what begin() started."""

    @abstractmethod
    def facts(self) -> dict[str, float]:
        """After end(): its facts, a subset of `fact_names`; {} when it has none."""

    def __enter__(self) -> Self:
        self.begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.end()


def read_proc_stat(proc: Path = Path("/proc")) -> str:
    """/proc/stat's text ("" where it cannot be read: the run goes on without it)."""
    try:
        return (proc / "stat").read_text()
    except OSError:
        return ""
