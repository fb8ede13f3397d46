"""The reporter's figures beside fslab's: which measured point each figure stands next to.

A report's figures (the spec's [reported].expected, written by `fslab
reproduce`) were measured at the reporter's own settings; the spec sweeps
around them, and [reported].point keeps the reporter's value of each axis it
added (numjobs=2048 at the top of a ladder, "" for a fresh filesystem). Each
figure is matched to its configuration's measured point at those values, or
the nearest one measured (on a log scale for numbers: 1024 is nearer 2048 than
256), and fslab's figure there is the median over its clean runs. What cannot
stand beside a figure (a percent change, a figure fslab has no metric for, an
axis the report leaves open) says why instead.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.curve.falloff import as_number
from fslab.base.vocab import PointKey, point_label
from fslab.spec.reported import ReportedFigure, ReportedSpec


@dataclass(frozen=True)
class MatchedPoint:
    """The measured sweep point that stands for the reporter's."""

    key: PointKey
    exact: bool  # measured at the reporter's own values
    reporter: str  # the reporter's values, as a label: "numjobs=2048"

    @property
    def label(self) -> str:
        return point_label(self.key)


def _distance(measured: Any, wanted: Any) -> float | None:
    """How far a measured axis value is from the reporter's (None: not comparable)."""
    if str(measured) == str(wanted):
        return 0.0
    a, b = as_number(measured), as_number(wanted)
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return abs(math.log(a / b))


def reporter_point(
    data: CampaignData, config: str, point: Mapping[str, Any]
) -> tuple[MatchedPoint | None, str]:
    """The configuration's measured point nearest the reporter's, or None and why not."""
    keys = [k for k in data.values(data.headline, config)] if data.headline else []
    if not keys:
        return None, f"{config} has no successful point"
    axes = data.axes()
    open_axes = [a for a in axes if a not in point]
    if open_axes and len(keys) > 1:
        return None, f"the report does not say which {' or '.join(open_axes)} it ran"
    reporter = " ".join(f"{a}={point[a]}" for a in axes if a in point)
    best: tuple[float, PointKey] | None = None
    for key in keys:
        distances = [_distance(v, point[a]) for a, v in key if a in point]
        if any(d is None for d in distances):
            continue
        total = sum(d for d in distances if d is not None)
        if best is None or total < best[0]:
            best = (total, key)
    if best is None:
        return None, f"no point of {config} was measured at the report's {reporter}"
    return MatchedPoint(best[1], best[0] == 0.0, reporter), ""


@dataclass(frozen=True)
class FigureMatch:
    """One reporter's figure and fslab's at the matching point (or why there is none).

    `figure` is None for a configuration the report gave no figure for: fslab's
    own figure at the same point, so the counterpart and remedy stand in the table.
    """

    figure: ReportedFigure | None
    config: str
    metric: str
    point: MatchedPoint | None
    measured: float | None  # fslab's median over the clean runs at the point
    runs: int
    why_none: str = ""


def match_figures(data: CampaignData, reported: ReportedSpec) -> list[FigureMatch]:
    """Each of the reporter's figures with fslab's, then the other configurations' figures."""
    configs = data.configs()
    matches = [_match(data, f, reported, configs) for f in reported.expected]
    shown = [m for m in matches if m.point is not None and m.metric == data.headline]
    if data.headline and shown:
        point = shown[0].point
        assert point is not None
        named = {m.config for m in matches}
        for config in configs:
            if config not in named:
                matches.append(_at(data, None, config, data.headline, point.key, point))
    return matches


def _match(
    data: CampaignData, figure: ReportedFigure, reported: ReportedSpec, configs: list[str]
) -> FigureMatch:
    config = figure.config or (configs[0] if configs else "")
    metric = figure.metric

    def none(why: str) -> FigureMatch:
        return FigureMatch(figure, config, metric, None, None, 0, why)

    if figure.unit == "%":
        return none("a change between the reporter's runs; fslab's changes are below")
    if not metric:
        return none("fslab has no metric for it")
    if config not in configs:
        return none(f"{config or 'its configuration'} did not run in this campaign")
    point, why = reporter_point(data, config, reported.point)
    if point is None:
        return none(why)
    return _at(data, figure, config, metric, point.key, point)


def _at(
    data: CampaignData,
    figure: ReportedFigure | None,
    config: str,
    metric: str,
    key: PointKey,
    point: MatchedPoint,
) -> FigureMatch:
    values = [v for v in data.values(metric, config).get(key, []) if math.isfinite(v)]
    if not values:
        why = "not measured here"
        if metric.startswith("profile.") and data.values("profile.samples", config).get(key):
            why = "not among the hottest on-CPU functions here"
        return FigureMatch(figure, config, metric, point, None, 0, why)
    return FigureMatch(figure, config, metric, point, statistics.median(values), len(values))
