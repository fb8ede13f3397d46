"""All collectors by name, and what `fslab doctor` says about each."""

from __future__ import annotations

from fslab.collect.base import Collector
from fslab.collect.jbd2 import Jbd2Collector
from fslab.collect.offcpu import OffcpuCollector
from fslab.collect.perf import PerfCollector
from fslab.collect.sysstat import SysstatCollector
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


def availability() -> dict[str, str | None]:
    """Collector name -> None when usable here, else the reason (never raises)."""
    out: dict[str, str | None] = {}
    for name, cls in ALL_COLLECTORS.items():
        try:
            out[name] = cls.unavailable_reason()
        except Exception as exc:
            out[name] = f"check failed: {type(exc).__name__}: {exc}"
    return out
