"""The words fslab prints, decided once: metric names, labels, units, directions,
the headline and latency metric, and how a sweep point is keyed and named
(values are spelled by base/format.py, keyed by the units declared here).

Every table, report and command reads these; none keeps its own copy, so
`fslab show`, `fslab report` and the reply can never call the same number by
two names or print it in two units. It sits at the bottom of the layers (with
units and errors): the workload parsers, the collectors, the analysis and the
reports all import it, and it imports nothing of fslab's but units.

Metric catalog: the direction of a metric is part of its definition, declared
as data, never inferred from the value or guessed from words in the name: a
comparison calls a change "better" or "worse" only for metrics declared
"higher" or "lower". Evidence metrics (profiles, queueing delays, CPU shares,
counters) describe *why* something happened, not whether it is good, so they
are declared "none" and a comparison only says whether they changed. A name
that matches no declared pattern is "none" too. This module declares the
workload's metrics (fio, dd) and the runner's (fs.*); each collector declares
its own family beside its code (collect/registry.py gathers them).

Patterns are matched against the whole name, first match wins: ``*`` matches
any run of characters within one dot-separated segment (``clat_ns_p*``),
``**`` matches any run of characters including dots (``profile.inclusive.**``,
since kernel symbols such as ``foo.isra.0`` contain dots).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower", "none"]
ScalarValue = str | int | float | bool
PointKey = tuple[tuple[str, ScalarValue], ...]  # a sweep point: ((axis, value), ...) in spec order


@dataclass(frozen=True)
class MetricDef:
    """A metric family's declared meaning."""

    direction: Direction  # which way is better; "none": evidence, not good or bad
    unit: str  # as in the metric name: "IO/s", "B/s", "ns", "%", ...
    description: str


CatalogEntry = tuple[str, MetricDef]  # (pattern, definition)
UNKNOWN = MetricDef("none", "", "not in the catalog: direction unknown, so none")

# The workload's metrics (workload/fio_json.py, workload/dd.py) and the runner's fs.* facts.
WORKLOAD_CATALOG: tuple[CatalogEntry, ...] = (
    # --- fio: per direction (read, write, trim, total) and fsync ------------------------
    ("fio.*.iops", MetricDef("higher", "IO/s", "I/O operations per second, summed over jobs")),
    ("fio.*.bw_bytes_s", MetricDef("higher", "B/s", "bytes per second, summed over jobs")),
    ("fio.*.clat_ns_*", MetricDef("lower", "ns", "completion latency (merged histogram)")),
    ("fio.*.slat_ns_*", MetricDef("lower", "ns", "submission latency")),
    ("fio.*.lat_ns_*", MetricDef("lower", "ns", "total latency (fsync: time per fsync call)")),
    ("fio.*.io_bytes", MetricDef("none", "B", "bytes moved; set by runtime, not a score")),
    ("fio.sync.count", MetricDef("none", "calls", "fsync/fdatasync calls issued")),
    ("fio.cpu.*_pct", MetricDef("none", "%", "fio's CPU time share (user or system)")),
    ("fio.cpu.ctx", MetricDef("none", "switches", "context switches of fio jobs")),
    ("fio.runtime_s", MetricDef("none", "s", "measured run time")),
    ("fio.jobs", MetricDef("none", "jobs", "worker count fio reports")),
    # --- dd -----------------------------------------------------------------------------
    ("dd.bw_bytes_s", MetricDef("higher", "B/s", "bytes copied per second")),
    ("dd.seconds", MetricDef("lower", "s", "time to copy a fixed amount")),
    ("dd.bytes", MetricDef("none", "B", "bytes copied")),
    ("dd.iterations", MetricDef("none", "runs", "dd invocations in the point")),
    # --- the runner: filesystem state around the point ----------------------------------
    ("fs.**", MetricDef("none", "B", "filesystem state around the point (free space, fill)")),
)


def _compile(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*)", pattern)
    regex = "".join(
        ".*" if part == "**" else "[^.]*" if part == "*" else re.escape(part) for part in parts
    )
    return re.compile(regex + r"\Z")


class Catalog:
    """Metric definitions by pattern; the first matching pattern wins."""

    def __init__(self, entries: Iterable[CatalogEntry]) -> None:
        self.entries = tuple(entries)
        self._compiled = tuple((_compile(pattern), mdef) for pattern, mdef in self.entries)
        self._cache: dict[str, MetricDef] = {}

    def lookup(self, name: str) -> MetricDef:
        """The declared definition of a metric; unknown names get direction "none"."""
        found = self._cache.get(name)
        if found is None:
            found = next((m for regex, m in self._compiled if regex.match(name)), UNKNOWN)
            if len(self._cache) < 4096:
                self._cache[name] = found
        return found

    def covers(self, name: str) -> bool:
        return any(regex.match(name) for regex, _ in self._compiled)


# ------------------------------------------------------------------ headline and latency

# A campaign's headline: the first of these that any successful point has, so one
# campaign uses one headline (a randrw job is judged by its total, not by its writes).
HEADLINE_CANDIDATES = (
    "fio.total.iops",
    "fio.write.iops",
    "fio.read.iops",
    "fio.trim.iops",
    "dd.bw_bytes_s",
)
LATENCY_CANDIDATES = (
    "fio.sync.lat_ns_p99",
    "fio.write.clat_ns_p99",
    "fio.read.clat_ns_p99",
)
PERCENTILES = ("p50", "p99", "p99_9")  # the latency percentiles the reports show


def pick_metric(
    candidates: Sequence[str], metric_sets: Iterable[Mapping[str, float]]
) -> str | None:
    """The first candidate present in any of the metric sets."""
    sets = list(metric_sets)
    return next((name for name in candidates if any(name in m for m in sets)), None)


def headline_metric(metric_sets: Iterable[Mapping[str, float]]) -> str | None:
    """The headline of a campaign (all its successful points) or of one run."""
    return pick_metric(HEADLINE_CANDIDATES, metric_sets)


def latency_metric(metric_sets: Iterable[Mapping[str, float]]) -> str | None:
    return pick_metric(LATENCY_CANDIDATES, metric_sets)


# ------------------------------------------------------------------ labels

LABELS = {
    "fio.total.iops": "IOPS",
    "fio.write.iops": "write IOPS",
    "fio.read.iops": "read IOPS",
    "fio.trim.iops": "trim IOPS",
    "dd.bw_bytes_s": "dd rate",
    "fio.sync.lat_ns": "fsync latency",
    "fio.write.clat_ns": "write completion latency",
    "fio.read.clat_ns": "read completion latency",
}
_PERCENTILE_KIND = {"sync": "fsync", "write": "write", "read": "read"}


def metric_label(metric: str | None, *, missing: str = "-") -> str:
    """Short reader-facing names: "write IOPS", "fsync p99"; others as stored."""
    if not metric:
        return missing
    if metric in LABELS:
        return LABELS[metric]
    for pct in PERCENTILES:
        family = metric.removesuffix(f"_{pct}")
        if family != metric and family in LABELS:
            kind = _PERCENTILE_KIND[family.split(".")[1]]
            return f"{kind} {pct.replace('_', '.')}"
    return metric


# ------------------------------------------------------------------ names


def metric_safe(name: str) -> str:
    """A name (a workqueue, a kernel function) usable between the dots of a metric name."""
    return re.sub(r"[^A-Za-z0-9_+-]", "_", name) or "_"


# ------------------------------------------------------------------ sweep points


def point_key(sweep: Mapping[str, ScalarValue], drop: Iterable[str] = ()) -> PointKey:
    """A sweep point as a hashable key, axes in spec order; `drop` leaves axes out."""
    dropped = set(drop)
    return tuple((k, v) for k, v in sweep.items() if k not in dropped)


def value_label(value: object) -> str:
    """A sweep value as printed; an empty value (fill_leave_free="") is "(none)"."""
    text = str(value)
    return text if text != "" else "(none)"


def sweep_cell(sweep: Mapping[str, ScalarValue], axis: str) -> str:
    """A sweep value in a table's column for its axis; "-" where the point has no such axis."""
    return value_label(sweep[axis]) if axis in sweep else "-"


def point_label(key: PointKey | Mapping[str, ScalarValue], *, empty: str = "(no sweep)") -> str:
    """A sweep point as "numjobs=1024 fill_leave_free=(none)"; no axes at all: `empty`."""
    pairs = key.items() if isinstance(key, Mapping) else key
    return " ".join(f"{axis}={value_label(v)}" for axis, v in pairs) or empty
