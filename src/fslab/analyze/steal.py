"""Runs the hypervisor slowed: the headline taken at zero steal, one rule.

On a virtual machine the hypervisor runs other guests while this one's
vCPUs wait (steal, stored with every run: facts.host_cpu). A CPU-bound
workload loses throughput in proportion: on the machine fslab was built on
2.4% of the write IOPS a point of steal, and steal made 78% of the
run-to-run variance (bench/steal_noise.py). So before a comparison across
campaigns fits its noise model, the headline of every run that recorded its
steal is taken at zero steal with the slope the comparison's own campaigns
give:

- the slope is of log(headline) on steal *within* campaigns (each
  campaign's and sweep point's runs around their own means), pooled over
  the comparison's campaigns, sides and baselines alike: a difference
  between the sides, or a campaign's level, cannot enter it;
- it is used only when every headline run of those campaigns recorded its
  steal (a run stored before fslab recorded it could sit at any steal, and
  adjusting the others alone would move their level against it) and the
  slope is negative with p < STEAL_P_VALUE over at least MIN_STEAL_RUNS runs;
  otherwise nothing changes.

Only the headline is adjusted: latencies and the evidence metrics respond to
steal in their own ways, which one slope does not describe.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from fslab.analyze.dataset import CampaignData
from fslab.vocab import metric_label, point_key

STEAL_P_VALUE = 0.01
MIN_STEAL_RUNS = 10


@dataclass(frozen=True)
class StealFit:
    """The within-campaign slope of log(headline) on steal (points of all CPUs)."""

    metric: str
    slope_per_point: float  # change of log(metric) a point of steal
    stderr: float
    p_value: float
    r: float  # the within-campaign correlation
    runs: int
    campaigns: int

    def describe(self) -> str:
        """'steal taken out: write IOPS -2.4% a point of steal within campaigns (...)'"""
        label = metric_label(self.metric)
        return (
            f"steal taken out: {label} {math.expm1(self.slope_per_point):+.1%} a point of the "
            f"host's steal within campaigns (r {self.r:.2f}, p {self.p_value:.2g}, {self.runs} "
            f"runs of {self.campaigns} campaigns); every run's {label} is compared at zero steal"
        )

    def to_dict(self) -> dict[str, str | float | int]:
        return dataclasses.asdict(self)


def _runs(data: CampaignData, metric: str) -> list[tuple[tuple, int, float, float]]:
    """(point key, run id, steal %, value) of the campaign's headline runs with steal."""
    out = []
    for p in data.ok_points():
        cpu = p.facts.host_cpu
        value = data.metrics.get(p.id, {}).get(metric)
        if cpu is None or cpu.steal_pct is None or value is None or not value > 0:
            continue
        out.append(((p.config, *point_key(p.sweep)), p.id, cpu.steal_pct, value))
    return out


def steal_recorded(data: CampaignData) -> bool:
    """Every headline run of the campaign recorded the host's steal."""
    return all(
        p.facts.host_cpu is not None and p.facts.host_cpu.steal_pct is not None
        for p in data.ok_points()
    )


def fit_steal(campaigns: Sequence[CampaignData]) -> StealFit | None:
    """The pooled within-campaign slope of the first campaign's headline; None when it
    is not a significant slowdown (or too few runs recorded their steal)."""
    metric = campaigns[0].headline if campaigns else None
    if metric is None:
        return None
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    used: set[int] = set()
    for data in {d.id: d for d in campaigns}.values():
        cells: dict[tuple, list[tuple[float, float]]] = {}
        for key, _, steal, value in _runs(data, metric):
            cells.setdefault(key, []).append((steal, math.log(value)))
        for runs in cells.values():
            if len(runs) < 2:
                continue
            x, y = np.asarray(runs).T
            xs.append(x - x.mean())
            ys.append(y - y.mean())
            used.add(data.id)
    if not xs:
        return None
    x, y = np.concatenate(xs), np.concatenate(ys)
    sxx = float(x @ x)
    dof = len(x) - len(xs) - 1  # one mean per cell, one slope
    if len(x) < MIN_STEAL_RUNS or sxx == 0.0 or dof < 1:
        return None
    slope = float(x @ y) / sxx
    resid = y - slope * x
    stderr = math.sqrt(float(resid @ resid) / dof / sxx)
    syy = float(y @ y)
    r = slope * math.sqrt(sxx / syy) if syy > 0 else 0.0
    p = float(2.0 * sps.t.sf(abs(slope) / stderr, dof)) if stderr > 0 else 0.0
    if slope >= 0 or p >= STEAL_P_VALUE:
        return None
    return StealFit(metric, slope, stderr, p, r, len(x), len(used))


def at_zero_steal(data: CampaignData, fit: StealFit) -> CampaignData:
    """The campaign with each run's headline as it would be at zero steal."""
    metrics = {pid: dict(values) for pid, values in data.metrics.items()}
    for _, pid, steal, value in _runs(data, fit.metric):
        metrics[pid][fit.metric] = value * math.exp(-fit.slope_per_point * steal)
    return dataclasses.replace(data, metrics=metrics)


def take_out_steal(
    campaigns: Sequence[CampaignData],
) -> tuple[list[CampaignData], StealFit | None]:
    """The campaigns at zero steal, with the fit; unchanged (and None) without a slope or
    when a headline run did not record its steal."""
    if not all(steal_recorded(d) for d in campaigns):
        return list(campaigns), None
    fit = fit_steal(campaigns)
    if fit is None:
        return list(campaigns), None
    return [at_zero_steal(d, fit) for d in campaigns], fit
