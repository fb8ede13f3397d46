"""Baseline vs candidate, per sweep point and metric: is the difference real?

For every (point, metric) present on both sides the table gives the medians,
their ratio (candidate / baseline) with a 95% percentile-bootstrap interval,
a two-sided test (Mann-Whitney from 5 repetitions a side, else Welch's t on
logs), the Benjamini-Hochberg adjusted p over every tested row of the table,
the baseline coefficient of variation, and a verdict.

Verdict rules, in order (g is the magnitude gate, max(2%, 1 x baseline CV)):

1. fewer than MIN_REPS values on a side (such rows are left out of the BH
   family)                                              -> "needs more runs"
   a candidate campaign whose runs spread more than the spec's campaigns do
   (analyze.noise: F test p < UNSTEADY_P, set only where the noise model
   judges one campaign against its baselines)           -> "needs more runs"
2. BH-adjusted p < stats.ALPHA (0.05), the interval excludes 1 on the side of the change,
   and the measured change (ratio - 1) is at least g     -> "better" / "worse"
   (metrics whose declared direction is "none": "changed")
3. interval excludes 1 and the change is at least g, but the test is not
   significant after BH: the signals disagree           -> "needs more runs"
4. interval reaches below 1 - g or above 1 + g: a change of the gate's size
   is still possible                                    -> "needs more runs"
5. otherwise (the interval lies within 1 +- g)          -> "no change shown"

A zero baseline median leaves no ratio interval (e.g. a queueing delay that
was 0 and is now 1 ms): the test alone decides, by the sign of the change.

Why the gate is on the measured change and uses 1 x CV (the design asked for
the whole interval beyond max(2%, 2 x CV)): at 3% run-to-run CV that gate is
6%, so a true 5% shift could never be flagged; and even with a 2% gate,
requiring the interval's near end beyond it caught a 5% shift at too few
points (docs/statistics.md, "Departure from the issue").
Significance plus an interval that excludes 1 already says the change is
real; the gate says it is big enough to matter: no smaller than 2%, and no
smaller than one run-to-run standard deviation, the spread an engineer sees
between two runs of the same thing.
"""

from __future__ import annotations

import fnmatch
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypedDict

import numpy as np

from fslab.analyze.campaign import stats
from fslab.analyze.campaign.metrics_catalog import metric_def
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.base.format import format_change_pct
from fslab.base.vocab import PointKey, point_label
from fslab.workload.registry import headline_metric, per_io_axes

Samples = Mapping[PointKey, Mapping[str, Sequence[float]]]
Verdict = Literal["better", "worse", "changed", "no change shown", "needs more runs"]

CONFIDENCE = 0.95  # of the ratio interval
GATE_FLOOR = 0.02  # smallest change ever reported: 2%
GATE_CV_FACTOR = 1.0  # gate grows with the baseline's run-to-run CV

#: Repetitions per point fslab recommends. Derived by bench/stats_calibration.py:
#: the smallest count at which a 5% shift at 3% CV (lognormal noise) is flagged
#: at >= 90% of points of an 8-point sweep (the figures: docs/statistics.md,
#: "fslab compare").
RECOMMENDED_REPETITIONS = 16

#: Below this p the candidate campaign's runs spread more than the spec's campaigns'
#: runs usually do (analyze.noise.PointNoise.unsteady_p): the machine, or the candidate, was
#: unsteady while it ran, and its mean is not judged.
UNSTEADY_P = 0.01


def least_p(*ps: float) -> float:
    """The smallest of the p values, a NaN (not tested) counting as 1; NaN when none was
    tested."""
    tested = [p for p in ps if not math.isnan(p)]
    return min(tested) if tested else math.nan


FLAGGED: tuple[Verdict, ...] = ("better", "worse", "changed")


def recommended_repetitions() -> int:
    """Repetitions per point for a comparison to catch a 5% shift at 3% CV.

    Calibrated, not derived from a formula: bench/stats_calibration.py
    simulates 8-point sweeps with lognormal 3% CV noise, runs this module's
    compare() on them, and reports the smallest repetition count at which
    >= 90% of points shifted by 5% are flagged "better"/"worse" while A/A
    comparisons flag <= 1% of points. A t-test on means alone would need
    about 8 a side; the interval of a ratio of medians (a median's
    efficiency is 2/pi that of a mean) and the CV gate cost the rest, the
    price of robustness to straggler runs. Larger shifts or quieter metrics
    need far fewer (power grows with (shift / CV)^2 x repetitions).
    """
    return RECOMMENDED_REPETITIONS


@dataclass
class ComparisonRow:
    """One metric at one sweep point, baseline vs candidate."""

    point: PointKey
    metric: str
    direction: str  # declared in metrics_catalog: higher | lower | none
    unit: str
    n_baseline: int
    n_candidate: int
    median_baseline: float
    median_candidate: float
    ratio: float  # median_candidate / median_baseline
    ci_low: float  # 95% percentile-bootstrap interval of the ratio
    ci_high: float
    p_raw: float
    p_adjusted: float  # Benjamini-Hochberg over all tested rows of the table
    test: str
    baseline_cv: float
    gate_pct: float  # max(2%, GATE_CV_FACTOR x baseline CV), in percent
    verdict: Verdict
    # means and sample SDs (% of the mean): the kernel test robot's form of a comparison
    mean_baseline: float = math.nan
    mean_candidate: float = math.nan
    sd_pct_baseline: float = math.nan
    sd_pct_candidate: float = math.nan
    # F test that the candidate campaign's runs spread more than the spec's campaigns'
    # runs usually do (analyze.noise); NaN: not tested
    unsteady_p: float = math.nan
    # runs far outside their side's others (stats.outlier_mask), and whether leaving
    # them out changes the verdict (it then reads "needs more runs")
    outliers: int = 0
    outlier_decides: bool = False

    @property
    def unsteady(self) -> bool:
        return self.unsteady_p < UNSTEADY_P

    @property
    def change_pct(self) -> float:
        """Candidate relative to baseline, in percent (+10 means 10% higher)."""
        return (self.ratio - 1.0) * 100.0

    @property
    def worse_by_pct(self) -> float:
        """How much worse the candidate is, in percent (negative: better; NaN: no direction)."""
        if self.direction == "higher":
            return -self.change_pct
        if self.direction == "lower":
            return self.change_pct
        return float("nan")

    def describe(self) -> list[str]:
        return [_describe_row(self)]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["point"] = point_to_json(self.point)
        out["change_pct"] = self.change_pct
        return {key: _json_float(value) for key, value in out.items()}


@dataclass
class ComparisonTable:
    """All rows of one comparison, plus what could not be compared."""

    rows: list[ComparisonRow]
    only_in_baseline: list[PointKey] = field(default_factory=list)
    only_in_candidate: list[PointKey] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> str | None:
        """The headline metric the table carries: the first of base.vocab's candidates among
        its rows' metrics (None: no throughput row)."""
        rows = [dict.fromkeys((row.metric for row in self.rows), 0.0)]
        return headline_metric(rows, per_io_axes())  # a bs sweep's table carries B/s

    def flagged(self) -> list[ComparisonRow]:
        """Rows with a real change: better, worse, or changed (evidence metrics)."""
        return [row for row in self.rows if row.verdict in FLAGGED]

    def regressions(self, pct: float) -> list[ComparisonRow]:
        """Rows judged "worse" whose measured change is at least pct percent worse.

        For --fail-on-regression PCT: the verdict already requires a
        significant, gate-sized change; pct then sets how large the measured
        (point-estimate) change must be for the run to fail.
        """
        return [row for row in self.rows if row.verdict == "worse" and row.worse_by_pct >= pct]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [row.to_dict() for row in self.rows],
            "only_in_baseline": [point_to_json(p) for p in self.only_in_baseline],
            "only_in_candidate": [point_to_json(p) for p in self.only_in_candidate],
            "settings": dict(self.settings),
        }

    def describe(self) -> list[str]:
        """Short lines: one per flagged row, then counts of the other verdicts."""
        lines = [_describe_row(row) for row in self.flagged()]
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        summary = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
        lines.append(f"{len(self.rows)} compared: {summary}" if self.rows else "nothing compared")
        for label, points in (
            ("only in baseline", self.only_in_baseline),
            ("only in candidate", self.only_in_candidate),
        ):
            if points:
                lines.append(f"{len(points)} point(s) {label}, not compared")
        return lines


def compare(
    baseline: Samples,
    candidate: Samples,
    *,
    metrics: Iterable[str] | None = None,
    alpha: float = stats.ALPHA,
    gate_floor: float = GATE_FLOOR,
    gate_cv_factor: float = GATE_CV_FACTOR,
    min_reps: int = MIN_REPS,
    n_resamples: int = 10000,
    seed: int = stats.DEFAULT_SEED,
) -> ComparisonTable:
    """Compare every metric at every sweep point present on both sides.

    Values are per-repetition (NaNs, i.e. failed runs, are dropped).
    `metrics` limits the comparison to these names or glob patterns
    ("fio.*.iops"). Each row's bootstrap is seeded from `seed`, the point and
    the metric, so a row's interval does not depend on which other rows exist.
    """
    patterns = list(metrics) if metrics is not None else None
    pairs: list[tuple[PointKey, str, Sequence[float], Sequence[float]]] = []
    for point in baseline:
        if point not in candidate:
            continue
        base, cand = baseline[point], candidate[point]
        for metric in sorted(set(base) & set(cand)):
            if patterns is None or any(fnmatch.fnmatchcase(metric, p) for p in patterns):
                pairs.append((point, metric, base[metric], cand[metric]))
    rows = [_measure(*pair, n_resamples, seed) for pair in pairs]
    settings = _Settings(alpha=alpha, gate_floor=gate_floor, gate_cv_factor=gate_cv_factor)
    judge(
        rows, alpha=alpha, gate_floor=gate_floor, gate_cv_factor=gate_cv_factor, min_reps=min_reps
    )
    _outliers_never_decide(rows, pairs, settings, min_reps, n_resamples, seed)
    return ComparisonTable(
        rows=rows,
        only_in_baseline=[p for p in baseline if p not in candidate],
        only_in_candidate=[p for p in candidate if p not in baseline],
        settings={
            "alpha": alpha,
            "confidence": CONFIDENCE,
            "gate_floor_pct": 100.0 * gate_floor,
            "gate_cv_factor": gate_cv_factor,
            "min_reps": min_reps,
            "n_resamples": n_resamples,
            "seed": seed,
        },
    )


class _Settings(TypedDict):
    alpha: float
    gate_floor: float
    gate_cv_factor: float


def _outliers_never_decide(
    rows: list[ComparisonRow],
    pairs: Sequence[tuple[PointKey, str, Sequence[float], Sequence[float]]],
    settings: _Settings,
    min_reps: int,
    n_resamples: int,
    seed: int,
) -> None:
    """A row whose verdict changes when its outlier runs are left out reads "needs more
    runs": one run far from the others never decides a verdict alone."""
    counts = [
        int(stats.outlier_mask(base).sum() + stats.outlier_mask(cand).sum())
        for _, _, base, cand in pairs
    ]
    if not any(counts):
        return
    reduced = [
        _measure(point, metric, _kept(b), _kept(c), n_resamples, seed) if count else replace(row)
        for (point, metric, b, c), row, count in zip(pairs, rows, counts, strict=True)
    ]
    judge(reduced, **settings, min_reps=min_reps)
    for row, other, count in zip(rows, reduced, counts, strict=True):
        row.outliers = count
        if count and other.verdict != row.verdict:
            row.outlier_decides = True
            row.verdict = "needs more runs"


def _kept(values: Sequence[float]) -> list[float]:
    return [float(v) for v in stats.without_outliers(values)]


def judge(
    rows: Sequence[ComparisonRow],
    *,
    alpha: float = stats.ALPHA,
    gate_floor: float = GATE_FLOOR,
    gate_cv_factor: float = GATE_CV_FACTOR,
    min_reps: int = MIN_REPS,
) -> None:
    """BH-adjust the rows' p values as one family and set each row's gate and verdict.

    Shared by compare() and by the between-campaign noise model
    (analyze.noise), which measures its rows differently but is judged by the
    same rules (the module docstring).
    """
    # rows with too few repetitions are never judged, so they are not in the BH family
    family = [
        row.p_raw if min(row.n_baseline, row.n_candidate) >= min_reps else math.nan for row in rows
    ]
    adjusted = stats.benjamini_hochberg(family)
    for row, p_adj in zip(rows, adjusted, strict=True):
        row.p_adjusted = float(p_adj)
        row.gate_pct = 100.0 * _gate(row.baseline_cv, gate_floor, gate_cv_factor)
        row.verdict = _verdict(row, alpha, row.gate_pct / 100.0, min_reps)


def _measure(
    point: PointKey,
    metric: str,
    base_values: Sequence[float],
    cand_values: Sequence[float],
    n_resamples: int,
    seed: int,
) -> ComparisonRow:
    """Everything about one row except what depends on the whole table."""
    a, b = stats.as_array(base_values), stats.as_array(cand_values)
    med_a = stats.median_and_spread(a).median
    med_b = stats.median_and_spread(b).median
    rng = np.random.default_rng([seed, zlib.crc32(f"{point!r}|{metric}".encode())])
    low, high = stats.bootstrap_ratio_ci(
        a, b, confidence=CONFIDENCE, n_resamples=n_resamples, rng=rng
    )
    test = stats.two_sample_test(a, b)
    return unjudged_row(
        point, metric, a, b,
        ratio=_ratio(med_a, med_b), ci=(low, high), p_raw=test.p, test=test.test,
        baseline_cv=stats.cv(a),
    )  # fmt: skip


def unjudged_row(
    point: PointKey,
    metric: str,
    base: np.ndarray,
    cand: np.ndarray,
    *,
    ratio: float,
    ci: tuple[float, float],
    p_raw: float,
    test: str,
    baseline_cv: float,
) -> ComparisonRow:
    """A row with its measurements; judge() sets p_adjusted, the gate and the verdict."""
    mdef = metric_def(metric)
    return ComparisonRow(
        point=point,
        metric=metric,
        direction=mdef.direction,
        unit=mdef.unit,
        n_baseline=len(base),
        n_candidate=len(cand),
        median_baseline=stats.median_and_spread(base).median,
        median_candidate=stats.median_and_spread(cand).median,
        ratio=ratio,
        ci_low=ci[0],
        ci_high=ci[1],
        p_raw=p_raw,
        p_adjusted=float("nan"),
        test=test,
        baseline_cv=baseline_cv,
        gate_pct=float("nan"),
        verdict="needs more runs",
        mean_baseline=float(np.mean(base)) if len(base) else math.nan,
        mean_candidate=float(np.mean(cand)) if len(cand) else math.nan,
        sd_pct_baseline=100.0 * stats.cv(base),
        sd_pct_candidate=100.0 * stats.cv(cand),
    )


def _ratio(med_a: float, med_b: float) -> float:
    """median_b / median_a; 1 when both are 0, +-inf when only the baseline is 0."""
    if med_a == 0:
        return 1.0 if med_b == 0 else math.copysign(math.inf, med_b)
    return med_b / med_a


def _gate(baseline_cv: float, floor: float, cv_factor: float) -> float:
    """The smallest relative change reported as better/worse: max(floor, factor x CV)."""
    if not math.isfinite(baseline_cv):
        return floor
    return max(floor, cv_factor * baseline_cv)


def _verdict(row: ComparisonRow, alpha: float, gate: float, min_reps: int) -> Verdict:
    """Apply the module's verdict rules to one row (see the module docstring)."""
    if row.n_baseline < min_reps or row.n_candidate < min_reps or row.unsteady:
        return "needs more runs"
    significant = math.isfinite(row.p_adjusted) and row.p_adjusted < alpha
    low, high = row.ci_low, row.ci_high
    if not (math.isfinite(low) and math.isfinite(high)):
        # a zero median leaves no ratio interval: the test alone decides
        if significant and row.median_candidate != row.median_baseline:
            return _flag(row.direction, row.median_candidate > row.median_baseline)
        return "no change shown"
    up = row.ratio > 1.0
    excludes_one = (up and low > 1.0) or (not up and high < 1.0)
    big_enough = abs(row.ratio - 1.0) >= gate
    if excludes_one and big_enough:
        return _flag(row.direction, up) if significant else "needs more runs"
    if low < 1.0 - gate or high > 1.0 + gate:
        return "needs more runs"
    return "no change shown"


def _flag(direction: str, up: bool) -> Verdict:
    if direction == "higher":
        return "better" if up else "worse"
    if direction == "lower":
        return "worse" if up else "better"
    return "changed"


def ci_half_width_pct(
    values: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = 2000,
    rng: stats.RngLike = None,
    min_reps: int = MIN_REPS,
) -> float:
    """Half-width of the bootstrap interval of the median, in percent of the median.

    For --until-ci PCT: repeat a point until this falls below PCT. Computed
    as (high - low) / 2 / |median| x 100 with the percentile bootstrap of the
    median. Infinite with fewer than min_reps values or a zero median, so a
    loop never stops on two lucky runs. The percentile bootstrap of a median
    is optimistic below about 6 runs (at n=3 it is close to the min..max,
    which covers the true median only 75% of the time): a caller should not
    stop before recommended_repetitions() when the result feeds a comparison.
    """
    x = stats.as_array(values)
    if len(x) < max(min_reps, 2):
        return math.inf
    median = float(np.median(x))
    if median == 0:
        return math.inf
    low, high = stats.bootstrap_median_ci(
        x, confidence=confidence, n_resamples=n_resamples, rng=rng
    )
    return (high - low) / 2.0 / abs(median) * 100.0


def point_to_json(point: PointKey) -> Any:
    """A point key as JSON: a dict for (axis, value) pairs, else the value or its str."""
    if isinstance(point, tuple) and all(
        isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in point
    ):
        return {axis: _json_scalar(value) for axis, value in point}
    return _json_scalar(point)


def _json_scalar(value: Any) -> Any:
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, float):
        return _json_float(value)
    return str(value)


def _json_float(value: Any) -> Any:
    """NaN and infinities become None: JSON has no representation for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _describe_row(row: ComparisonRow) -> str:
    text = (
        f"{row.verdict}: {row.metric} {format_change_pct(row.change_pct, 1)} "
        f"[{_change(row.ci_low)}, {_change(row.ci_high)}] at {point_label(row.point)}"
    )
    return text if len(text) <= 80 else text[:77] + "..."


def _change(ratio: float) -> str:
    return format_change_pct((ratio - 1.0) * 100.0, 1) if math.isfinite(ratio) else "?"
