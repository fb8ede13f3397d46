"""Good, bad or undecided: where a candidate campaign lies between two references.

At each sweep point present in all three campaigns, on the log scale of the
headline metric, the candidate's position between the good reference (0)
and the bad one (1) is

    t = (mean_candidate - mean_good) / (mean_bad - mean_good)

with a variance from the noise model (analyze.noise): each campaign mean
varies by between_var + within_var / runs, so more repetitions narrow the
interval only down to the drift between campaigns. The points are combined
by inverse-variance weights (points where the references hardly differ
weigh little). The candidate is good when the 99% interval of the combined
t lies below 1/2, bad when it lies above, undecided otherwise, and then more
repetitions are worth running until a limit (fslab.drive.bisection).

Without a noise model (the good reference's spec never calibrated on the
host) the between-campaign variance is taken as zero and the within-campaign
variance is pooled from the three campaigns: the decision says it is
provisional, as comparisons do.

A candidate whose runs spread more than the spec's campaigns' runs do at a
modelled point (the F test comparisons use, analyze.campaign.verdicts.UNSTEADY_P) is
undecided whatever its position: the machine was unsteady while it ran, and
more runs of it would not make its mean trustworthy; fslab.drive.bisection runs it
again instead.

The three campaigns come in as judged: fslab.drive.bisection takes the host's
slowdowns out of them (analyze.history.baselines.bisect_model, the rule comparisons
use) and passes the fit, which the verdict carries and describe() names.

`bisect_list` is the search over an ordered list of candidates (kernel
images, commits) with a judge that may answer skip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import stats as sps

from fslab.analyze.campaign import stats
from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.verdicts import UNSTEADY_P, least_p
from fslab.analyze.noise.model import NoiseModel, PointNoise
from fslab.analyze.noise.slowdown import SlowdownFit
from fslab.analyze.versus.comparisons import samples
from fslab.base.format import format_pct
from fslab.base.vocab import PointKey, point_label

CONFIDENCE = 0.99  # of the combined position's interval
BOUNDARY = 0.5  # halfway between good (0) and bad (1)
Decision = Literal["good", "bad", "undecided"]
EXIT_CODES = {"good": 0, "bad": 1, "undecided": 125}  # git bisect run: 125 = skip


@dataclass(frozen=True)
class PointPosition:
    """The candidate's place between the references at one point."""

    point: PointKey
    metric: str
    good: float  # geometric means of the headline
    bad: float
    candidate: float
    runs: int  # candidate runs at this point
    position: float  # 0 = like good, 1 = like bad
    se: float
    modelled: bool  # the noise model covered the point

    def describe(self) -> str:
        good, bad, cand = (format_value(self.metric, v) for v in self.levels)
        return (
            f"{point_label(self.point)}: good {good}, bad {bad}, candidate {cand} "
            f"({self.runs} runs): position {self.position:+.2f} +-{self.se:.2f}"
            f"{'' if self.modelled else ' (no noise model)'}"
        )

    @property
    def levels(self) -> tuple[float, float, float]:
        return self.good, self.bad, self.candidate


@dataclass
class Verdict:
    """The decision with the numbers behind it."""

    decision: Decision
    position: float  # combined, 0 = good .. 1 = bad
    low: float
    high: float
    points: list[PointPosition] = field(default_factory=list)
    provisional: bool = False
    reason: str = ""
    slowdown: SlowdownFit | None = None  # the headlines were adjusted with this fit
    unsteady_p: float = math.nan  # the candidate's spread against the model's (F test)

    @property
    def unsteady(self) -> bool:
        """The candidate's runs spread more than the spec's campaigns' usually do: not judged."""
        return self.unsteady_p < UNSTEADY_P

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def describe(self) -> str:
        if not self.points:
            return f"{self.decision}: {self.reason}"
        text = (
            f"{self.decision}: position {self.position:+.2f} between good (0) and bad (1), "
            f"{format_pct(100 * CONFIDENCE)} CI [{self.low:+.2f}, {self.high:+.2f}] over "
            f"{len(self.points)} point(s)"
        )
        text += " (provisional: no noise model)" if self.provisional else ""
        if self.unsteady:
            text += (
                "; unsteady: the candidate's runs spread more than the spec's campaigns' "
                f"usually do (F test p {self.unsteady_p:.2g}), so it is not judged"
            )
        return text + (f"; {self.slowdown.describe()}" if self.slowdown else "")


class ReferencesTooClose(ValueError):
    """The good and bad references do not differ beyond the noise: nothing to bisect."""


def decide(
    good: CampaignData,
    bad: CampaignData,
    candidate: CampaignData,
    noise: NoiseModel | None = None,
    *,
    metric: str | None = None,
    slowdown: SlowdownFit | None = None,
) -> Verdict:
    """Where the candidate lies between the references, and the decision (module docstring);
    `slowdown`: the fit the campaigns were adjusted with, for the verdict to say."""
    name = metric or good.headline
    if name is None:
        raise ReferencesTooClose(f"campaign {good.id} has no headline metric")
    g, b, c = (samples(d, [name]) for d in (good, bad, candidate))
    shared = [p for p in g if p in b and p in c and all(s[p].get(name) for s in (g, b, c))]
    if not shared:
        return Verdict(
            "undecided",
            math.nan,
            math.nan,
            math.nan,
            reason="no point in common",
            slowdown=slowdown,
        )
    pooled = _pooled_within([s[p][name] for s in (g, b, c) for p in shared])
    # whether the references differ is a question about them alone
    pooled_refs = _pooled_within([s[p][name] for s in (g, b) for p in shared])
    positions, dfs, separated, unsteady_p = [], [], False, math.nan
    for point in shared:
        runs = [np.log(np.asarray(s[point][name], dtype=float)) for s in (g, b, c)]
        modelled = noise.get(point, name) if noise else None
        components = modelled or PointNoise(3, sum(len(r) for r in runs), 0.0, pooled)
        refs = modelled or PointNoise(2, len(runs[0]) + len(runs[1]), 0.0, pooled_refs)
        v_good, v_bad, v_cand = (components.mean_var(len(r)) for r in runs)
        delta = float(runs[1].mean() - runs[0].mean())
        separated = separated or _differ(delta, refs, len(runs[0]), len(runs[1]))
        if delta == 0:
            continue
        t = float((runs[2].mean() - runs[0].mean()) / delta)
        var = (v_cand + v_good - 2 * t * v_good + t * t * (v_good + v_bad)) / delta**2
        mean_good, mean_bad, mean_cand = (float(np.exp(r.mean())) for r in runs)
        positions.append(
            PointPosition(
                point,
                name,
                mean_good,
                mean_bad,
                mean_cand,
                runs=len(runs[2]),
                position=t,
                se=math.sqrt(max(var, 0.0)),
                modelled=modelled is not None,
            )
        )
        dfs.append(components.df(*(len(r) for r in runs)))
        if modelled is not None:
            unsteady_p = least_p(unsteady_p, modelled.unsteady_p(runs[2]))
    df = max(min(dfs, default=1.0), 1.0)
    critical = float(sps.t.ppf(0.5 + CONFIDENCE / 2.0, df))
    if not positions or not separated:
        raise ReferencesTooClose(
            f"good (campaign {good.id}) and bad (campaign {bad.id}) do not differ in {name} "
            f"beyond the noise at any point: nothing to bisect"
        )
    provisional = not all(p.modelled for p in positions)
    verdict = _combine(positions, critical, provisional=provisional, slowdown=slowdown)
    verdict.unsteady_p = unsteady_p
    if verdict.unsteady:
        verdict.decision = "undecided"
    return verdict


def _differ(delta: float, refs: PointNoise, n_good: int, n_bad: int) -> bool:
    """The references' levels differ (a two-sided t test on the difference of mean logs,
    at stats.ALPHA)."""
    var = refs.mean_var(n_good) + refs.mean_var(n_bad)
    if var == 0:
        return delta != 0
    critical = float(sps.t.ppf(1.0 - stats.ALPHA / 2.0, max(refs.df(n_good, n_bad), 1.0)))
    return abs(delta) / math.sqrt(var) > critical


def _combine(
    positions: list[PointPosition],
    critical: float,
    *,
    provisional: bool,
    slowdown: SlowdownFit | None,
) -> Verdict:
    weights = [1.0 / p.se**2 if p.se > 0 else 1e12 for p in positions]
    total = sum(weights)
    t = sum(w * p.position for w, p in zip(weights, positions, strict=True)) / total
    half = critical / math.sqrt(total)
    low, high = t - half, t + half
    decision: Decision = "good" if high < BOUNDARY else "bad" if low > BOUNDARY else "undecided"
    return Verdict(decision, t, low, high, positions, provisional, slowdown=slowdown)


def _pooled_within(groups: Sequence[Sequence[float]]) -> float:
    """Pooled variance of log values within each group (0 when no group has two values)."""
    logs = [np.log(np.asarray(g, dtype=float)) for g in groups if len(g) >= 2]
    dof = sum(len(g) - 1 for g in logs)
    return float(sum(((g - g.mean()) ** 2).sum() for g in logs) / dof) if dof else 0.0


# ------------------------------------------------------------------ list bisection

Judge = Callable[[int], Decision]


@dataclass
class BisectResult:
    """The first bad candidate (an index), or the range it is in when skips hid it."""

    first_bad: int | None
    candidates: list[int]  # indexes that may be the first bad one (one when found)
    tested: dict[int, Decision]


def bisect_list(count: int, judge: Judge, *, good: int = 0, bad: int | None = None) -> BisectResult:
    """Binary search for the first bad of `count` ordered candidates, good..bad known.

    `judge(i)` tests candidate i; "undecided" is a skip: the search tries the
    untested candidates nearest the middle instead, as `git bisect skip` does.
    """
    hi = count - 1 if bad is None else bad
    lo = good
    tested: dict[int, Decision] = {lo: "good", hi: "bad"}
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in tested]
        if not open_:
            break
        middle = (lo + hi) / 2
        pick = min(open_, key=lambda i: (abs(i - middle), i))
        tested[pick] = judge(pick)
        if tested[pick] == "good":
            lo = pick
        elif tested[pick] == "bad":
            hi = pick
    # every candidate strictly between lo and hi was skipped: any of them, or hi, is first bad
    between = [i for i in range(lo + 1, hi + 1)]
    return BisectResult(hi if len(between) == 1 else None, between, tested)
