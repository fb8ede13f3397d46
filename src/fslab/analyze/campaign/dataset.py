"""One campaign's stored results, shaped for analysis.

Analysis reads only the store (one direction: docs/architecture.md); this module is the one
place that turns rows into the shapes the statistics want: per-repetition
values keyed by sweep point, and curves over a concurrency axis.

It applies the run model's one rule for which rows count (fslab.base.roles,
is_headline_run): headline statistics (values, curves, summaries,
comparisons, scaling, --until-ci) see only the headline rows, clean and
inline; collector evidence is read through `evidence_row`, and how much the
instruments moved a point through `perturbation`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from fslab.analyze.campaign.summary import Perturbation, campaign_metrics, perturbation_of
from fslab.base.roles import instrumented, is_evidence_run, is_headline_run
from fslab.base.vocab import PointKey, point_key
from fslab.spec.points import CONCURRENCY_AXES
from fslab.store.db import CampaignRow, PointRow, Store

__all__ = ["CONCURRENCY_AXES", "CampaignData", "Perturbation", "load_campaign"]


@dataclass
class CampaignData:
    campaign: CampaignRow
    points: list[PointRow]
    metrics: dict[int, dict[str, float]]
    headline: str | None = field(init=False)
    latency: str | None = field(init=False)

    def __post_init__(self) -> None:
        self.headline, self.latency = campaign_metrics(self.points, self.metrics)

    @property
    def id(self) -> int:
        return self.campaign.id

    def configs(self) -> list[str]:
        return list(dict.fromkeys(p.config for p in self.points))

    def configs_with_results(self) -> list[str]:
        """The configurations with a successful headline repetition, in configuration order."""
        ok = {p.config for p in self.ok_points()}
        return [c for c in self.configs() if c in ok]

    def baseline_config(self) -> str | None:
        """The configuration every other is compared against, by `compare` and the report alike:
        the first one with a successful headline repetition (a first configuration whose every
        point failed has nothing to be compared against), else the first; None without points."""
        return next(iter(self.configs_with_results()), None) or next(iter(self.configs()), None)

    def fs_type(self, config: str) -> str:
        return next(p.fs_type for p in self.points if p.config == config)

    def axes(self) -> list[str]:
        return list(dict.fromkeys(axis for p in self.points for axis in p.sweep))

    def concurrency_axis(self) -> str | None:
        return next((a for a in CONCURRENCY_AXES if a in self.axes()), None)

    def ok_points(self, config: str | None = None) -> list[PointRow]:
        """Successful headline repetitions (clean and inline; never evidence runs)."""
        return [
            p for p in self.points if is_headline_run(p) and (config is None or p.config == config)
        ]

    def evidence_points(self, config: str | None = None) -> list[PointRow]:
        """Successful evidence runs."""
        return [
            p for p in self.points if is_evidence_run(p) and (config is None or p.config == config)
        ]

    def evidence_row(self, config: str, key: PointKey) -> PointRow | None:
        """Where the collectors' evidence about a sweep point is read.

        The point's successful evidence run if there is one; else (campaigns
        run with --collect=inline, and older ones) the inline repetition whose
        headline is closest to the point's median; else None (no instrumented
        run at that point).
        """
        at_key = [p for p in self.evidence_points(config) if point_key(p.sweep) == key]
        if at_key:
            return at_key[-1]
        inline = [
            p for p in self.ok_points(config) if instrumented(p.role) and point_key(p.sweep) == key
        ]
        if not inline:
            return None
        if self.headline is None:
            return inline[0]
        scored = [
            (self.metrics[p.id][self.headline], p)
            for p in inline
            if self.headline in self.metrics.get(p.id, {})
        ]
        if not scored:
            return inline[0]
        middle = statistics.median(v for v, _ in scored)
        return min(scored, key=lambda item: (abs(item[0] - middle), item[1].seq))[1]

    def evidence_rows(self, config: str, key: PointKey) -> list[PointRow]:
        """Every successful evidence run at a sweep point, in run order (the diagnosis pools
        them and says how stable its ranking is across them); without one, the row
        `evidence_row` falls back to, if any."""
        at_key = [p for p in self.evidence_points(config) if point_key(p.sweep) == key]
        if at_key:
            return at_key
        row = self.evidence_row(config, key)
        return [row] if row is not None else []

    def typical_row(self, config: str, key: PointKey) -> PointRow | None:
        """The headline repetition that stands for a sweep point: the one whose headline
        is closest to the point's median (earliest on a tie), so one outlier does not
        speak for the point. None without a successful repetition with a headline."""
        if self.headline is None:
            return None
        runs = [
            (value, p)
            for p in self.ok_points(config)
            if point_key(p.sweep) == key
            and (value := self.metrics.get(p.id, {}).get(self.headline)) is not None
        ]
        if not runs:
            return None
        median = statistics.median(v for v, _ in runs)
        return min(runs, key=lambda item: (abs(item[0] - median), item[1].seq))[1]

    def perturbation(self, config: str, key: PointKey) -> Perturbation | None:
        """The evidence run's headline against the clean median at a sweep point
        (None without an evidence run or clean repetitions: see summary.perturbation_of)."""
        members = [p for p in self.points if p.config == config and point_key(p.sweep) == key]
        return perturbation_of(members, self.metrics, self.headline)

    def values(
        self, metric: str, config: str | None = None, *, drop_axes: Iterable[str] = ()
    ) -> dict[PointKey, list[float]]:
        """Per-repetition values of `metric` keyed by sweep point (in run order)."""
        result: dict[PointKey, list[float]] = {}
        for p in self.ok_points(config):
            value = self.metrics.get(p.id, {}).get(metric)
            if value is not None:
                result.setdefault(point_key(p.sweep, drop_axes), []).append(value)
        return result

    def metric_names(self) -> list[str]:
        return sorted({name for m in self.metrics.values() for name in m})

    def curve(
        self, config: str, metric: str, axis: str
    ) -> dict[PointKey, tuple[list[float], list[list[float]]]]:
        """Concurrency curves: for each combination of the other axes, (N, reps per N)."""
        curves: dict[PointKey, dict[float, list[float]]] = {}
        for p in self.ok_points(config):
            value = self.metrics.get(p.id, {}).get(metric)
            if value is None or axis not in p.sweep:
                continue
            rest = point_key(p.sweep, drop=[axis])
            curves.setdefault(rest, {}).setdefault(float(p.sweep[axis]), []).append(value)
        return {
            rest: (sorted(by_n), [by_n[n] for n in sorted(by_n)]) for rest, by_n in curves.items()
        }

    def point(self, point_id: int) -> PointRow:
        return next(p for p in self.points if p.id == point_id)


def load_campaign(store: Store, campaign_id: int) -> CampaignData:
    return CampaignData(
        campaign=store.campaign(campaign_id),
        points=store.points(campaign_id),
        metrics=store.metrics(campaign_id),
    )
