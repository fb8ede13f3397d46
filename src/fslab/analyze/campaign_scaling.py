"""USL fits of a stored campaign: one per configuration and concurrency curve.

`fslab.analyze.scaling` fits one curve; this module finds the curves in a
campaign (per configuration, and per value of any other sweep axis), fits
each, and says why a curve could not be fitted instead of failing: too few
points, failed points, no concurrency axis, a metric that is not a
throughput. With several configurations, the first one's fit is compared
with each other's, so "which coefficient moved" is one line per change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.dataset import CONCURRENCY_AXES, CampaignData, PointKey, key_label, point_key
from fslab.analyze.metrics_catalog import metric_def
from fslab.analyze.scaling import UslFit, compare_fits, fit_usl
from fslab.errors import FslabError, UsageError
from fslab.roles import counts_for_headline


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

    @property
    def label(self) -> str:
        return f"{self.config} {key_label(self.rest)}" if self.rest else self.config

    def describe(self) -> list[str]:
        lines = [f"{self.label}: {self.metric} over {self.axis}"]
        if self.failed_n:
            values = ", ".join(_num(n) for n in self.failed_n)
            lines.append(f"{len(self.failed_n)} failed point(s) left out ({self.axis}={values})")
        if self.fit is None:
            lines.append(f"no fit: {self.reason}")
            return lines
        return lines + self.fit.describe()

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
    try:
        curves = data.curve(config, metric, axis)
    except (TypeError, ValueError):
        return [_unfittable(config, axis, metric, f"{axis} values are not numbers")]
    failed = _failed_by_rest(data, config, axis)
    if not curves:
        reason = _no_points_reason(data, config, axis, failed)
        return [_unfittable(config, axis, metric, reason)]
    out = []
    for rest, (ns, reps) in curves.items():
        curve = CurveFit(config, rest, axis, metric, list(ns), reps, failed.get(rest, []))
        _fit_one(curve, n_boot)
        out.append(curve)
    return out


def _fit_one(curve: CurveFit, n_boot: int) -> None:
    if len(curve.n) < 3:
        values = ", ".join(_num(n) for n in curve.n) or "none"
        curve.reason = (
            f"only {len(curve.n)} {curve.axis} value(s) with results ({values}); "
            "the USL needs at least 3"
        )
        return
    try:
        curve.fit = fit_usl(curve.n, curve.reps, n_boot=n_boot)
    except FslabError as exc:
        curve.reason = str(exc)


def _failed_by_rest(data: CampaignData, config: str, axis: str) -> dict[PointKey, list[float]]:
    failed: dict[PointKey, list[float]] = {}
    for p in data.points:
        if p.config == config and p.status == "failed" and counts_for_headline(p.role):
            if axis not in p.sweep:
                continue
            n = _as_float(p.sweep[axis])
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


def _as_float(value: Any) -> float | None:
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def _num(value: float) -> str:
    return f"{value:g}"
