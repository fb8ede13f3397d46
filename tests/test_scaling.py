"""scaling: USL recovery from seeded noisy curves, N*, classes, knee, cliffs, warnings."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fslab.analyze.curve.usl import (
    MIN_POINTS_FIT,
    compare_fits,
    enough_points,
    fit_usl,
    knee,
    n_star,
    usl,
)
from fslab.base.errors import FslabError

DOUBLINGS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
N_BOOT = 100


def _curve(ns, gamma, sigma, kappa, *, cv=0.03, reps=5, seed=0, scale=None):
    rng = np.random.default_rng(seed)
    truth = usl(np.asarray(ns, dtype=float), gamma, sigma, kappa)
    if scale is not None:
        truth = truth * scale
    return [list(x * np.exp(rng.normal(0.0, cv, reps))) for x in truth]


@pytest.fixture(scope="module")
def retrograde():
    """gamma 1000, sigma 0.02, kappa 5e-5: N* = 140, measured to 1024."""
    return fit_usl(DOUBLINGS, _curve(DOUBLINGS, 1000.0, 0.02, 5e-5, seed=1), n_boot=N_BOOT, rng=1)


@pytest.fixture(scope="module")
def contention():
    """kappa = 0: throughput flattens towards gamma / sigma = 20000."""
    return fit_usl(DOUBLINGS, _curve(DOUBLINGS, 1000.0, 0.05, 0.0, seed=2), n_boot=N_BOOT, rng=2)


def _cliff_shape(ns, seed):
    """The first seed report's shape: peak around 64-256, then 5x down from 1024 on."""
    scale = np.where(np.asarray(ns) >= 1024, 0.2, 1.0)
    return _curve(ns, 1000.0, 0.05, 2e-5, reps=3, seed=seed, scale=scale)


def test_recovers_known_coefficients(retrograde):
    fit = retrograde
    for est, truth in ((fit.gamma, 1000.0), (fit.sigma, 0.02), (fit.kappa, 5e-5)):
        assert est.low <= truth <= est.high
        assert est.value == pytest.approx(truth, rel=0.15)
    assert fit.r_squared > 0.99
    assert fit.classification == "coherency-limited"


def test_n_star_is_sqrt_one_minus_sigma_over_kappa(retrograde):
    fit = retrograde
    assert n_star(0.02, 5e-5) == pytest.approx(140.0)
    assert fit.n_star is not None
    assert fit.n_star.value == pytest.approx(n_star(fit.sigma.value, fit.kappa.value))
    assert fit.n_star.low <= 140.0 <= fit.n_star.high
    assert fit.peak_kind == "peak"
    assert fit.peak_x == pytest.approx(float(usl(140.0, 1000.0, 0.02, 5e-5)), rel=0.05)
    assert not any("past the peak" in w for w in fit.warnings)


def test_kappa_zero_is_unbounded_and_contention_limited(contention):
    fit = contention
    assert fit.n_star is None
    assert fit.classification == "contention-limited"
    assert fit.kappa.low * 1024 * 1023 < 0.05  # indistinguishable from 0 in range
    assert fit.peak_kind == "asymptote"
    assert fit.peak_x == pytest.approx(20000.0, rel=0.1)
    assert any("unbounded" in line for line in fit.describe())


def test_linear_scaling_is_linear():
    ns = DOUBLINGS[:8]
    fit = fit_usl(ns, _curve(ns, 500.0, 0.0, 0.0, seed=3), n_boot=N_BOOT, rng=3)
    assert fit.classification == "linear"
    assert fit.n_star is None and fit.peak_kind == "none" and fit.peak_x is None
    assert fit.knee_n is None
    assert any("past the peak" in w for w in fit.warnings)


def test_cliff_is_bracketed_and_the_smooth_fit_uses_the_points_before_it():
    ns = [*DOUBLINGS, 2048]
    fit = fit_usl(ns, _cliff_shape(ns, seed=4), n_boot=N_BOOT, rng=4)
    assert fit.cliff is not None
    assert (fit.cliff.n_before, fit.cliff.n_after) == (512.0, 1024.0)
    assert fit.cliff.drop_pct == pytest.approx(80.0, abs=8.0)
    assert fit.n_fitted == 10
    assert fit.r_squared > 0.99
    assert fit.r_squared_all is not None and fit.r_squared_all < fit.r_squared
    assert fit.sigma.value == pytest.approx(0.05, rel=0.2)
    assert fit.kappa.low <= 2e-5 <= fit.kappa.high
    assert any("cliff between N=512 and N=1024" in line for line in fit.describe())


def test_cliff_bracket_follows_uneven_steps():
    ns = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 768, 1024]
    scale = np.where(np.asarray(ns) >= 768, 0.2, 1.0)
    reps = _curve(ns, 1000.0, 0.05, 2e-5, reps=3, seed=5, scale=scale)
    fit = fit_usl(ns, reps, n_boot=N_BOOT, rng=5)
    assert fit.cliff is not None
    assert (fit.cliff.n_before, fit.cliff.n_after) == (512.0, 768.0)


def test_steep_but_smooth_retrograde_is_not_a_cliff():
    fit = fit_usl(DOUBLINGS, _curve(DOUBLINGS, 1000.0, 0.01, 1e-3, seed=6), n_boot=N_BOOT, rng=6)
    assert fit.cliff is None
    assert fit.classification == "coherency-limited"
    assert fit.n_star is not None and fit.n_star.low <= 31.5 <= fit.n_star.high


def test_few_points_warn_and_too_few_refuse():
    ns = [1, 4, 16, 64]
    fit = fit_usl(ns, _curve(ns, 1000.0, 0.05, 1e-4, seed=7), n_boot=20, rng=7)
    assert any("only 4 sweep points" in w for w in fit.warnings)
    with pytest.raises(FslabError):
        fit_usl([1, 2], [[1.0], [2.0]])


def test_three_points_are_too_few_for_the_usl_wherever_it_is_fitted():
    """MIN_POINTS_FIT through enough_points: fit_usl used to fit 3 points that `scale`
    refused, so a 4-point curve with one point of zeros got a fit without a residual."""
    assert not enough_points(MIN_POINTS_FIT - 1) and enough_points(MIN_POINTS_FIT)
    ns = [1, 4, 16]
    with pytest.raises(FslabError, match=f"at least {MIN_POINTS_FIT} sweep points"):
        fit_usl(ns, _curve(ns, 1000.0, 0.05, 1e-4, seed=7), n_boot=20, rng=7)
    ns = [1, 4, 16, 64]
    reps = _curve(ns, 1000.0, 0.05, 1e-4, seed=7)
    reps[0] = [0.0, 0.0, 0.0]
    with pytest.raises(FslabError, match="got 3"):
        fit_usl(ns, reps, n_boot=20, rng=7)


def test_single_repetition_points_use_residual_bootstrap():
    ns = DOUBLINGS[:9]
    values = [reps[0] for reps in _curve(ns, 1000.0, 0.05, 1e-4, seed=8)]
    fit = fit_usl(ns, values, n_boot=50, rng=8)
    assert any("single repetition" in w for w in fit.warnings)
    assert fit.sigma.low < fit.sigma.value < fit.sigma.high


def test_non_positive_values_are_dropped_with_a_warning():
    ns = DOUBLINGS[:8]
    reps = _curve(ns, 1000.0, 0.05, 1e-4, seed=9)
    reps[2] = [*reps[2], 0.0, float("nan")]
    fit = fit_usl(ns, reps, n_boot=20, rng=9)
    assert any("2 non-positive or missing" in w for w in fit.warnings)


def test_fit_is_reproducible():
    ns = DOUBLINGS[:8]
    reps = _curve(ns, 1000.0, 0.05, 1e-4, seed=10)
    assert (
        fit_usl(ns, reps, n_boot=30, rng=3).to_dict()
        == fit_usl(ns, reps, n_boot=30, rng=3).to_dict()
    )


def test_knee_is_the_last_n_before_a_step_gaining_under_10_percent_per_doubling():
    assert knee([1, 2, 4, 8], [100.0, 200.0, 300.0, 310.0]) == 4.0
    # 512 -> 768 is 0.585 doublings: +5% over it is +8.7% per doubling -> knee
    assert knee([256, 512, 768], [100.0, 150.0, 157.5]) == 512.0
    # +7% over the same step is +12.3% per doubling -> still rising
    assert knee([256, 512, 768], [100.0, 150.0, 160.5]) is None


def test_compare_fits_names_the_coefficient_that_moved(retrograde, contention):
    lines = compare_fits(retrograde, contention)
    assert any(line.startswith("sigma (contention) rose") for line in lines)
    assert any("class changed" in line for line in lines)
    assert compare_fits(retrograde, retrograde) == ["no coefficient moved beyond its 95% interval"]


def test_to_dict_is_strict_json_and_describe_fits_80_columns(retrograde, contention):
    for fit in (retrograde, contention):
        data = json.loads(json.dumps(fit.to_dict(), allow_nan=False))
        assert data["classification"] == fit.classification
        assert all(len(line) <= 80 for line in fit.describe())
    assert json.loads(json.dumps(contention.to_dict()))["n_star"] is None
    assert math.isclose(retrograde.predict(140.0), retrograde.peak_x, rel_tol=1e-3)
