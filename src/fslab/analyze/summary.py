"""Per configuration and sweep value: the headline figure over repetitions.

The spread is the minimum and maximum of the repetitions (not a standard
deviation): with the handful of repetitions a campaign has, the range is the
honest description. Latency is the median over repetitions of each
repetition's p99 from merged histogram bins; percentiles are never averaged.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fslab.store.db import PointRow

HEADLINE_CANDIDATES = (
    "fio.total.iops",
    "fio.write.iops",
    "fio.read.iops",
    "dd.bw_bytes_s",
)
LATENCY_CANDIDATES = (
    "fio.sync.lat_ns_p99",
    "fio.write.clat_ns_p99",
    "fio.read.clat_ns_p99",
)


def pick_metric(
    candidates: Sequence[str], metric_sets: Sequence[Mapping[str, float]]
) -> str | None:
    """The first candidate present in any point (so one campaign uses one headline)."""
    for name in candidates:
        if any(name in metrics for metrics in metric_sets):
            return name
    return None


@dataclass
class SummaryRow:
    config: str
    sweep: dict[str, Any]
    n_ok: int
    n_failed: int
    headline: str | None
    median: float | None
    minimum: float | None
    maximum: float | None
    latency: str | None
    latency_median: float | None
    values: list[float] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sweep_key(sweep: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in sweep.items())


def summarize(
    points: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]]
) -> list[SummaryRow]:
    """One row per (configuration, sweep values), in first-seen spec order."""
    ok_metrics = [metrics.get(p.id, {}) for p in points if p.status == "ok"]
    headline = pick_metric(HEADLINE_CANDIDATES, ok_metrics)
    latency = pick_metric(LATENCY_CANDIDATES, ok_metrics)
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[PointRow]] = {}
    for point in sorted(points, key=lambda p: p.seq):
        groups.setdefault((point.config, _sweep_key(point.sweep)), []).append(point)
    config_order = list(dict.fromkeys(p.config for p in sorted(points, key=lambda p: p.seq)))
    rows: list[SummaryRow] = []
    for (config, _), members in sorted(
        groups.items(), key=lambda item: (config_order.index(item[0][0]), item[1][0].seq)
    ):
        rows.append(_row(config, members, metrics, headline, latency))
    return rows


def _row(
    config: str,
    members: Sequence[PointRow],
    metrics: Mapping[int, Mapping[str, float]],
    headline: str | None,
    latency: str | None,
) -> SummaryRow:
    ok = [p for p in members if p.status == "ok"]
    values = [metrics[p.id][headline] for p in ok if headline and headline in metrics.get(p.id, {})]
    lat_values = [
        metrics[p.id][latency] for p in ok if latency and latency in metrics.get(p.id, {})
    ]
    facts: dict[str, Any] = {}
    for p in ok:
        for key in ("ext4_watermark_bytes", "below_ext4_watermark"):
            if key in p.facts:
                facts[key] = p.facts[key]
        free = metrics.get(p.id, {}).get("fs.free_bytes_start")
        if free is not None:
            facts.setdefault("free_bytes_start", free)
        if "fs.fill_bytes" in metrics.get(p.id, {}):
            facts["filled"] = True
    return SummaryRow(
        config=config,
        sweep=dict(members[0].sweep),
        n_ok=len(ok),
        n_failed=sum(1 for p in members if p.status == "failed"),
        headline=headline,
        median=statistics.median(values) if values else None,
        minimum=min(values) if values else None,
        maximum=max(values) if values else None,
        latency=latency,
        latency_median=statistics.median(lat_values) if lat_values else None,
        values=values,
        facts=facts,
    )
