"""All collectors by name, and what `fslab doctor` says about each.

`ALL_COLLECTORS` is built on first access (PEP 562 module `__getattr__`), so
importing the registry never imports the perf collector; if that module is
missing or broken, "perf" maps to a stand-in that reports why.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, ClassVar

from fslab.collect.base import Collector, CollectorResult, PointContext
from fslab.collect.jbd2 import Jbd2Collector
from fslab.collect.offcpu import OffcpuCollector
from fslab.collect.sysstat import SysstatCollector
from fslab.collect.tpcounters import TpCountersCollector
from fslab.collect.workqueue import WorkqueueCollector

_LAZY = {"perf": ("fslab.collect.perf", "PerfCollector")}
_EAGER: dict[str, type[Collector]] = {
    WorkqueueCollector.name: WorkqueueCollector,
    TpCountersCollector.name: TpCountersCollector,
    Jbd2Collector.name: Jbd2Collector,
    OffcpuCollector.name: OffcpuCollector,
    SysstatCollector.name: SysstatCollector,
}
_cache: dict[str, type[Collector]] | None = None

if TYPE_CHECKING:
    ALL_COLLECTORS: dict[str, type[Collector]]


def _broken(collector_name: str, why: str) -> type[Collector]:
    """A collector class that is always unavailable, carrying the import error."""

    class Broken(Collector):
        name: ClassVar[str] = collector_name

        @classmethod
        def unavailable_reason(cls) -> str | None:
            return why

        def start(self, ctx: PointContext) -> None:
            pass

        def stop(self) -> CollectorResult:
            return CollectorResult(status="unavailable", reason=why)

    Broken.__name__ = f"Unavailable_{collector_name}"
    return Broken


def _load_lazy(name: str) -> type[Collector]:
    module_name, class_name = _LAZY[name]
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except Exception as exc:  # ImportError, or an error inside that module
        return _broken(name, f"cannot load {module_name}.{class_name}: {exc}")


def all_collectors() -> dict[str, type[Collector]]:
    """Collector classes by name (the perf collector is imported on first call)."""
    global _cache
    if _cache is None:
        _cache = {**{name: _load_lazy(name) for name in _LAZY}, **_EAGER}
    return dict(_cache)


def availability() -> dict[str, str | None]:
    """Collector name -> None when usable here, else the reason (never raises)."""
    out: dict[str, str | None] = {}
    for name, cls in all_collectors().items():
        try:
            out[name] = cls.unavailable_reason()
        except Exception as exc:
            out[name] = f"check failed: {type(exc).__name__}: {exc}"
    return out


def __getattr__(attr: str) -> dict[str, type[Collector]]:
    if attr == "ALL_COLLECTORS":
        return all_collectors()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
