"""Where throughput falls off: best point, worst point, knee and cliff, from measured medians.

This module is the one rule for these four, and `scale`, `diagnose`,
`profile`, `compare` and every report section read them from here, so they
can never disagree. Everything is read from the headline medians over the
clean repetitions of each sweep point (`CampaignData.values`); no model
is involved. The USL (`analyze.curve.usl`) is fitted on top, only where it is
identified (see `campaign_scaling`).

- best point: the sweep point with the highest median headline.
- worst point: with a concurrency axis, the lowest median at or beyond the
  best point along the same curve (the other axes held): that is where
  throughput falls off, while a point below the peak is merely not loaded
  yet. Without one, the lowest median of the configuration.
- falloff: the worst point is at least FALLOFF_MIN_DROP (15%) below the
  best, and the runs at the two points differ by the test `compare` uses
  (stats.two_sample_test, one-sided: the worst is lower; p < stats.ALPHA),
  whether or not an outlier run
  (stats.outlier_mask) is left out. 15% sits above this kind of machine's
  ~10% run-to-run CV. A drop under 15% is settled: no falloff, nothing to
  explain. A larger drop the test does not (yet) show, or one that depends on
  an outlier, is open: the diagnosis explains the change measured, and more
  runs at the two points settle it (the campaign's questions ask for them).
- knee: the last N before the first step whose gain, scaled to a doubling
  of N, is below KNEE_GAIN (10%): gain = (X_i / X_{i-1}) ** (1 / log2(N_i /
  N_{i-1})) - 1. Beyond the knee, doubling concurrency buys less than 10%.
- cliff: a step between adjacent points where the median falls by more than
  CLIFF_DROP (40%), every run after it is below every run before it (or, with
  stats.MIN_REPS runs a side, the falloff's test shows the fall), and the
  fall per doubling of N is more than CLIFF_EXCESS (2x) as steep as that of
  any other step of the curve: a threshold effect, not a steady decline.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.analyze.campaign import stats
from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.stats import Values
from fslab.base.format import (
    format_change_pct,
    format_p,
    format_pct,
    format_plain,
    format_ratio,
    format_share,
)
from fslab.base.vocab import PointKey, point_label

FALLOFF_MIN_DROP = 0.15
KNEE_GAIN = 0.10  # per doubling of N
CLIFF_DROP = 0.40
CLIFF_EXCESS = 2.0

FalloffKind = Literal["falloff", "open", "none", "single"]
"""falloff: shown by the test; open: a drop of 15% or more the test does not (yet) show;
none: under 15%, or nothing past the best point; single: one sweep point."""


# ------------------------------------------------------------------ one curve


@dataclass(frozen=True)
class Cliff:
    """A threshold effect between two adjacent sweep points."""

    n_before: float
    n_after: float
    x_before: float  # median headline at n_before
    x_after: float
    drop_pct: float  # measured fall, percent
    other_drop_pct: float  # steepest fall of any other step, per doubling of N, percent

    def to_dict(self) -> dict[str, float]:
        return dict(vars(self))

    def bracket(self, axis: str = "N") -> str:
        return (
            f"between {axis}={format_plain(self.n_before)} and {axis}={format_plain(self.n_after)}"
        )

    def describe(self, axis: str = "N") -> list[str]:
        other = (
            f"steepest other step -{format_pct(self.other_drop_pct)} per doubling"
            if self.other_drop_pct > 0
            else "no other step falls"
        )
        return [f"cliff {self.bracket(axis)}: -{format_pct(self.drop_pct)} in one step ({other})"]


@dataclass(frozen=True)
class FallTest:
    """Whether the runs of one point are lower than another's: the test `compare`
    uses, with and without outlier runs."""

    p: float  # one-sided p on all the runs; NaN with fewer than 2 runs on a side
    test: str
    p_without_outliers: float  # the same test with the outlier runs left out
    outliers: int  # outlier runs on the two sides

    @property
    def tested(self) -> bool:
        return math.isfinite(self.p)

    @property
    def shows(self) -> bool:
        """Significant with the outliers and without them."""
        return self.tested and self.p < stats.ALPHA and self.p_without_outliers < stats.ALPHA

    @property
    def outlier_decides(self) -> bool:
        """One side of the verdict holds only with the outliers, the other only without."""
        return self.tested and (self.p < stats.ALPHA) != (self.p_without_outliers < stats.ALPHA)

    def describe(self, n_high: int, n_low: int) -> str:
        if not self.tested:
            return f"not tested ({n_high} and {n_low} runs)"
        text = f"p {format_p(self.p)} ({n_high} and {n_low} runs)"
        if self.outliers:
            reduced = format_p(self.p_without_outliers)
            text += f"; without the {self.outliers} outlier run(s): p {reduced}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "shows": self.shows, "outlier_decides": self.outlier_decides}


def fall_test(high: Values, low: Values) -> FallTest:
    """Test that the higher point's runs are higher than the lower point's (see FallTest).

    One-sided: the question has a direction (did throughput fall from the best
    point to the worst?), which two-sided comparisons of configurations lack.
    """
    full = stats.two_sample_test(high, low, "greater")
    outliers = int(stats.outlier_mask(high).sum() + stats.outlier_mask(low).sum())
    reduced = (
        stats.two_sample_test(stats.without_outliers(high), stats.without_outliers(low), "greater")
        if outliers
        else full
    )
    return FallTest(full.p, full.test, reduced.p, outliers)


def knee(ns: Sequence[float], medians: Sequence[float]) -> float | None:
    """The last N before the first step gaining < KNEE_GAIN per doubling (None: none)."""
    for i in range(1, len(ns)):
        doublings = math.log2(ns[i] / ns[i - 1])
        gain = (medians[i] / medians[i - 1]) ** (1.0 / doublings) - 1.0
        if gain < KNEE_GAIN:
            return float(ns[i - 1])
    return None


def _fall_per_doubling(n0: float, n1: float, x0: float, x1: float) -> float:
    """Fraction lost per doubling of N over one step (0 when the step gains)."""
    ratio = (x1 / x0) ** (1.0 / math.log2(n1 / n0))
    return max(0.0, 1.0 - ratio)


def find_cliff(
    ns: Sequence[float], reps: Sequence[Values], medians: Sequence[float]
) -> Cliff | None:
    """The first adjacent step that falls like a threshold (see the module docstring).

    Two points alone make no cliff: one step cannot be steeper than another.
    """
    if len(ns) < 3:
        return None
    falls = [
        _fall_per_doubling(ns[i - 1], ns[i], medians[i - 1], medians[i]) for i in range(1, len(ns))
    ]
    for i in range(1, len(ns)):
        observed = medians[i] / medians[i - 1]
        separated = max(reps[i]) < min(reps[i - 1])
        if min(len(reps[i - 1]), len(reps[i])) >= stats.MIN_REPS:
            separated = separated or fall_test(reps[i - 1], reps[i]).shows
        others = [f for j, f in enumerate(falls) if j != i - 1]
        steepest_other = max(others, default=0.0)
        if (
            observed < 1.0 - CLIFF_DROP
            and separated
            and falls[i - 1] > CLIFF_EXCESS * steepest_other
        ):
            return Cliff(
                n_before=float(ns[i - 1]),
                n_after=float(ns[i]),
                x_before=float(medians[i - 1]),
                x_after=float(medians[i]),
                drop_pct=100.0 * (1.0 - observed),
                other_drop_pct=100.0 * steepest_other,
            )
    return None


# ------------------------------------------------------------------ sweep points


@dataclass(frozen=True)
class SweepPoint:
    """One configuration's sweep point: its clean repetitions and their median."""

    key: PointKey
    values: tuple[float, ...]
    median: float
    n: float | None = None  # value on the concurrency axis, when there is one

    @property
    def label(self) -> str:
        return point_label(self.key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": dict(self.key),
            "label": self.label,
            "values": list(self.values),
            "median": self.median,
            "n": self.n,
        }


@dataclass
class Curve:
    """One configuration's points along the concurrency axis, the other axes held at `rest`."""

    config: str
    axis: str
    rest: PointKey
    points: list[SweepPoint]  # ascending N
    knee_n: float | None = None
    cliff: Cliff | None = None

    @property
    def n(self) -> list[float]:
        return [p.n for p in self.points if p.n is not None]

    @property
    def reps(self) -> list[list[float]]:
        return [list(p.values) for p in self.points]

    @property
    def medians(self) -> list[float]:
        return [p.median for p in self.points]

    @property
    def peak(self) -> SweepPoint:
        """The curve's best point."""
        return best_point(self.points)

    @property
    def low(self) -> SweepPoint:
        """The curve's worst point: the lowest median at or beyond its peak."""
        return worst_point(beyond(self, self.peak))


def peak_index(medians: Sequence[float]) -> int:
    """Where a sequence of medians is highest, the first on a tie: the best point's rule."""
    return max(range(len(medians)), key=lambda i: medians[i])


def best_point(points: Sequence[SweepPoint]) -> SweepPoint:
    """The sweep point with the highest median (the first on a tie)."""
    return points[peak_index([p.median for p in points])]


def worst_point(points: Sequence[SweepPoint]) -> SweepPoint:
    """The sweep point with the lowest median (the first on a tie)."""
    return min(points, key=lambda p: p.median)


def beyond(curve: Curve, best: SweepPoint) -> list[SweepPoint]:
    """The curve's points at and beyond `best` on its axis: where throughput can fall off
    (a point below the best is merely not loaded yet)."""
    return [p for p in curve.points if p.n is not None and p.n >= (best.n or 0.0)]


def falls(high: float, low: float) -> bool:
    """Whether going from `high` to `low` is a fall worth explaining: FALLOFF_MIN_DROP or
    more of `high`."""
    return low <= (1.0 - FALLOFF_MIN_DROP) * high


def steepest_fall(curve: Curve) -> tuple[SweepPoint, SweepPoint] | None:
    """The adjacent points past the curve's best between which it falls most per doubling
    of N, when that step falls by FALLOFF_MIN_DROP or more (None: no such step)."""
    points = beyond(curve, curve.peak)
    steps = [
        (_fall_per_doubling(a.n, b.n, a.median, b.median), a, b)
        for a, b in itertools.pairwise(points)
        if a.n and b.n and falls(a.median, b.median)
    ]
    if not steps:
        return None
    _, a, b = max(steps, key=lambda step: step[0])
    return a, b


def make_curve(config: str, axis: str, rest: PointKey, points: list[SweepPoint]) -> Curve:
    """A curve with its knee and cliff read from the medians."""
    points = sorted(points, key=lambda p: p.n or 0.0)
    curve = Curve(config, axis, rest, points)
    if len(points) >= 2:
        curve.knee_n = knee(curve.n, curve.medians)
        curve.cliff = find_cliff(curve.n, curve.reps, curve.medians)
    return curve


def as_number(value: Any) -> float | None:
    """A sweep value as a finite number, None when it is not one ("4k", "", None)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _as_n(value: Any) -> float | None:
    n = as_number(value)
    return n if n is not None and n > 0 else None


def sweep_points(data: CampaignData, config: str, metric: str) -> list[SweepPoint]:
    """Every sweep point of the configuration with results, in sweep order."""
    axis = data.concurrency_axis()
    points = []
    for key, values in data.values(metric, config).items():
        good = [v for v in values if math.isfinite(v)]
        if good:
            n = _as_n(dict(key).get(axis)) if axis else None
            points.append(SweepPoint(key, tuple(good), statistics.median(good), n))
    return points


def curves(data: CampaignData, config: str, metric: str, axis: str) -> list[Curve]:
    """The configuration's curves along `axis`, one per combination of the other axes."""
    by_rest: dict[PointKey, list[SweepPoint]] = {}
    for key, values in data.values(metric, config).items():
        n = _as_n(dict(key).get(axis))
        good = [v for v in values if math.isfinite(v)]
        if n is None or not good:
            continue
        rest = tuple((k, v) for k, v in key if k != axis)
        by_rest.setdefault(rest, []).append(
            SweepPoint(key, tuple(good), statistics.median(good), n)
        )
    return [make_curve(config, axis, rest, pts) for rest, pts in by_rest.items()]


# ------------------------------------------------------------------ one configuration


@dataclass
class Falloff:
    """A configuration's best and worst point, and whether throughput really fell off."""

    config: str
    metric: str
    axis: str | None
    points: list[SweepPoint]
    best: SweepPoint
    worst: SweepPoint
    kind: FalloffKind
    reason: str  # in words: the falloff, or why there is none
    curve: Curve | None = None  # the curve through the best point
    notes: list[str] = field(default_factory=list)
    test: FallTest | None = None  # best against worst; None when the drop is under 15%

    @property
    def ratio(self) -> float:
        """Worst median / best median (1.0: nothing lost)."""
        return self.worst.median / self.best.median if self.best.median else 1.0

    @property
    def drop_pct(self) -> float:
        return 100.0 * (1.0 - self.ratio)

    @property
    def has_falloff(self) -> bool:
        """A drop to explain: shown by the test, or open (15% or more, not yet shown)."""
        return self.kind in ("falloff", "open")

    @property
    def shown(self) -> bool:
        """The test shows the falloff, with and without outlier runs."""
        return self.kind == "falloff"

    @property
    def settled(self) -> bool:
        """More runs at the best and worst points would not change the answer's kind."""
        return self.kind != "open"

    @property
    def cliff(self) -> Cliff | None:
        return self.curve.cliff if self.curve else None

    @property
    def knee_n(self) -> float | None:
        return self.curve.knee_n if self.curve else None

    def figure(self, point: SweepPoint) -> str:
        return f"{format_value(self.metric, point.median)} {self.metric}"

    def describe(self) -> list[str]:
        lines = [self.reason]
        if self.knee_n is not None and self.axis:
            lines.append(f"knee at {self.axis}={format_plain(self.knee_n)}")
        if self.cliff is not None:
            lines += self.cliff.describe(self.axis or "N")
        return lines + self.notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "metric": self.metric,
            "axis": self.axis,
            "kind": self.kind,
            "reason": self.reason,
            "best": self.best.to_dict(),
            "worst": self.worst.to_dict(),
            "ratio": self.ratio,
            "drop_pct": self.drop_pct,
            "knee_n": self.knee_n,
            "cliff": self.cliff.to_dict() if self.cliff else None,
            "notes": list(self.notes),
            "test": self.test.to_dict() if self.test else None,
            "settled": self.settled,
        }


@dataclass(frozen=True)
class _Judgement:
    kind: FalloffKind
    reason: str
    notes: list[str]
    test: FallTest | None = None


def _judge(best: SweepPoint, worst: SweepPoint, metric: str) -> _Judgement:
    fmt = format_value
    drop = 1.0 - worst.median / best.median if best.median else 0.0
    span = (
        f"{fmt(metric, best.median)} at {best.label} (best) -> "
        f"{fmt(metric, worst.median)} at {worst.label} (worst): "
        f"x{format_ratio(1.0 - drop)} ({format_change_pct(-100.0 * drop)})"
    )
    if drop < FALLOFF_MIN_DROP:
        why = f"under the {format_share(FALLOFF_MIN_DROP)} a falloff needs"
        return _Judgement("none", f"no falloff: {span}, {why}", [])
    test = fall_test(best.values, worst.values)
    tested = test.describe(len(best.values), len(worst.values))
    if test.shows:
        return _Judgement("falloff", f"falloff: {span}; {tested}", [], test)
    if not test.tested:
        why = "one run at the best or worst point: the drop is not tested against noise"
    elif test.outlier_decides:
        why = f"an outlier run decides it: {tested}"
    else:
        why = f"the runs overlap: {tested}"
    more = f"more runs at {best.label} and {worst.label} would settle it"
    return _Judgement("open", f"falloff not yet shown: {span}; {why}", [more], test)


def config_falloff(data: CampaignData, config: str, metric: str | None = None) -> Falloff | None:
    """The configuration's falloff; None when it has no successful point with the metric."""
    metric = metric or data.headline
    if metric is None:
        return None
    points = sweep_points(data, config, metric)
    if not points:
        return None
    best = best_point(points)
    axis = data.concurrency_axis()
    curve = None
    candidates = points
    if axis is not None and best.n is not None:
        rest = tuple((k, v) for k, v in best.key if k != axis)
        curve = next((c for c in curves(data, config, metric, axis) if c.rest == rest), None)
        if curve is not None:
            candidates = beyond(curve, best)
    worst = worst_point(candidates)
    if len(points) == 1:
        reason = f"a single sweep point ({best.label}): no falloff to judge"
        return Falloff(config, metric, axis, points, best, worst, "single", reason, curve)
    if worst.key == best.key and axis is not None and curve is not None:
        reason = (
            f"no falloff: {format_value(metric, best.median)} is highest at the "
            f"largest {axis} ({best.label}); nothing falls off in the range measured"
        )
        return Falloff(config, metric, axis, points, best, worst, "none", reason, curve)
    judged = _judge(best, worst, metric)
    return Falloff(
        config,
        metric,
        axis,
        points,
        best,
        worst,
        judged.kind,
        judged.reason,
        curve,
        judged.notes,
        judged.test,
    )


def campaign_falloffs(data: CampaignData) -> dict[str, Falloff]:
    """Every configuration's falloff, in configuration order (those with results)."""
    found = {config: config_falloff(data, config) for config in data.configs()}
    return {config: f for config, f in found.items() if f is not None}


def focus_config(falloffs: dict[str, Falloff]) -> Falloff | None:
    """The configuration a report centres on: the deepest falloff, else the first one."""
    if not falloffs:
        return None
    falling = [f for f in falloffs.values() if f.has_falloff]
    if falling:
        return min(falling, key=lambda f: f.ratio)
    return next(iter(falloffs.values()))
