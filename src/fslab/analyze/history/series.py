"""A spec's campaigns over time, kernels or commits, and where their level moved.

One value per campaign and sweep point: the median headline over the
campaign's runs. Change points are found as Otava (formerly hunter) finds
them: E-Divisive means proposes splits, and a Student's t test between the
segments on either side of each split keeps only the significant ones. With
exponent 2 the energy statistic of E-Divisive is the scaled squared
difference of segment means, so E-Divisive means is binary segmentation on
the l2 cost, which ruptures implements (``Binseg(model="l2")``). Candidates
are tested weakest first and the weakest insignificant one is dropped until
every remaining split is significant, each re-tested against its new
neighbours. Positive series (throughput, latency) are analysed as logs, as
their noise is multiplicative; the levels reported are geometric means.

`fslab series` (build_series) first takes the host's slowdowns (steal: see
analyze.noise.slowdown) out of every campaign's headline by the rule comparisons use
(analyze.noise.slowdown, fitted over the series' campaigns): a level that moved
with the host alone is no change of the thing measured. series_of takes the
campaigns as given, so a comparison can pass the ones it already adjusted
with its own fit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.verdicts import point_to_json
from fslab.analyze.noise.model import spec_fingerprint
from fslab.analyze.noise.slowdown import SlowdownFit, take_out_slowdown
from fslab.analyze.versus.comparisons import samples
from fslab.base.vocab import PointKey, point_label
from fslab.store.db import CampaignRow, Store

P_VALUE = 0.01  # a split is kept when the t test between its segments gives p below this
MIN_SEGMENT = 2  # campaigns: a single campaign off the level is an outlier, not a level


@dataclass(frozen=True)
class ChangePoint:
    """The level of one series moved at `index` (the first entry of the new level)."""

    index: int
    mean_before: float
    mean_after: float
    p_value: float

    @property
    def change_pct(self) -> float:
        return (self.mean_after / self.mean_before - 1.0) * 100.0 if self.mean_before else math.nan

    def to_dict(self) -> dict[str, float | int]:
        return {
            "index": self.index,
            "mean_before": self.mean_before,
            "mean_after": self.mean_after,
            "change_pct": self.change_pct,
            "p_value": self.p_value,
        }


def change_points(
    values: Sequence[float], *, p_value: float = P_VALUE, min_size: int = MIN_SEGMENT
) -> list[ChangePoint]:
    """Significant level shifts of a series (E-Divisive means + t test), in order."""
    import ruptures  # imported on use: only series and reports need it

    raw = np.asarray(values, dtype=float)
    if len(raw) < 2 * min_size or float(np.ptp(raw)) == 0.0:
        return []
    # throughput and latency vary by factors: levels and tests on the log scale
    logged = bool((raw > 0).all())
    x = np.log(raw) if logged else raw
    algo = ruptures.Binseg(model="l2", min_size=min_size, jump=1).fit(x.reshape(-1, 1))
    most = len(x) // min_size - 1
    candidates = sorted(algo.predict(n_bkps=most)[:-1]) if most > 0 else []
    while candidates:
        tested = [_test(x, candidates, i) for i in range(len(candidates))]
        worst = max(range(len(tested)), key=lambda i: tested[i].p_value)
        if tested[worst].p_value < p_value:
            if not logged:
                return tested
            return [
                ChangePoint(cp.index, math.exp(cp.mean_before), math.exp(cp.mean_after), cp.p_value)
                for cp in tested
            ]
        del candidates[worst]
    return []


def _test(x: np.ndarray, splits: Sequence[int], i: int) -> ChangePoint:
    """The t test between the segments on either side of split i (bounded by its neighbours)."""
    start = splits[i - 1] if i > 0 else 0
    end = splits[i + 1] if i + 1 < len(splits) else len(x)
    before, after = x[start : splits[i]], x[splits[i] : end]
    if np.var(before) == 0 and np.var(after) == 0:
        p = 0.0 if before.mean() != after.mean() else 1.0
    else:
        p = float(sps.ttest_ind(before, after, equal_var=True).pvalue)
    return ChangePoint(splits[i], float(before.mean()), float(after.mean()), p)


@dataclass
class SeriesEntry:
    """One campaign in a series: when, where, and its median headline per point."""

    campaign_id: int
    name: str
    started_at: str
    kernel: str
    host: str
    fingerprint: str
    medians: dict[PointKey, float]
    runs: dict[PointKey, int]
    candidate: str | None = None  # what `fslab bisect-run` measured (a commit), if it ran it

    def to_dict(self) -> dict[str, Any]:
        return {
            "campaign_id": self.campaign_id,
            "name": self.name,
            "started_at": self.started_at,
            "kernel": self.kernel,
            "host": self.host,
            "spec_fingerprint": self.fingerprint,
            "candidate": self.candidate,
            "points": [
                {"point": point_to_json(p), "median": m, "runs": self.runs[p]}
                for p, m in self.medians.items()
            ],
        }


@dataclass
class Series:
    """Campaigns of one spec (by name or fingerprint) in time order, with change points."""

    selector: str
    metric: str | None
    entries: list[SeriesEntry]
    points: list[PointKey]
    changes: dict[PointKey, list[ChangePoint]] = field(default_factory=dict)
    slowdown: SlowdownFit | None = None  # the fit the headlines were adjusted with

    def values(self, point: PointKey) -> tuple[list[int], list[float]]:
        """(entry indexes, medians) of the campaigns that have the point."""
        pairs = [(i, e.medians[point]) for i, e in enumerate(self.entries) if point in e.medians]
        return [i for i, _ in pairs], [v for _, v in pairs]

    def to_dict(self) -> dict[str, Any]:
        return {
            "selector": self.selector,
            "metric": self.metric,
            "campaigns": [e.to_dict() for e in self.entries],
            "change_points": [
                {
                    "point": point_to_json(point),
                    "label": point_label(point),
                    **cp.to_dict(),
                    "campaign_id": self.entries[cp.index].campaign_id,
                }
                for point, cps in self.changes.items()
                for cp in cps
            ],
            "method": f"E-Divisive means (ruptures Binseg l2) + t test, p < {P_VALUE}",
            "slowdown": self.slowdown.to_dict() if self.slowdown else None,
        }


def select_campaigns(
    store: Store, *, name: str | None = None, fingerprint: str | None = None
) -> list[CampaignRow]:
    """Campaigns with this name, or with this spec fingerprint, oldest first."""
    rows = [c for c in store.campaigns() if c.status != "running"]
    if name is not None:
        rows = [c for c in rows if c.name == name]
    if fingerprint is not None:
        rows = [c for c in rows if spec_fingerprint(c.spec) == fingerprint]
    return sorted(rows, key=lambda c: (c.started_at, c.id))


def build_series(
    store: Store, campaigns: Sequence[CampaignRow], selector: str, *, p_value: float = P_VALUE
) -> Series:
    """The series of the given campaigns: median headline per point with the host's
    slowdowns taken out (where they slow it: analyze.noise.slowdown), change points per point."""
    return series_without_slowdown(
        [load_campaign(store, c.id) for c in campaigns], selector, p_value=p_value
    )


def series_without_slowdown(
    loaded: Sequence[CampaignData], selector: str, *, p_value: float = P_VALUE
) -> Series:
    """series_of with the host's slowdowns taken out over these campaigns (noise.slowdown):
    their level is read as comparisons read it, and the series says whether it was."""
    adjusted, slowdown = take_out_slowdown(loaded)
    return series_of(adjusted, selector, p_value=p_value, slowdown=slowdown)


def series_of(
    loaded: Sequence[CampaignData],
    selector: str,
    *,
    p_value: float = P_VALUE,
    slowdown: SlowdownFit | None = None,
) -> Series:
    """The series of campaigns already loaded (in the order given: oldest first), their
    headline as given (nothing taken out here: a comparison passes the campaigns it
    adjusted with its own fit), so it finds its baselines' level moves by the rule
    `fslab series` shows; `slowdown`: the fit they were adjusted with, if any."""
    metric = next((d.headline for d in loaded if d.headline), None)
    entries = [_entry(d, metric) for d in loaded]
    points = list(dict.fromkeys(p for e in entries for p in e.medians))
    series = Series(selector, metric, entries, points, slowdown=slowdown)
    for point in points:
        indexes, values = series.values(point)
        found = change_points(values, p_value=p_value)
        if found:
            # positions in the point's own values -> positions in the series
            series.changes[point] = [
                ChangePoint(indexes[cp.index], cp.mean_before, cp.mean_after, cp.p_value)
                for cp in found
            ]
    return series


def _entry(data: CampaignData, metric: str | None) -> SeriesEntry:
    per_point = samples(data, [metric]) if metric else {}
    medians = {
        p: statistics.median(v[metric]) for p, v in per_point.items() if metric and v.get(metric)
    }
    host = data.campaign.host
    return SeriesEntry(
        campaign_id=data.id,
        name=data.campaign.name,
        started_at=data.campaign.started_at,
        kernel=str(host.fact("kernel_release") or "?"),
        host=str(host.fact("hostname") or "?"),
        fingerprint=spec_fingerprint(data.campaign.spec),
        medians=medians,
        runs={p: len(v[metric]) for p, v in per_point.items() if metric and v.get(metric)},
        candidate=data.campaign.overrides.candidate,
    )
