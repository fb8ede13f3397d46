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
that matches no declared pattern is "none" too. Each benchmark declares
its metrics, headline and labels beside its code (workload/registry.py gathers
them, with the runner's fs.*), and each collector its own family
(collect/registry.py).

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

from fslab.base.units import parse_size_bytes

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

PERCENTILES = ("p50", "p99", "p99_9")  # the latency percentiles the reports show


def pick_metric(
    candidates: Sequence[str], metric_sets: Iterable[Mapping[str, float]]
) -> str | None:
    """The first candidate present in any of the metric sets."""
    sets = list(metric_sets)
    return next((name for name in candidates if any(name in m for m in sets)), None)


# ------------------------------------------------------------------ names


def metric_safe(name: str) -> str:
    """A name (a workqueue, a kernel function) usable between the dots of a metric name."""
    return re.sub(r"[^A-Za-z0-9_+-]", "_", name) or "_"


# ------------------------------------------------------------------ sweep points


def point_key(sweep: Mapping[str, ScalarValue], drop: Iterable[str] = ()) -> PointKey:
    """A sweep point as a hashable key, axes in spec order; `drop` leaves axes out."""
    dropped = set(drop)
    return tuple((k, v) for k, v in sweep.items() if k not in dropped)


def sweep_order(key: PointKey) -> tuple[tuple[int, float, str], ...]:
    """How sweep points are listed: by value on each axis in spec order, sizes ("4k") as
    numbers, an empty value (no fill) first and words last, so a point a question added
    or a warm-up ran first still sits where its value puts it."""
    order: list[tuple[int, float, str]] = []
    for _, value in key:
        if value == "":
            order.append((0, 0.0, ""))
            continue
        try:
            number = float(value) if isinstance(value, (int, float)) else parse_size_bytes(value)
        except (TypeError, ValueError):
            order.append((2, 0.0, str(value)))
        else:
            order.append((1, float(number), ""))
    return tuple(order)


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
