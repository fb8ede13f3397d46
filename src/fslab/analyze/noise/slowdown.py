"""Runs the host slowed: the headline taken at zero steal (or one CPU speed), one rule.

On a virtual machine a CPU-bound workload loses throughput in two ways the
workload itself has no part in, and every run records both
(facts.host_cpu):

- **steal**, time the hypervisor gave to other guests (/proc/stat): on the
  machine fslab was built on, most of the run-to-run variance
  (docs/statistics.md, "The host's own load: steal");
- **a slower vCPU**, the same CPU time doing less work (a busy hyperthread
  sibling, a lower host clock), which no counter in the guest shows: the
  runner times a fixed loop beside the workload (collect.cpuspeed), and the
  covariate is the log of that time.

So before a comparison across campaigns fits its noise model, the headline
of every run is taken to zero steal (and, asked for, to one CPU speed: the
median probe time of the runs fitted) with the slopes the comparison's own
campaigns give. Comparisons take out COVARIATES, steal alone: the speed
probe, taken out beside it, cost power on the one recording that has it
(docs/statistics.md, "The speed probe and a second steal recording"), so
it is recorded, warned about nowhere, and kept for
`bench/stats_calibration.py --covariates steal,speed` to judge again on the
next recording:

- the slopes are of log(headline) on the covariates *within* campaigns
  (each campaign's and sweep point's runs around their own means), one
  multiple regression pooled over the comparison's campaigns, sides and
  baselines alike: a difference between the sides, or a campaign's level,
  cannot enter them;
- a covariate takes part only when every headline run of those campaigns
  recorded it (a run stored before fslab recorded it could sit anywhere,
  and adjusting the others alone would move their level against it);
- a covariate stays only when its slope is a slowdown with p < P_VALUE over
  at least MIN_RUNS runs; the weakest that is not is dropped and the rest
  refitted, so with no slowdown nothing changes and older data is judged
  as before.

Only the headline is adjusted: latencies and the evidence metrics respond
in their own ways, which one slope does not describe.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from fslab.analyze.campaign.dataset import CampaignData
from fslab.base.format import format_change_pct, format_ns
from fslab.base.vocab import point_key
from fslab.store.facts import HostCpuFacts
from fslab.workload.registry import metric_label

P_VALUE = 0.01
MIN_RUNS = 10
STEAL = "steal"
SPEED = "speed"
KNOWN_COVARIATES = (STEAL, SPEED)
# What comparisons take out. The speed probe is recorded with every run but not taken out:
# on the one recording that has it, taking it out beside steal widened the spread of the
# campaigns and cost power (docs/statistics.md, "The speed probe and a second steal
# recording").
COVARIATES: tuple[str, ...] = (STEAL,)


def _covariate(cpu: HostCpuFacts | None, name: str) -> float | None:
    """steal: points of all CPUs; speed: log of the probe's time (higher is slower)."""
    if cpu is None:
        return None
    if name == STEAL:
        return cpu.steal_pct
    probe_us = cpu.speed_probe_us
    return math.log(probe_us) if probe_us is not None and probe_us > 0 else None


@dataclass(frozen=True)
class SlowdownTerm:
    """One covariate's within-campaign slope of log(headline)."""

    covariate: str  # STEAL | SPEED
    slope: float  # change of log(metric) a point of steal, or a unit of log(probe time)
    stderr: float
    p_value: float
    r: float  # the partial correlation within campaigns
    reference: float  # the covariate's value every run is taken to (log for speed)

    def name(self) -> str:
        return "steal" if self.covariate == STEAL else "CPU speed"

    def short_taken_to(self) -> str:
        """For an axis label: 'zero steal' or 'one CPU speed'."""
        return "zero steal" if self.covariate == STEAL else "one CPU speed"

    def effect(self) -> str:
        """'-2.4% a point of the host's steal' or '-0.9% a 1% slower CPU (speed probe)'"""
        if self.covariate == STEAL:
            return (
                f"{format_change_pct(100 * math.expm1(self.slope), 1)} a point of the host's steal"
            )
        change = format_change_pct(100 * math.expm1(self.slope * math.log(1.01)), 1)
        return f"{change} a 1% slower CPU (speed probe)"

    def taken_to(self) -> str:
        if self.covariate == STEAL:
            return "zero steal"
        return f"the runs' median CPU speed (probe {format_ns(1e3 * math.exp(self.reference))})"


@dataclass(frozen=True)
class SlowdownFit:
    """The within-campaign slopes of log(headline) on the host's slowdowns."""

    metric: str
    terms: tuple[SlowdownTerm, ...]
    runs: int
    campaigns: int

    def term(self, covariate: str) -> SlowdownTerm | None:
        return next((t for t in self.terms if t.covariate == covariate), None)

    def at(self) -> str:
        """What the headlines are taken to: 'zero steal', '... and the runs' median ...'."""
        return " and ".join(t.taken_to() for t in self.terms)

    def short_at(self) -> str:
        """For an axis label: 'zero steal', 'one CPU speed', 'zero steal and one CPU speed'."""
        return " and ".join(t.short_taken_to() for t in self.terms)

    def describe(self) -> str:
        """'steal taken out: write IOPS -2.4% a point of the host's steal within campaigns
        (r -0.73, p 5.7e-08, 50 runs of 10 campaigns); every run's write IOPS is compared
        at zero steal'"""
        label = metric_label(self.metric)
        what = " and ".join(t.name() for t in self.terms)
        if len(self.terms) == 1:
            (t,) = self.terms
            effects = f"{t.effect()} within campaigns (r {t.r:.2f}, p {t.p_value:.2g}, "
        else:
            effects = (
                " and ".join(f"{t.effect()} (r {t.r:.2f}, p {t.p_value:.2g})" for t in self.terms)
                + " within campaigns ("
            )
        return (
            f"{what} taken out: {label} {effects}{self.runs} runs of {self.campaigns} "
            f"campaigns); every run's {label} is compared at {self.at()}"
        )

    def to_dict(self) -> dict[str, object]:
        """For --json: the terms as a list."""
        return {**dataclasses.asdict(self), "terms": [dataclasses.asdict(t) for t in self.terms]}


def _runs(
    data: CampaignData, metric: str, covariates: Sequence[str]
) -> list[tuple[tuple, int, tuple[float, ...], float]]:
    """(point key, run id, covariates, value) of the campaign's headline runs that
    recorded every covariate asked for."""
    out = []
    for p in data.ok_points():
        value = data.metrics.get(p.id, {}).get(metric)
        xs = [_covariate(p.facts.host_cpu, name) for name in covariates]
        if value is None or not value > 0 or any(x is None for x in xs):
            continue
        out.append(
            ((p.config, *point_key(p.sweep)), p.id, tuple(x for x in xs if x is not None), value)
        )
    return out


def recorded(data: CampaignData, covariate: str) -> bool:
    """Every headline run of the campaign recorded the covariate."""
    return all(_covariate(p.facts.host_cpu, covariate) is not None for p in data.ok_points())


def _fit(
    campaigns: Sequence[CampaignData], metric: str, covariates: Sequence[str]
) -> tuple[list[SlowdownTerm], int, int] | None:
    """The pooled within-campaign regression on these covariates: its terms, runs and
    campaigns; None without enough runs to fit."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    raw: list[np.ndarray] = []
    used: set[int] = set()
    for data in campaigns:
        cells: dict[tuple, list[tuple[tuple[float, ...], float]]] = {}
        for key, _, values, value in _runs(data, metric, covariates):
            cells.setdefault(key, []).append((values, math.log(value)))
        for runs in cells.values():
            if len(runs) < 2:
                continue
            cell_x = np.array([r[0] for r in runs], dtype=float)
            cell_y = np.array([r[1] for r in runs], dtype=float)
            raw.append(cell_x)
            xs.append(cell_x - cell_x.mean(axis=0))
            ys.append(cell_y - cell_y.mean())
            used.add(data.id)
    if not xs:
        return None
    x, y, every = np.concatenate(xs), np.concatenate(ys), np.concatenate(raw)
    k = len(covariates)
    dof = len(y) - len(xs) - k  # one mean per cell, one slope per covariate
    xtx = x.T @ x
    if len(y) < MIN_RUNS or dof < 1 or np.linalg.matrix_rank(xtx) < k:
        return None
    slopes = np.linalg.solve(xtx, x.T @ y)
    resid = y - x @ slopes
    sigma2 = float(resid @ resid) / dof
    stderrs = np.sqrt(np.diag(np.linalg.inv(xtx)) * sigma2)
    terms = []
    for i, name in enumerate(covariates):
        t = float(slopes[i] / stderrs[i]) if stderrs[i] > 0 else math.copysign(math.inf, slopes[i])
        p = float(2.0 * sps.t.sf(abs(t), dof))
        r = t / math.sqrt(t * t + dof) if math.isfinite(t) else math.copysign(1.0, t)
        reference = 0.0 if name == STEAL else float(statistics.median(every[:, i]))
        terms.append(SlowdownTerm(name, float(slopes[i]), float(stderrs[i]), p, r, reference))
    return terms, len(y), len(used)


def fit_slowdown(
    campaigns: Sequence[CampaignData], covariates: Sequence[str] | None = None
) -> SlowdownFit | None:
    """The slopes of the first campaign's headline on every covariate (of `covariates`,
    default COVARIATES) all the campaigns' runs recorded, keeping only significant
    slowdowns; None when none is."""
    metric = campaigns[0].headline if campaigns else None
    if metric is None:
        return None
    unique = list({d.id: d for d in campaigns}.values())
    asked = COVARIATES if covariates is None else covariates
    kept = [c for c in asked if all(recorded(d, c) for d in unique)]
    while kept:
        fitted = _fit(unique, metric, kept)
        if fitted is None:
            return None
        terms, runs, used = fitted
        failing = [t for t in terms if t.slope >= 0 or t.p_value >= P_VALUE]
        if not failing:
            return SlowdownFit(metric, tuple(terms), runs, used)
        weakest = max(failing, key=lambda t: (t.slope >= 0, t.p_value))
        kept.remove(weakest.covariate)
    return None


def taken_out(data: CampaignData, fit: SlowdownFit) -> CampaignData:
    """The campaign with each run's headline as it would be at the fit's reference."""
    metrics = {pid: dict(values) for pid, values in data.metrics.items()}
    names = [t.covariate for t in fit.terms]
    for _, pid, x, value in _runs(data, fit.metric, names):
        shift = sum(t.slope * (xi - t.reference) for t, xi in zip(fit.terms, x, strict=True))
        metrics[pid][fit.metric] = value * math.exp(-shift)
    return dataclasses.replace(data, metrics=metrics)


def take_out_slowdown(
    campaigns: Sequence[CampaignData], covariates: Sequence[str] | None = None
) -> tuple[list[CampaignData], SlowdownFit | None]:
    """The campaigns with the host's slowdowns taken out, with the fit; unchanged (and
    None) when no recorded covariate slows the headline significantly."""
    fit = fit_slowdown(campaigns, covariates)
    if fit is None:
        return list(campaigns), None
    return [taken_out(d, fit) for d in campaigns], fit
