"""Where throughput falls off: the Universal Scalability Law over a concurrency sweep.

    X(N) = gamma N / (1 + sigma (N - 1) + kappa N (N - 1))

gamma is the throughput of one unit of concurrency without interference (the
per-operation cost), sigma the share of work that is serialised (contention:
throughput flattens towards gamma / sigma), kappa the cost of keeping shared
state coherent across units (crosstalk: throughput peaks at
N* = sqrt((1 - sigma) / kappa) and then falls).

How the fit is made, and why:

- Fitted to the median of the repetitions at each point, in log space
  (residual = log model - log median): throughput spans orders of magnitude
  over a 1..2048 sweep and its noise is multiplicative, so every point
  weighs by its relative error and the peak does not drown the low end.
- gamma is a free parameter (not X(1)): normalising by one noisy point would
  carry that point's error into every coefficient. sigma and kappa are
  bounded to [0, 1] (scipy.optimize.least_squares, trf, several starts).
- 95% intervals by bootstrap: repetitions are resampled within each point
  and the medians refitted; with a single repetition at some point, log
  residuals of the fit are resampled instead.
- R^2 is computed in log space over the points fitted, matching the objective.
- A coefficient "matters" when even its lower 95% bound adds at least 5%
  (EFFECT) to the denominator at the largest measured N: sigma (N-1) or
  kappa N (N-1). Below that the data cannot tell it from zero over the range
  measured; in particular N* is reported "unbounded" unless kappa matters.

Knee and cliff are read from the measured medians by `analyze.curve.falloff`, the
one rule the whole tool uses for them. When there is a cliff, the USL is
refitted to the points before it (when at least 4 remain). Whether a fit is
shown at all (it must be identified) is decided in `campaign_scaling`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from fslab.analyze.campaign import stats
from fslab.analyze.curve.falloff import KNEE_GAIN, Cliff, find_cliff, knee, peak_index
from fslab.base.errors import FslabError
from fslab.base.format import format_fitted, format_share

CONFIDENCE = 0.95
EFFECT = 0.05  # a coefficient matters if its low bound adds >= 5% at the largest N
MIN_POINTS_ADVISED = 6
MIN_POINTS_FIT = 4  # fewer leave no residual degree of freedom worth a CI
POOR_R2 = 0.9

RepValues = Sequence[float] | float
# ((gamma, sigma, kappa), R^2 in log space, intervals of (gamma, sigma, kappa, N*))
_Model = tuple[
    tuple[float, float, float], float, tuple["Estimate", "Estimate", "Estimate", "Estimate"]
]


@dataclass(frozen=True)
class Estimate:
    """A fitted value and its 95% bootstrap interval."""

    value: float
    low: float
    high: float

    def overlaps(self, other: Estimate) -> bool:
        return self.low <= other.high and other.low <= self.high

    def to_dict(self) -> dict[str, float | None]:
        return {k: _finite_or_none(v) for k, v in vars(self).items()}

    def describe(self) -> list[str]:
        return [_est(self)]


@dataclass
class UslFit:
    """A USL fit of one scaling curve, with what was read from the measurements."""

    gamma: Estimate
    sigma: Estimate
    kappa: Estimate
    n_star: Estimate | None  # None: unbounded (kappa not distinguishable from 0)
    peak_x: float | None  # X(N*) when bounded; gamma/sigma asymptote when not; None if linear
    peak_kind: str  # "peak" | "asymptote" | "none"
    r_squared: float  # log space, over the fitted points
    classification: str  # "coherency-limited" | "contention-limited" | "linear"
    knee_n: float | None
    cliff: Cliff | None
    n: list[float]  # every sweep point, ascending
    x_median: list[float]  # median throughput per point
    n_fitted: int  # points the model was fitted to (those before a cliff)
    r_squared_all: float | None  # smooth fit over all points, when a cliff forced a refit
    n_boot: int
    warnings: list[str] = field(default_factory=list)

    def predict(self, n: stats.Values | float) -> np.ndarray:
        """Model throughput at concurrency n."""
        return usl(np.asarray(n, dtype=float), self.gamma.value, self.sigma.value, self.kappa.value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gamma": self.gamma.to_dict(),
            "sigma": self.sigma.to_dict(),
            "kappa": self.kappa.to_dict(),
            "n_star": self.n_star.to_dict() if self.n_star else None,
            "peak_x": _finite_or_none(self.peak_x),
            "peak_kind": self.peak_kind,
            "r_squared": _finite_or_none(self.r_squared),
            "classification": self.classification,
            "knee_n": self.knee_n,
            "cliff": self.cliff.to_dict() if self.cliff else None,
            "n": list(self.n),
            "x_median": list(self.x_median),
            "n_fitted": self.n_fitted,
            "r_squared_all": _finite_or_none(self.r_squared_all),
            "n_boot": self.n_boot,
            "warnings": list(self.warnings),
        }

    def describe(self) -> list[str]:
        """Short human lines (<= 80 columns)."""
        fitted = self.n[: self.n_fitted]
        lines = [
            f"USL fit over {self.n_fitted} points "
            f"(N {format_fitted(fitted[0])}..{format_fitted(fitted[-1])}), "
            f"R² {self.r_squared:.3f} (log space)",
            f"  gamma {_est(self.gamma)} per unit of N (throughput without interference)",
            f"  sigma {_est(self.sigma)} (contention, serialised share)",
            f"  kappa {_est(self.kappa)} (coherency, crosstalk)",
            _describe_class(self),
            _describe_peak(self),
        ]
        if self.knee_n is not None:
            lines.append(
                f"knee at N={format_fitted(self.knee_n)}: "
                f"doubling beyond it gains < {format_share(KNEE_GAIN)}"
            )
        if self.cliff:
            lines += self.cliff.describe()
            if self.r_squared_all is not None:
                lines.append(
                    f"threshold effect: a smooth fit over all points has R² "
                    f"{self.r_squared_all:.3f}; the fit above uses the points before the cliff"
                )
        lines += [f"warning: {w}" for w in self.warnings]
        return [part for line in lines for part in textwrap.wrap(line, 80, subsequent_indent="  ")]


# --- the model ------------------------------------------------------------------------------


def usl(n: np.ndarray | float, gamma: float, sigma: float, kappa: float) -> np.ndarray:
    """X(N) = gamma N / (1 + sigma (N-1) + kappa N (N-1))."""
    n = np.asarray(n, dtype=float)
    return gamma * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def n_star(sigma: float, kappa: float) -> float:
    """Concurrency of peak throughput, sqrt((1 - sigma) / kappa); inf when kappa is 0."""
    return math.sqrt((1.0 - sigma) / kappa) if kappa > 0 else math.inf


# --- fitting ----------------------------------------------------------------------------------


def enough_points(k: int) -> bool:
    """Whether k sweep points can identify the USL's three parameters: at least
    MIN_POINTS_FIT, so a residual is left to judge the fit and draw an interval from.
    The one rule for fitting at all and for refitting to the points before a cliff."""
    return k >= MIN_POINTS_FIT


def fit_usl(
    n: Sequence[float],
    x_by_rep: Sequence[RepValues],
    *,
    n_boot: int = 200,
    rng: stats.RngLike = None,
) -> UslFit:
    """Fit the USL to a sweep: n[i] is the concurrency, x_by_rep[i] its repetitions.

    x_by_rep[i] may be a list of per-repetition throughputs or one number.
    Non-positive and non-finite values are dropped (a log-space fit cannot
    use them) with a warning. Raises FslabError with too few usable points
    (enough_points).
    """
    warnings: list[str] = []
    ns, reps = _clean_points(n, x_by_rep, warnings)
    medians = np.array([np.median(r) for r in reps])
    generator = stats.make_rng(rng)

    theta_all = _point_fit(ns, medians)
    cliff = find_cliff(list(ns), reps, list(medians))
    n_fitted, r2_all = len(ns), None
    if cliff is not None:
        before = int(np.searchsorted(ns, cliff.n_after))
        if enough_points(before):
            n_fitted, r2_all = before, _r_squared(ns, medians, theta_all)
        else:
            warnings.append(
                f"only {before} points before the cliff: the USL is fitted to all points"
            )
    model = _fit_with_ci(
        ns[:n_fitted], reps[:n_fitted], medians[:n_fitted], n_boot, generator, warnings
    )
    return _assemble(ns, medians, n_fitted, model, cliff, r2_all, n_boot, warnings)


def _clean_points(
    n: Sequence[float], x_by_rep: Sequence[RepValues], warnings: list[str]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Points sorted by N, each with its finite positive repetitions."""
    if len(n) != len(x_by_rep):
        raise FslabError(f"USL fit: {len(n)} concurrency values but {len(x_by_rep)} points")
    by_n: dict[float, list[float]] = {}  # a repeated N pools its repetitions
    dropped = 0
    for n_i, values in zip(n, x_by_rep, strict=True):
        arr = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
        good = arr[np.isfinite(arr) & (arr > 0)]
        dropped += len(arr) - len(good)
        if float(n_i) > 0 and len(good):
            by_n.setdefault(float(n_i), []).extend(good.tolist())
    if dropped:
        warnings.append(f"{dropped} non-positive or missing values left out of the fit")
    points = sorted((n_i, np.array(values)) for n_i, values in by_n.items())
    if not enough_points(len(points)):
        raise FslabError(
            f"USL fit needs at least {MIN_POINTS_FIT} sweep points with throughput; "
            f"got {len(points)}"
        )
    if len(points) < MIN_POINTS_ADVISED:
        warnings.append(
            f"only {len(points)} sweep points: sigma and kappa are poorly determined "
            f"({MIN_POINTS_ADVISED} or more advised)"
        )
    return np.array([p[0] for p in points]), [p[1] for p in points]


def _residuals(theta: np.ndarray, ns: np.ndarray, log_y: np.ndarray, n_max: float) -> np.ndarray:
    gamma, sigma, kappa = _unscale(theta, n_max)
    return np.log(usl(ns, gamma, sigma, kappa)) - log_y


def _jacobian(theta: np.ndarray, ns: np.ndarray, log_y: np.ndarray, n_max: float) -> np.ndarray:
    """d residual / d theta, analytic (finite differences would triple the cost)."""
    _, sigma, kappa = _unscale(theta, n_max)
    denom = 1.0 + sigma * (ns - 1.0) + kappa * ns * (ns - 1.0)
    return np.column_stack(
        (
            np.ones_like(ns),
            -(ns - 1.0) / (denom * n_max),
            -ns * (ns - 1.0) / (denom * n_max**2),
        )
    )


def _unscale(theta: np.ndarray, n_max: float) -> tuple[float, float, float]:
    """Optimizer parameters -> (gamma, sigma, kappa).

    The optimizer works on log gamma, sigma N_max and kappa N_max^2, all of
    order 1 for curves that bend inside the measured range.
    """
    return float(np.exp(theta[0])), float(theta[1] / n_max), float(theta[2] / n_max**2)


def _least_squares(
    ns: np.ndarray, y: np.ndarray, starts: Sequence[np.ndarray]
) -> tuple[np.ndarray, float]:
    """Best bounded fit from several starting points: (theta, cost)."""
    n_max = float(ns[-1])
    lower = np.array([-np.inf, 0.0, 0.0])
    upper = np.array([np.inf, n_max, n_max**2])
    log_y = np.log(y)
    best: tuple[np.ndarray, float] | None = None
    for start in starts:
        x0 = np.clip(start, lower, upper)
        res = least_squares(
            _residuals,
            x0,
            jac=_jacobian,
            bounds=(lower, upper),
            args=(ns, log_y, n_max),
            method="trf",
        )
        if best is None or res.cost < best[1]:
            best = (res.x, float(res.cost))
    assert best is not None
    return best


def _point_fit(ns: np.ndarray, medians: np.ndarray) -> np.ndarray:
    """The best of several starts, in optimizer parameters (see _unscale)."""
    return _least_squares(ns, medians, _starts(ns, medians))[0]


def _starts(ns: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    log_gamma = float(np.log(np.max(y[: max(2, len(y) // 4)] / ns[: max(2, len(y) // 4)])))
    return [np.array([log_gamma, s, k]) for s in (0.1, 3.0, 30.0) for k in (0.0, 0.5, 5.0, 50.0)]


def _r_squared(ns: np.ndarray, y: np.ndarray, theta: np.ndarray) -> float:
    resid = _residuals(theta, ns, np.log(y), float(ns[-1]))
    total = float(np.sum((np.log(y) - np.mean(np.log(y))) ** 2))
    return 1.0 - float(np.sum(resid**2)) / total if total > 0 else float("nan")


def _fit_with_ci(
    ns: np.ndarray,
    reps: list[np.ndarray],
    medians: np.ndarray,
    n_boot: int,
    generator: np.random.Generator,
    warnings: list[str],
) -> _Model:
    """Point fit, its log-space R^2, and bootstrap intervals of gamma, sigma, kappa, N*."""
    theta = _point_fit(ns, medians)
    params = _unscale(theta, float(ns[-1]))
    samples = _bootstrap(ns, reps, medians, theta, n_boot, generator, warnings)
    nstar_samples = np.array([n_star(s, k) for _, s, k in samples])
    point_nstar = n_star(params[1], params[2])
    gamma, sigma, kappa = np.asarray(samples).T
    intervals = (
        _interval(params[0], gamma),
        _interval(params[1], sigma),
        _interval(params[2], kappa),
        _interval(point_nstar, nstar_samples),
    )
    return params, _r_squared(ns, medians, theta), intervals


def _bootstrap(
    ns: np.ndarray,
    reps: list[np.ndarray],
    medians: np.ndarray,
    theta: np.ndarray,
    n_boot: int,
    generator: np.random.Generator,
    warnings: list[str],
) -> list[tuple[float, float, float]]:
    """Refit n_boot resampled curves, each started from the point fit."""
    n_max = float(ns[-1])
    by_reps = all(len(r) >= 2 for r in reps)
    if not by_reps:
        warnings.append(
            "a point has a single repetition: intervals come from resampled fit residuals"
        )
    fitted = usl(ns, *_unscale(theta, n_max))
    log_resid = np.log(medians) - np.log(fitted)
    out = []
    for _ in range(n_boot):
        if by_reps:
            y = np.array([np.median(generator.choice(r, size=len(r))) for r in reps])
        else:
            y = fitted * np.exp(generator.choice(log_resid, size=len(ns)))
        boot_theta, _ = _least_squares(ns, y, [theta])
        out.append(_unscale(boot_theta, n_max))
    return out


def _interval(value: float, samples: np.ndarray) -> Estimate:
    """Percentile interval; "inverted_cdf" picks actual samples, so inf (N*) is kept as is."""
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail], method="inverted_cdf")
    return Estimate(float(value), float(low), float(high))


def _matters(estimate: Estimate, term_at_max: float) -> bool:
    """Whether even the coefficient's low bound adds >= EFFECT at the largest N."""
    return estimate.low * term_at_max >= EFFECT


def _assemble(
    ns: np.ndarray,
    medians: np.ndarray,
    n_fitted: int,
    model: _Model,
    cliff: Cliff | None,
    r2_all: float | None,
    n_boot: int,
    warnings: list[str],
) -> UslFit:
    """Classify, locate the peak and knee, collect warnings: the finished UslFit."""
    (gamma, sigma, kappa), r2, (g_ci, s_ci, k_ci, nstar_ci) = model
    n_max = float(ns[n_fitted - 1])
    kappa_matters = _matters(k_ci, n_max * (n_max - 1.0))
    sigma_matters = _matters(s_ci, n_max - 1.0)
    classification = (
        "coherency-limited"
        if kappa_matters
        else "contention-limited"
        if sigma_matters
        else "linear"
    )
    bounded = kappa_matters and math.isfinite(nstar_ci.value)
    if bounded:
        peak_kind, peak_x = "peak", float(usl(nstar_ci.value, gamma, sigma, kappa))
    elif sigma_matters:
        peak_kind, peak_x = "asymptote", gamma / sigma
    else:
        peak_kind, peak_x = "none", None
    _curve_warnings(ns, medians, n_fitted, nstar_ci if bounded else None, r2, warnings)
    return UslFit(
        gamma=g_ci,
        sigma=s_ci,
        kappa=k_ci,
        n_star=nstar_ci if bounded else None,
        peak_x=peak_x,
        peak_kind=peak_kind,
        r_squared=r2,
        classification=classification,
        knee_n=knee(list(ns), list(medians)),
        cliff=cliff,
        n=[float(v) for v in ns],
        x_median=[float(v) for v in medians],
        n_fitted=n_fitted,
        r_squared_all=r2_all,
        n_boot=n_boot,
        warnings=warnings,
    )


def _curve_warnings(
    ns: np.ndarray,
    medians: np.ndarray,
    n_fitted: int,
    nstar_ci: Estimate | None,
    r2: float,
    warnings: list[str],
) -> None:
    fitted_max = float(ns[n_fitted - 1])
    if peak_index(list(medians[:n_fitted])) == n_fitted - 1:
        warnings.append(
            f"no point past the peak: throughput is highest at the largest N "
            f"({format_fitted(fitted_max)}), so a fall beyond it can be neither seen nor ruled out"
        )
    elif nstar_ci is not None and nstar_ci.value > fitted_max:
        warnings.append(f"N* = {format_fitted(nstar_ci.value)} lies beyond the largest N fitted")
    if math.isfinite(r2) and r2 < POOR_R2:
        warnings.append(f"poor fit (R² {r2:.2f}): the curve may not follow the USL")


# --- comparing two fits ------------------------------------------------------------------


def compare_fits(a: UslFit, b: UslFit) -> list[str]:
    """Which coefficients moved from a to b: their 95% intervals do not overlap.

    Non-overlapping intervals are a conservative test (two overlapping
    intervals can still differ significantly), so a line here is a strong
    statement and silence is not proof of no change.
    """
    lines = []
    named = (
        ("gamma", "per-unit throughput", a.gamma, b.gamma),
        ("sigma", "contention", a.sigma, b.sigma),
        ("kappa", "coherency", a.kappa, b.kappa),
    )
    for name, meaning, old, new in named:
        if not old.overlaps(new):
            verb = "rose" if new.value > old.value else "fell"
            lines.append(f"{name} ({meaning}) {verb}: {_est(old)} -> {_est(new)}")
    if a.n_star and b.n_star and not a.n_star.overlaps(b.n_star):
        lines.append(
            f"N* moved: {format_fitted(a.n_star.value)} -> {format_fitted(b.n_star.value)}"
        )
    if a.classification != b.classification:
        lines.append(f"class changed: {a.classification} -> {b.classification}")
    if b.cliff and a.cliff is None:
        lines.append(f"cliff appeared: {b.cliff.describe()[0]}")
    elif a.cliff and b.cliff is None:
        lines.append(f"cliff gone (was {a.cliff.describe()[0]})")
    return lines or ["no coefficient moved beyond its 95% interval"]


# --- formatting ---------------------------------------------------------------------------


def _est(estimate: Estimate) -> str:
    low, high = format_fitted(estimate.low), format_fitted(estimate.high)
    return f"{format_fitted(estimate.value)} [{low}, {high}]"


def _describe_class(fit: UslFit) -> str:
    return {
        "coherency-limited": "coherency-limited: throughput peaks and then falls (retrograde)",
        "contention-limited": "contention-limited: serialisation flattens throughput",
        "linear": "linear: no significant contention or coherency cost in range",
    }[fit.classification]


def _describe_peak(fit: UslFit) -> str:
    if fit.peak_kind == "peak" and fit.n_star is not None:
        return (
            f"peak {format_fitted(fit.peak_x or 0.0)} at N* = {format_fitted(fit.n_star.value)} "
            f"[{format_fitted(fit.n_star.low)}, {format_fitted(fit.n_star.high)}]"
        )
    if fit.peak_kind == "asymptote":
        return (
            f"N* unbounded; throughput approaches {format_fitted(fit.peak_x or 0.0)} (gamma/sigma)"
        )
    return "N* unbounded; no ceiling within the model"


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
