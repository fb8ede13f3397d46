"""Statistics over per-repetition values: intervals, tests, spread.

Every function takes plain sequences of per-repetition values (one value per
run of a point) and returns plain floats, so the comparison engine, the
scaling fit and notebooks share one definition of each statistic.

Throughput and latency are positive and their noise is multiplicative (a run
is "3% slower", not "300 IOPS slower"), so ratios and logs are the natural
scale: the interval is for a ratio of medians and the parametric test is on
log values.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats as sps

RngLike = np.random.Generator | int | None
Alternative = Literal["two-sided", "greater"]

Values = Sequence[float] | np.ndarray  # repetitions: a list, or an array of them

#: Seed used when the caller gives none, so the same data always gives the same
#: interval (a report must not change when it is re-rendered).
DEFAULT_SEED = 20240917

#: Repetitions a point (a side of a comparison) needs before anything is concluded:
#: below it there is no interval, no verdict and no adaptive stop.
MIN_REPS = 3

#: Both sides need at least this many repetitions before Mann-Whitney is used.
MANN_WHITNEY_MIN_REPS = 5

#: The significance level of every test fslab decides by (BH-adjusted where a table
#: has a family of rows): comparisons, the falloff, the noise model's sizes.
ALPHA = 0.05

#: A run is an outlier when its modified z-score (0.6745 x deviation / MAD, on log
#: values) exceeds this: the usual robust rule, which a normal sample of 4-20 runs
#: trips for well under 1% of its runs.
OUTLIER_Z = 3.5
#: The median absolute deviation is taken as at least this (log units, about 5%: half
#: this machine's run-to-run CV), so an outlier is always at least 26% from its point's
#: median: a point whose other runs agree to 1% does not call a run 12% away one.
OUTLIER_MAD_FLOOR = 0.05
#: Runs a point needs before one of them can be called far from the others.
OUTLIER_MIN_RUNS = 4


class MedianSpread(NamedTuple):
    """The median and the range (minimum and maximum) of the repetitions.

    The range rather than an IQR: with the 3-15 repetitions a campaign has,
    quartiles are interpolations between two runs, while the range shows
    exactly the best and worst run.
    """

    median: float
    minimum: float
    maximum: float


class TestResult(NamedTuple):
    """A two-sample test: which one and its two-sided p-value."""

    test: str  # "mann-whitney" | "welch-log-t" | "welch-t" | "none"
    p: float


def as_array(values: Values) -> np.ndarray:
    """Finite values as a float array: a NaN repetition is a failed run, not data."""
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]


def make_rng(rng: RngLike) -> np.random.Generator:
    """A Generator from a seed, an existing Generator, or None (the fixed default seed)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(DEFAULT_SEED if rng is None else rng)


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.median(b, axis=axis) / np.median(a, axis=axis)


def bootstrap_ratio_ci(
    a: Values,
    b: Values,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10000,
    rng: RngLike = None,
) -> tuple[float, float]:
    """Two-sided percentile-bootstrap interval for median(b) / median(a).

    Each resample draws len(a) values from a and len(b) values from b with
    replacement, independently (unpaired), and takes the ratio of the two
    medians; the interval is the (1-confidence)/2 and (1+confidence)/2
    percentiles of those ratios (scipy.stats.bootstrap, method="percentile").

    Why percentile, not BCa: with a handful of repetitions the bootstrap
    distribution of a median takes only a few distinct values, so BCa's bias
    correction (a share of resamples below the estimate) and its jackknife
    acceleration (undefined for a median of 3 points) are unstable and scipy
    warns of degenerate data; the percentile interval is well defined there
    and is transformation-respecting, so the interval of the ratio is exactly
    exp() of the interval of the log ratio. It is too narrow for very few
    repetitions (n=3 resamples mostly reproduce the min..max); the comparison
    therefore never flags on the interval alone but also needs a significant
    test.

    Returns (nan, nan) with fewer than 2 values on a side or a zero median,
    and (r, r) when both sides are constant.
    """
    x, y = as_array(a), as_array(b)
    if len(x) < 2 or len(y) < 2:
        return (float("nan"), float("nan"))
    point = float(_ratio_of_medians(x, y))
    if not np.isfinite(point) or point == 0.0:
        return (float("nan"), float("nan"))
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return (point, point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        res = sps.bootstrap(
            (x, y),
            _ratio_of_medians,
            n_resamples=n_resamples,
            vectorized=True,
            paired=False,
            confidence_level=confidence,
            method="percentile",
            rng=make_rng(rng),
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(low) and np.isfinite(high)):
        return (float("nan"), float("nan"))
    return (low, high)


def bootstrap_median_ci(
    values: Values,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10000,
    rng: RngLike = None,
) -> tuple[float, float]:
    """Percentile-bootstrap interval for the median of one sample (see bootstrap_ratio_ci)."""
    x = as_array(values)
    if len(x) < 2:
        return (float("nan"), float("nan"))
    if np.ptp(x) == 0:
        return (float(x[0]), float(x[0]))
    res = sps.bootstrap(
        (x,),
        np.median,
        n_resamples=n_resamples,
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        rng=make_rng(rng),
    )
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def _degenerate_p(x: np.ndarray, y: np.ndarray, alternative: Alternative) -> float | None:
    """p for cases scipy answers with NaN or a warning; None when the test applies."""
    if len(x) < 2 or len(y) < 2:
        return float("nan")
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        # no noise at all: identical constants are the same, different ones differ
        differ = x[0] > y[0] if alternative == "greater" else x[0] != y[0]
        return 0.0 if differ else 1.0
    return None


def welch_t(a: Values, b: Values, alternative: Alternative = "two-sided") -> float:
    """p of Welch's unequal-variance t-test on the raw values."""
    x, y = as_array(a), as_array(b)
    degenerate = _degenerate_p(x, y, alternative)
    if degenerate is not None:
        return degenerate
    return float(sps.ttest_ind(x, y, equal_var=False, alternative=alternative).pvalue)


def welch_log_t(a: Values, b: Values, alternative: Alternative = "two-sided") -> float:
    """p of Welch's t-test on log values: a test of the ratio of geometric means.

    Logs make multiplicative run-to-run noise additive and symmetric. All
    values must be positive (ValueError otherwise; use welch_t). NaN with
    fewer than 2 values on a side; 0 or 1 when both sides are constant.
    """
    x, y = as_array(a), as_array(b)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("welch_log_t needs positive values; use welch_t")
    return welch_t(np.log(x), np.log(y), alternative)


def mann_whitney(a: Values, b: Values, alternative: Alternative = "two-sided") -> float:
    """p of the Mann-Whitney U test (scipy's exact/asymptotic choice).

    Rank-based, so one straggler run cannot dominate it; but with n values a
    side its smallest possible p is 2/C(2n, n) (0.0079 at n=5), which is why
    it is only used from MANN_WHITNEY_MIN_REPS repetitions on.
    """
    x, y = as_array(a), as_array(b)
    if len(x) < 1 or len(y) < 1:
        return float("nan")
    return float(sps.mannwhitneyu(x, y, alternative=alternative).pvalue)


def two_sample_test(a: Values, b: Values, alternative: Alternative = "two-sided") -> TestResult:
    """The test fslab uses for a point: Mann-Whitney from 5 reps a side, else Welch on logs.

    Welch on raw values replaces Welch on logs when a value is zero or
    negative (e.g. a queueing delay that was zero in some runs). Two-sided,
    or "greater": that a is higher than b, for a question with a direction.
    """
    x, y = as_array(a), as_array(b)
    if len(x) < 2 or len(y) < 2:
        return TestResult("none", float("nan"))
    if len(x) >= MANN_WHITNEY_MIN_REPS and len(y) >= MANN_WHITNEY_MIN_REPS:
        return TestResult("mann-whitney", mann_whitney(x, y, alternative))
    if np.all(x > 0) and np.all(y > 0):
        return TestResult("welch-log-t", welch_log_t(x, y, alternative))
    return TestResult("welch-t", welch_t(x, y, alternative))


def benjamini_hochberg(pvalues: Values) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control, "bh").

    Controls the expected share of false discoveries among all flagged
    results of one table. NaN entries (untested rows) are left NaN and do
    not count in the number of tests.
    """
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.isfinite(p)
    if tested.any():
        adjusted[tested] = sps.false_discovery_control(p[tested], method="bh")
    return adjusted


def cv(values: Values) -> float:
    """Coefficient of variation: sample standard deviation (n-1) / arithmetic mean.

    NaN with fewer than 2 values or a zero mean.
    """
    x = as_array(values)
    if len(x) < 2 or np.mean(x) == 0:
        return float("nan")
    return float(np.std(x, ddof=1) / abs(np.mean(x)))


def median_and_spread(values: Values) -> MedianSpread:
    """Median, minimum and maximum of the repetitions (NaNs if there are none)."""
    x = as_array(values)
    if len(x) == 0:
        nan = float("nan")
        return MedianSpread(nan, nan, nan)
    return MedianSpread(float(np.median(x)), float(np.min(x)), float(np.max(x)))


def interval_verdict(low: float, high: float, goal: float, *, at_least: bool = True) -> str:
    """A confidence interval against a goal: "meets" when all of it is on the goal's
    side, "fails" when all of it is on the other, "inconclusive" when it straddles
    the goal (more pairs would decide). `at_least`: the goal is a floor, else a ceiling."""
    if not at_least:
        low, high, goal = -high, -low, -goal
    if low >= goal:
        return "meets"
    if high < goal:
        return "fails"
    return "inconclusive"


def outlier_mask(values: Values) -> np.ndarray:
    """Which runs sit far outside the point's other runs (robust rule: module constants).

    On log values, since run-to-run noise is multiplicative; all False below
    OUTLIER_MIN_RUNS runs or with a non-positive value.
    """
    x = as_array(values)
    mask = np.zeros(len(x), dtype=bool)
    if len(x) < OUTLIER_MIN_RUNS or not np.all(x > 0):
        return mask
    logs = np.log(x)
    centre = np.median(logs)
    mad = max(float(np.median(np.abs(logs - centre))), OUTLIER_MAD_FLOOR)
    return 0.6745 * np.abs(logs - centre) / mad > OUTLIER_Z


def without_outliers(values: Values) -> np.ndarray:
    """The runs that are not outliers (all of them when none is)."""
    x = as_array(values)
    return x[~outlier_mask(x)]
