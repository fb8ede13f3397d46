"""All collectors and probes by name, what `fslab doctor` says about each collector,
and their metric catalog.

Adding a collector: its module (a Collector subclass declaring its name, Options,
catalog and no_data) and one line here; the spec, the runner, the catalog and
the reports follow from these declarations. Adding a probe (collect.probe): its
class and one line in ALL_PROBES; the runner runs every one around every run.
"""

from __future__ import annotations

from fslab.base.vocab import CatalogEntry
from fslab.collect.base import Collector
from fslab.collect.cpuspeed import SpeedProbe
from fslab.collect.jbd2 import Jbd2Collector
from fslab.collect.offcpu import OffcpuCollector
from fslab.collect.others import OthersProbe
from fslab.collect.perf import PerfCollector
from fslab.collect.probe import Probe
from fslab.collect.sysstat import StealProbe, SysstatCollector
from fslab.collect.tpcounters import TpCountersCollector
from fslab.collect.workqueue import WorkqueueCollector

ALL_COLLECTORS: dict[str, type[Collector]] = {
    cls.name: cls
    for cls in (
        PerfCollector,
        OffcpuCollector,
        WorkqueueCollector,
        TpCountersCollector,
        Jbd2Collector,
        SysstatCollector,
    )
}

# begun in this order before the workload, ended in the reverse order after it
ALL_PROBES: dict[str, type[Probe]] = {
    cls.name: cls for cls in (StealProbe, OthersProbe, SpeedProbe)
}


def availability() -> dict[str, str | None]:
    """Collector name -> None when usable here, else the reason (never raises)."""
    out: dict[str, str | None] = {}
    for name, cls in ALL_COLLECTORS.items():
        try:
            out[name] = cls.unavailable_reason()
        except Exception as exc:
            out[name] = f"check failed: {type(exc).__name__}: {exc}"
    return out


def collector_catalog() -> tuple[CatalogEntry, ...]:
    """Every collector's declared metric families, in registry order."""
    return tuple(entry for cls in ALL_COLLECTORS.values() for entry in cls.catalog)


def collector_of_family(family: str) -> type[Collector] | None:
    """The collector that writes metrics whose names start with `family.`."""
    return next((c for c in ALL_COLLECTORS.values() if family in c.families()), None)
