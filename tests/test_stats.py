"""stats: each statistic checked against scipy's reference implementation."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from fslab.analyze.campaign import stats

ROOT = Path(__file__).resolve().parents[1]
A = [1000.0, 1012.0, 987.0, 1030.0, 995.0, 1008.0]
B = [951.0, 962.0, 940.0, 975.0, 948.0, 958.0]


def _ratio_of_medians(x, y, axis=-1):
    return np.median(y, axis=axis) / np.median(x, axis=axis)


# --- bootstrap interval --------------------------------------------------------------------


def test_bootstrap_ratio_ci_matches_scipy_percentile_bootstrap():
    got = stats.bootstrap_ratio_ci(A, B, n_resamples=2000, rng=7)
    ref = sps.bootstrap(
        (np.array(A), np.array(B)),
        _ratio_of_medians,
        n_resamples=2000,
        vectorized=True,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert got == pytest.approx((ref.low, ref.high))


def test_bootstrap_ratio_ci_is_reproducible_and_brackets_the_ratio():
    first = stats.bootstrap_ratio_ci(A, B, rng=3)
    assert first == stats.bootstrap_ratio_ci(A, B, rng=3)
    assert stats.bootstrap_ratio_ci(A, B) == stats.bootstrap_ratio_ci(A, B)  # fixed default seed
    ratio = np.median(B) / np.median(A)
    assert first[0] <= ratio <= first[1]
    assert first[1] < 1.0  # B is clearly lower


def test_bootstrap_ratio_ci_narrows_with_lower_confidence():
    wide = stats.bootstrap_ratio_ci(A, B, confidence=0.95, rng=1)
    narrow = stats.bootstrap_ratio_ci(A, B, confidence=0.5, rng=1)
    assert wide[0] <= narrow[0] and narrow[1] <= wide[1]


def test_bootstrap_ratio_ci_degenerate_inputs():
    assert stats.bootstrap_ratio_ci([5.0, 5.0, 5.0], [6.0, 6.0]) == (1.2, 1.2)
    assert all(math.isnan(v) for v in stats.bootstrap_ratio_ci([1.0], [1.0, 2.0]))
    assert all(math.isnan(v) for v in stats.bootstrap_ratio_ci([0.0, 0.0, 1.0], [1.0, 2.0]))
    # NaN repetitions (failed runs) are dropped, not propagated
    low, high = stats.bootstrap_ratio_ci([*A, float("nan")], B, rng=3)
    assert (low, high) == stats.bootstrap_ratio_ci(A, B, rng=3)


def test_bootstrap_median_ci_matches_scipy():
    got = stats.bootstrap_median_ci(A, n_resamples=1000, rng=5)
    ref = sps.bootstrap(
        (np.array(A),),
        np.median,
        n_resamples=1000,
        method="percentile",
        rng=np.random.default_rng(5),
    ).confidence_interval
    assert got == pytest.approx((ref.low, ref.high))


# --- tests -----------------------------------------------------------------------------------


def test_welch_log_t_matches_scipy_on_logs():
    ref = sps.ttest_ind(np.log(A), np.log(B), equal_var=False).pvalue
    assert stats.welch_log_t(A, B) == pytest.approx(ref)


def test_welch_t_matches_scipy():
    ref = sps.ttest_ind(A, B, equal_var=False).pvalue
    assert stats.welch_t(A, B) == pytest.approx(ref)


def test_welch_log_t_refuses_non_positive_values():
    with pytest.raises(ValueError):
        stats.welch_log_t([1.0, 0.0, 2.0], [1.0, 2.0])


def test_welch_degenerate_cases():
    assert math.isnan(stats.welch_log_t([1.0], [1.0, 2.0]))
    assert stats.welch_log_t([2.0, 2.0, 2.0], [2.0, 2.0]) == 1.0
    assert stats.welch_log_t([2.0, 2.0, 2.0], [3.0, 3.0]) == 0.0


def test_mann_whitney_matches_scipy_and_its_floor():
    ref = sps.mannwhitneyu(A, B, alternative="two-sided").pvalue
    assert stats.mann_whitney(A, B) == pytest.approx(ref)
    # complete separation of 5 vs 5: the exact p is 2 / C(10, 5)
    assert stats.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_two_sample_test_choice():
    assert stats.two_sample_test(A[:5], B[:5]).test == "mann-whitney"
    assert stats.two_sample_test(A[:4], B).test == "welch-log-t"
    assert stats.two_sample_test([0.0, 1.0, 2.0], [3.0, 4.0, 5.0]).test == "welch-t"
    none = stats.two_sample_test([1.0], B)
    assert none.test == "none" and math.isnan(none.p)


def test_benjamini_hochberg_matches_scipy():
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
    ref = sps.false_discovery_control(p, method="bh")
    assert stats.benjamini_hochberg(p) == pytest.approx(ref)


def test_benjamini_hochberg_leaves_nan_out_of_the_family():
    got = stats.benjamini_hochberg([0.01, float("nan"), 0.04])
    ref = sps.false_discovery_control([0.01, 0.04], method="bh")
    assert math.isnan(got[1])
    assert [got[0], got[2]] == pytest.approx(ref)
    assert len(stats.benjamini_hochberg([])) == 0


# --- spread ------------------------------------------------------------------------------------


def test_cv_is_sample_std_over_mean():
    assert stats.cv(A) == pytest.approx(sps.variation(A, ddof=1))
    assert math.isnan(stats.cv([3.0]))
    assert math.isnan(stats.cv([-1.0, 1.0]))


def test_median_and_spread_is_median_min_max():
    got = stats.median_and_spread([3.0, 1.0, 2.0, 10.0])
    assert got == (2.5, 1.0, 10.0)
    assert got.median == 2.5 and got.minimum == 1.0 and got.maximum == 10.0
    assert all(math.isnan(v) for v in stats.median_and_spread([]))


def test_interval_verdict_floor_and_ceiling() -> None:
    from fslab.analyze.campaign.stats import interval_verdict

    # a floor (ratio at least 0.95): all above, all below, straddling
    assert interval_verdict(0.96, 1.02, 0.95) == "meets"
    assert interval_verdict(0.90, 0.94, 0.95) == "fails"
    assert interval_verdict(0.93, 0.98, 0.95) == "inconclusive"
    assert interval_verdict(0.95, 1.00, 0.95) == "meets"  # on the goal counts
    # a ceiling (wall time at most 1.10 x)
    assert interval_verdict(1.05, 1.09, 1.10, at_least=False) == "meets"
    assert interval_verdict(1.11, 1.20, 1.10, at_least=False) == "fails"
    assert interval_verdict(1.08, 1.12, 1.10, at_least=False) == "inconclusive"


# --- one significance level --------------------------------------------------------------------

# a significance level written as a number outside stats.py: a second alpha
_HARD_ALPHA = re.compile(r"\bp\w* <=? 0\.0[0-9]*5\b|ppf\(0\.975|ppf\(0\.025|1 - 0\.05\b")


def test_every_test_decides_at_the_one_alpha():
    from fslab.analyze.campaign import verdicts
    from fslab.analyze.noise.model import PointNoise
    from fslab.report.verdict_cells import MARK_LEGEND

    for function in (
        verdicts.compare,
        verdicts.judge,
        PointNoise.runs_to_find,
        PointNoise.campaigns_to_find,
    ):
        assert inspect.signature(function).parameters["alpha"].default is stats.ALPHA
    assert not hasattr(verdicts, "ALPHA")  # no second name to drift
    assert f"p < {stats.ALPHA:g} " in MARK_LEGEND
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "src" / "fslab").rglob("*.py"))
        if path.name != "stats.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _HARD_ALPHA.search(line)
    ]
    assert not found, "use stats.ALPHA:\n" + "\n".join(found)
