"""The whole metric catalog: those each benchmark declares (workload/registry.py) and
those each collector declares (collect/registry.py).

fslab.base.vocab explains the patterns and why directions are declared, never guessed.
"""

from __future__ import annotations

from fslab.base.format import format_metric
from fslab.base.vocab import UNKNOWN, Catalog, CatalogEntry, Direction, MetricDef
from fslab.collect.registry import collector_catalog
from fslab.workload.registry import generation, workload_catalog

__all__ = ["CATALOG", "UNKNOWN", "Direction", "MetricDef", "format_value", "metric_def"]


class _Current:
    """The catalog of the benchmarks registered now (a test or plugin may add one), rebuilt
    only when they change. First match wins; the families do not overlap, so the order
    across them does not matter."""

    def __init__(self) -> None:
        self._generation = -1
        self._catalog = Catalog(())

    def _get(self) -> Catalog:
        if self._generation != generation():
            self._catalog = Catalog(workload_catalog() + collector_catalog())
            self._generation = generation()
        return self._catalog

    @property
    def entries(self) -> tuple[CatalogEntry, ...]:
        return self._get().entries

    def lookup(self, name: str) -> MetricDef:
        return self._get().lookup(name)

    def covers(self, name: str) -> bool:
        return self._get().covers(name)


CATALOG = _Current()


def metric_def(name: str) -> MetricDef:
    """The declared definition of a metric; unknown names get direction "none"."""
    return CATALOG.lookup(name)


def format_value(metric: str | None, value: float | None, *, word: bool = False) -> str:
    """A metric's value in the spelling of its declared unit (fslab.base.format):
    31.2K, 43.8MB/s, 1.20ms; `word`: 31.2K IOPS; "-" when there is none."""
    if metric is None or value is None:
        return "-"
    return format_metric(value, metric_def(metric).unit, word=word)
