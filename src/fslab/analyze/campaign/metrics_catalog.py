"""The whole metric catalog: the workload's entries (fslab.base.vocab) and those each
collector declares (collect/registry.py).

fslab.base.vocab explains the patterns and why directions are declared, never guessed.
"""

from __future__ import annotations

from fslab.base.format import format_metric
from fslab.base.vocab import UNKNOWN, WORKLOAD_CATALOG, Catalog, Direction, MetricDef
from fslab.collect.registry import collector_catalog

__all__ = ["CATALOG", "UNKNOWN", "Direction", "MetricDef", "format_value", "metric_def"]

# first match wins; the families do not overlap, so the order across them does not matter
CATALOG = Catalog(WORKLOAD_CATALOG + collector_catalog())


def metric_def(name: str) -> MetricDef:
    """The declared definition of a metric; unknown names get direction "none"."""
    return CATALOG.lookup(name)


def format_value(metric: str | None, value: float | None, *, word: bool = False) -> str:
    """A metric's value in the spelling of its declared unit (fslab.base.format):
    31.2K, 43.8MB/s, 1.20ms; `word`: 31.2K IOPS; "-" when there is none."""
    if metric is None or value is None:
        return "-"
    return format_metric(value, metric_def(metric).unit, word=word)
