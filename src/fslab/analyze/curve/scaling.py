"""USL fits of a stored campaign: one per configuration and concurrency curve.

`fslab.analyze.curve.usl` fits one curve; this module finds the curves in a
campaign (per configuration, and per value of any other sweep axis), reads
each with `analyze.curve.falloff` (peak, knee, cliff: the measured facts every
command shares) and fits the USL only where the fit is identified:

- at least MIN_POINTS_FIT (4) points (6 advised): three parameters through
  three points leave no residual, and an interval from a fit with no
  residual degrees of freedom means nothing;
- points on both sides of the observed peak (among the points fitted: those
  before a cliff, when it leaves 4): a curve that only rises cannot locate
  a peak, and one that only falls cannot tell contention from coherency;
- a fitted N* near the measured range (within a factor NSTAR_RANGE of its
  ends): a peak far outside it is an extrapolation, not a measurement.

Otherwise the curve says why there is no fit and gives the observed peak and
the falloff ratio instead. Failed points, a missing concurrency axis or a
metric that is not a throughput are reasons too, never errors. With several
configurations, the first one's fit is compared with each other's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.campaign.dataset import CONCURRENCY_AXES, CampaignData
from fslab.analyze.campaign.metrics_catalog import format_value, metric_def
from fslab.analyze.curve import falloff
from fslab.analyze.curve.falloff import Curve
from fslab.analyze.curve.usl import (
    MIN_POINTS_ADVISED,
    MIN_POINTS_FIT,
    UslFit,
    compare_fits,
    enough_points,
    fit_usl,
)
from fslab.base.errors import FslabError, UsageError
from fslab.base.format import format_plain, format_ratio
from fslab.base.roles import counts_for_headline
from fslab.base.vocab import PointKey, point_key, point_label

NSTAR_RANGE = 2.0  # N* within [N_min / 2, 2 N_max] counts as near the measured range


@dataclass
class CurveFit:
    """One configuration's curve over the axis (other axes held at `rest`)."""

    config: str
    rest: PointKey
    axis: str
    metric: str
    n: list[float]  # measured concurrency values, ascending
    reps: list[list[float]]  # per-repetition metric values at each n
    failed_n: list[float]  # concurrency values of failed points, left out
    fit: UslFit | None = None
    reason: str | None = None  # why there is no fit
    measured: Curve | None = None  # peak, knee and cliff from the medians (analyze.curve.falloff)

    @property
    def label(self) -> str:
        return f"{self.config} {point_label(self.rest)}" if self.rest else self.config

    def describe(self) -> list[str]:
        lines = [f"{self.label}: {self.metric} over {self.axis}"]
        if self.failed_n:
            values = ", ".join(format_plain(n) for n in self.failed_n)
            lines.append(f"{len(self.failed_n)} failed point(s) left out ({self.axis}={values})")
        if self.fit is None:
            lines.append(f"no USL fit: {self.reason}")
            return lines + self.observed()
        return lines + self.fit.describe()

    def observed(self) -> list[str]:
        """The measured peak and the falloff ratio beyond it: what stands without a fit."""
        if self.measured is None or not self.measured.points:
            return []
        curve, axis = self.measured, self.axis
        peak, low = curve.peak, curve.low
        fmt = format_value
        lines = [
            f"observed peak {fmt(self.metric, peak.median)} at {axis}={format_plain(peak.n or 0)}"
        ]
        if low is not peak:
            lines.append(
                f"falloff beyond it: {fmt(self.metric, low.median)} "
                f"at {axis}={format_plain(low.n or 0)} "
                f"(x{format_ratio(low.median / peak.median)})"
            )
        if curve.knee_n is not None:
            lines.append(f"knee at {axis}={format_plain(curve.knee_n)}")
        if curve.cliff is not None:
            lines += curve.cliff.describe(axis)
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "rest": dict(self.rest),
            "axis": self.axis,
            "metric": self.metric,
            "n": self.n,
            "reps": self.reps,
            "failed_n": self.failed_n,
            "fit": self.fit.to_dict() if self.fit else None,
            "reason": self.reason,
            "observed": self.observed(),
        }


@dataclass
class FitMove:
    """compare_fits between the baseline config's curve and another's."""

    baseline: str
    candidate: str
    lines: list[str]

    def to_dict(self) -> dict[str, Any]:
        return vars(self).copy()


@dataclass
class ScaleReport:
    """Everything `fslab scale` prints for one campaign."""

    campaign_id: int
    axis: str | None
    metric: str | None
    curves: list[CurveFit] = field(default_factory=list)
    moves: list[FitMove] = field(default_factory=list)
    reason: str | None = None  # why nothing could be fitted at all

    def fitted(self) -> list[CurveFit]:
        return [c for c in self.curves if c.fit is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign_id,
            "axis": self.axis,
            "metric": self.metric,
            "curves": [c.to_dict() for c in self.curves],
            "moves": [m.to_dict() for m in self.moves],
            "reason": self.reason,
        }


def fit_campaign(
    data: CampaignData,
    *,
    config: str | None = None,
    metric: str | None = None,
    axis: str | None = None,
    n_boot: int = 200,
) -> ScaleReport:
    """Fit the USL to every curve of the campaign (or of one configuration).

    Raises UsageError for a config, axis or metric the user named that does
    not fit the campaign; data that cannot be fitted is a reason, not an error.
    """
    configs = _configs(data, config)
    metric = metric or data.headline
    report = ScaleReport(data.id, axis or data.concurrency_axis(), metric)
    if metric is None:
        report.reason = "no successful point has a throughput metric"
        return report
    _check_metric(data, metric)
    if report.axis is None:
        report.reason = _no_axis_reason(data)
        return report
    if axis is not None and axis not in data.axes():
        axes = ", ".join(data.axes()) or "none"
        raise UsageError(f"campaign {data.id} does not sweep {axis!r} (its axes: {axes})")
    for name in configs:
        report.curves += _curves(data, name, metric, report.axis, n_boot)
    report.moves = _moves(report.curves)
    return report


def _configs(data: CampaignData, config: str | None) -> list[str]:
    configs = data.configs()
    if config is None:
        return configs
    if config not in configs:
        raise UsageError(
            f"no configuration {config!r} in campaign {data.id} (it has: {', '.join(configs)})"
        )
    return [config]


def _check_metric(data: CampaignData, metric: str) -> None:
    if metric not in data.metric_names():
        raise UsageError(f"no point of campaign {data.id} has metric {metric!r}")
    direction = metric_def(metric).direction
    if direction != "higher":
        raise UsageError(
            f"{metric} is not a throughput (declared {direction!r}); the USL models "
            "throughput: use an IOPS or bandwidth metric"
        )


def _no_axis_reason(data: CampaignData) -> str:
    axes = ", ".join(data.axes()) or "nothing"
    return (
        f"campaign {data.id} sweeps {axes}: no concurrency axis "
        f"({', '.join(CONCURRENCY_AXES)}); name one with --axis"
    )


def _curves(data: CampaignData, config: str, metric: str, axis: str, n_boot: int) -> list[CurveFit]:
    """Fit every curve of one config; a curve per value of the other axes."""
    failed = _failed_by_rest(data, config, axis)
    measured = falloff.curves(data, config, metric, axis)
    if not measured:
        numeric = all(
            falloff.as_number(p.sweep.get(axis)) is not None for p in data.ok_points(config)
        )
        reason = (
            _no_points_reason(data, config, axis, failed)
            if numeric
            else f"{axis} values are not numbers"
        )
        return [_unfittable(config, axis, metric, reason)]
    out = []
    for m in measured:
        curve = CurveFit(config, m.rest, axis, metric, m.n, m.reps, failed.get(m.rest, []))
        curve.measured = m
        _fit_one(curve, n_boot)
        out.append(curve)
    return out


def _fit_one(curve: CurveFit, n_boot: int) -> None:
    """Fit the USL where the measured curve identifies it (module docstring)."""
    assert curve.measured is not None
    curve.reason = unidentified_reason(curve.measured)
    if curve.reason is not None:
        return
    try:
        fit = fit_usl(curve.n, curve.reps, n_boot=n_boot)
    except FslabError as exc:
        curve.reason = str(exc)
        return
    curve.reason = nstar_reason(fit, curve.axis)
    if curve.reason is None:
        curve.fit = fit


def unidentified_reason(curve: Curve) -> str | None:
    """Why the USL cannot be identified from these points (None: it can be fitted)."""
    axis, k = curve.axis, len(curve.points)
    if not enough_points(k):
        return (
            f"{k} {axis} value(s); the USL's three parameters need at least {MIN_POINTS_FIT} "
            f"points ({MIN_POINTS_ADVISED} advised): with {k} no residual is left to judge "
            "the fit or to draw an interval from"
        )
    fitted = curve.points
    if curve.cliff is not None:
        before = [p for p in curve.points if (p.n or 0) < curve.cliff.n_after]
        if enough_points(len(before)):
            fitted = before
    peak = falloff.peak_index([p.median for p in fitted])
    where = " before the cliff" if fitted is not curve.points else ""
    if peak == 0:
        return (
            f"throughput is highest at the smallest {axis} measured{where} "
            f"({format_plain(fitted[0].n or 0)}): no point before the peak, so the rise the USL "
            "describes is not measured"
        )
    if peak == len(fitted) - 1:
        return (
            f"throughput is highest at the largest {axis} measured{where} "
            f"({format_plain(fitted[-1].n or 0)}): no point past the peak, "
            "so the peak is not located"
        )
    return None


def nstar_reason(fit: UslFit, axis: str) -> str | None:
    """Why a fit's peak is not credible: unbounded, or far outside the measured range."""
    fitted = fit.n[: fit.n_fitted]
    low, high = fitted[0] / NSTAR_RANGE, fitted[-1] * NSTAR_RANGE
    if fit.n_star is None:
        return (
            f"the fitted curve has no bounded peak (kappa indistinguishable from 0) while the "
            f"measured one peaks inside {axis} "
            f"{format_plain(fitted[0])}..{format_plain(fitted[-1])}: "
            "the USL does not describe it"
        )
    if not low <= fit.n_star.value <= high:
        return (
            f"the fitted N* = {fit.n_star.value:.3g} lies far outside the measured range "
            f"({axis} {format_plain(fitted[0])}..{format_plain(fitted[-1])}): "
            "an extrapolation, not shown"
        )
    return None


def _failed_by_rest(data: CampaignData, config: str, axis: str) -> dict[PointKey, list[float]]:
    failed: dict[PointKey, list[float]] = {}
    for p in data.points:
        if (
            p.config == config
            and p.status == "failed"
            and counts_for_headline(p.role)
            and axis in p.sweep
        ):
            n = falloff.as_number(p.sweep[axis])
            if n is not None:
                failed.setdefault(point_key(p.sweep, drop=[axis]), []).append(n)
    return {rest: sorted(set(ns)) for rest, ns in failed.items()}


def _no_points_reason(
    data: CampaignData, config: str, axis: str, failed: dict[PointKey, list[float]]
) -> str:
    pending = sum(1 for p in data.points if p.config == config and p.status == "pending")
    n_failed = sum(len(v) for v in failed.values())
    if n_failed:
        return f"every point failed ({n_failed} {axis} value(s))"
    if pending:
        return f"{pending} point(s) not run yet: fslab run --resume {data.id}"
    return "no point has the metric"


def _unfittable(config: str, axis: str, metric: str, reason: str) -> CurveFit:
    return CurveFit(config, (), axis, metric, [], [], [], reason=reason)


def _moves(curves: list[CurveFit]) -> list[FitMove]:
    """The first config's fit against every other config's, per matching curve."""
    fitted = [c for c in curves if c.fit is not None]
    if not fitted:
        return []
    base_config = fitted[0].config
    bases = {c.rest: c for c in fitted if c.config == base_config}
    moves = []
    for curve in fitted:
        base = bases.get(curve.rest)
        if curve.config == base_config or base is None:
            continue
        assert base.fit is not None and curve.fit is not None
        moves.append(FitMove(base.label, curve.label, compare_fits(base.fit, curve.fit)))
    return moves
