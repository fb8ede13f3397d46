"""The whole metric catalog: the workload's entries (fslab.vocab) and those each
collector declares (collect/registry.py).

fslab.vocab explains the patterns and why directions are declared, never guessed.
"""

from __future__ import annotations

from fslab.collect.registry import collector_catalog
from fslab.vocab import UNKNOWN, WORKLOAD_CATALOG, Catalog, Direction, MetricDef

__all__ = ["CATALOG", "UNKNOWN", "Direction", "MetricDef", "metric_def"]

# first match wins; the families do not overlap, so the order across them does not matter
CATALOG = Catalog(WORKLOAD_CATALOG + collector_catalog())


def metric_def(name: str) -> MetricDef:
    """The declared definition of a metric; unknown names get direction "none"."""
    return CATALOG.lookup(name)
