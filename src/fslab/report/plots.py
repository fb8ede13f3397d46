"""The report's plots as small, self-contained SVG documents (matplotlib).

Why these choices:
- matplotlib `Figure` objects are used directly, never pyplot: no GUI
  backend is selected, no display is needed, and no global figure state
  leaks between reports (the SVG canvas is picked by `savefig(format="svg")`).
- Settings go through `rc_context`, so importing fslab never changes the
  matplotlib defaults of a notebook that uses it.
- `svg.fonttype = none` keeps text as text (small files, selectable labels);
  `svg.hashsalt` is fixed per plot and the date is left out, so the same
  campaign renders byte-identical SVG.
- The XML prolog and DOCTYPE are stripped: the SVG is inlined in HTML and the
  DOCTYPE names a URL the report must not reference.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator
from matplotlib.typing import RcKeyType

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import format_tick_ms
from fslab.base.vocab import ScalarValue, point_label
from fslab.report.tree import Comparisons, Latency, Report, Scaling

FIG_SIZE_IN = (7.5, 3.9)
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "font.size": 9,
    "font.family": "sans-serif",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
    "legend.frameon": False,
}
_PERCENTILE_STYLE = {"p50": ":", "p99": "-", "p99_9": "--"}
_PERCENTILE_NAME = {"p50": "p50", "p99": "p99", "p99_9": "p99.9"}


def svg_text(fig: Figure, name: str) -> str:
    """The figure as an <svg> element: no prolog, deterministic ids, no metadata."""
    buffer = io.StringIO()
    with rc_context({**_RC, "svg.hashsalt": f"fslab-{name}"}):
        fig.savefig(
            buffer,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buffer.getvalue()
    start = text.find("<svg")
    svg = text[start:] if start >= 0 else text
    return re.sub(r"<svg ", f'<svg class="plot" id="plot-{name}" role="img" ', svg, count=1)


def _figure(ncols: int = 1) -> tuple[Figure, list]:
    with rc_context(_RC):
        fig = Figure(figsize=FIG_SIZE_IN, layout="constrained")
        axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _colour(configs: Sequence[str], config: str) -> str:
    return f"C{configs.index(config) % 10}" if config in configs else "C9"


def _log2_x(ax, values: Sequence[float]) -> None:
    """Log-x axis ticked at the measured sweep values themselves."""
    ax.set_xscale("log", base=2)
    ticks = sorted(set(values))
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{v:g}" for v in ticks])
    ax.xaxis.set_minor_locator(NullLocator())


def _value_axis(ax, metric: str | None) -> None:
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_value(metric, v)))


def _finish_axes(ax, metric: str | None, ylabel: str, title: str) -> None:
    """What every headline plot ends with: values in fslab's units, labels, legend."""
    _value_axis(ax, metric)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="best")


# ------------------------------------------------------------------ throughput


def throughput_plot(report: Report) -> str | None:
    """Throughput vs concurrency per configuration, USL fits dashed, knees ringed."""
    scaling: Scaling = report.scaling
    curves = [c for c in scaling.curves if c.n]
    if not curves or scaling.axis is None:
        return None
    configs = [fs.config for fs in report.setup.filesystems]
    metric = scaling.metric
    with rc_context(_RC):
        fig, (ax,) = _figure()
        all_n: list[float] = []
        for index, curve in enumerate(curves):
            colour = _colour(configs, curve.config)
            all_n += curve.n
            xs = [n for n, reps in zip(curve.n, curve.reps, strict=True) for _ in reps]
            ys = [v for reps in curve.reps for v in reps]
            ax.scatter(xs, ys, s=10, color=colour, alpha=0.45, linewidths=0)
            medians = [float(np.median(r)) for r in curve.reps]
            ax.plot(curve.n, medians, "o-", color=colour, label=curve.label, ms=4, lw=1.4)
            fit = curve.fit
            if fit is not None:
                grid = np.geomspace(min(fit.n[: fit.n_fitted]), max(fit.n), 200)
                ax.plot(grid, fit.predict(grid), "--", color=colour, lw=1, alpha=0.8)
            measured = curve.measured  # knee and cliff: analyze.curve.falloff, fit or no fit
            knee_n = measured.knee_n if measured else None
            if knee_n is not None and knee_n in curve.n:
                y = medians[curve.n.index(knee_n)]
                ax.plot([knee_n], [y], "o", ms=11, mfc="none", mec=colour, mew=1.5)
                ax.annotate(
                    f"knee N={knee_n:g}",
                    (knee_n, y),
                    textcoords="offset points",
                    xytext=(10, -14 - 11 * index),
                    color=colour,
                    fontsize=8,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
                )
            if measured is not None and measured.cliff is not None:
                ax.axvspan(
                    measured.cliff.n_before, measured.cliff.n_after, color=colour, alpha=0.08
                )
        _log2_x(ax, all_n)
        ax.set_ylim(bottom=0)
        ax.set_xlabel(f"{scaling.axis} (log scale)")
        _finish_axes(
            ax,
            metric,
            report.results.headline_label,
            f"{report.results.headline_label} vs {scaling.axis}: points = runs, "
            "line = median, dashed = USL fit (where identified), ring = knee, band = cliff",
        )
    return svg_text(fig, "throughput")


# ------------------------------------------------------------------ latency


def latency_plot(report: Report) -> str | None:
    """p50, p99 and p99.9 (medians over runs) vs concurrency, log-log."""
    latency: Latency = report.latency
    if not latency.curves:
        return None
    configs = [fs.config for fs in report.setup.filesystems]
    with rc_context(_RC):
        fig, (ax,) = _figure()
        all_n: list[float] = []
        for curve in latency.curves:
            colour = _colour(configs, curve.config)
            all_n += curve.n
            for q, style in _PERCENTILE_STYLE.items():
                pairs = [
                    (n, v / 1e6)
                    for n, v in zip(curve.n, curve.percentiles.get(q, []), strict=False)
                    if v
                ]
                if pairs:
                    ax.plot(*zip(*pairs, strict=True), style, color=colour, marker="o", ms=3)
        _log2_x(ax, all_n)
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_tick_ms(v)))
        ax.set_xlabel(f"{latency.curves[0].axis} (log scale)")
        ax.set_ylabel(f"{latency.label} (log scale)")
        ax.set_title(f"{latency.label} percentiles vs concurrency (median over runs)", fontsize=9)
        handles = [
            Line2D([], [], color=_colour(configs, c), label=c)
            for c in dict.fromkeys(curve.config for curve in latency.curves)
        ]
        handles += [
            Line2D([], [], color="0.3", ls=style, label=_PERCENTILE_NAME[q])
            for q, style in _PERCENTILE_STYLE.items()
        ]
        ax.legend(handles=handles, loc="best", ncols=2)
    return svg_text(fig, "latency")


def cdf_plot(report: Report) -> str | None:
    """Latency distribution of the best and worst point: CDF and tail (1 - CDF)."""
    cdfs = report.latency.cdfs
    if not cdfs:
        return None
    colours = {"worst": "C3", "best": "C0"}
    with rc_context(_RC):
        fig, (left, right) = _figure(2)
        for cdf in cdfs:
            x = np.asarray(cdf.values_ns) / 1e6
            y = np.asarray(cdf.cumulative)
            label = f"{cdf.role}: {cdf.point.label} ({cdf.samples} samples)"
            colour = colours.get(cdf.role, "C2")
            left.step(x, y, where="post", color=colour, label=label, lw=1.2)
            tail = 1.0 - y
            keep = tail > 0  # the last bin holds every sample: nothing left to draw on log y
            right.step(x[keep], tail[keep], where="post", color=colour, lw=1.2)
        for ax in (left, right):
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_tick_ms(v)))
            ax.set_xlabel(f"{report.latency.label} (log scale)")
        left.set_ylabel("fraction of samples <= x")
        left.set_ylim(0, 1.01)
        right.set_yscale("log")
        right.yaxis.set_minor_locator(NullLocator())
        right.set_ylabel("fraction > x (tail, log scale)")
        for level, name in ((1e-2, "p99"), (1e-3, "p99.9")):
            right.axhline(level, color="0.5", lw=0.6, ls=":")
            right.annotate(name, (1.0, level), xycoords=("axes fraction", "data"), fontsize=7)
        fig.suptitle("latency distribution from merged fio json+ bins", fontsize=9)
        fig.legend(loc="outside lower center", ncols=1)
    return svg_text(fig, "cdf")


# ------------------------------------------------------------------ comparisons


def bars_plot(report: Report) -> str | None:
    """Headline median per sweep point and configuration, 95% CI of the median as error bars."""
    comparisons: Comparisons = report.comparisons
    groups = [g for g in comparisons.bars if g.entries]
    configs = list(dict.fromkeys(e.config for g in groups for e in g.entries))
    if len(configs) < 2 or not groups:
        return None
    metric = comparisons.bar_metric
    width = 0.8 / len(configs)
    with rc_context(_RC):
        fig, (ax,) = _figure()
        for i, config in enumerate(configs):
            xs, heights, with_ci, without_ci = [], [], [], []
            for gi, group in enumerate(groups):
                entry = next((e for e in group.entries if e.config == config), None)
                if entry is None:
                    continue
                x = gi + (i - (len(configs) - 1) / 2) * width
                xs.append(x)
                heights.append(entry.median)
                if entry.ci_low is not None and entry.ci_high is not None:
                    with_ci.append((x, entry.median, entry.ci_low, entry.ci_high))
                else:
                    without_ci.append((x, entry.median, entry.n))
            colour = _colour([fs.config for fs in report.setup.filesystems], config)
            ax.bar(xs, heights, width * 0.95, color=colour, label=config)
            if with_ci:
                xa, m, low, high = (np.asarray(v) for v in zip(*with_ci, strict=True))
                ax.errorbar(xa, m, yerr=[m - low, high - m], fmt="none", ecolor="0.2", capsize=3)
            for x, h, n in without_ci:
                ax.annotate(
                    f"n={n}",
                    (x, h),
                    textcoords="offset points",
                    xytext=(0, 2),
                    ha="center",
                    fontsize=7,
                    color="0.35",
                )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([_group_label(g.point) for g in groups])
        _finish_axes(
            ax,
            metric,
            report.results.headline_label,
            f"{report.results.headline_label} by configuration: median, 95% bootstrap CI "
            "(no error bar below 3 runs)",
        )
    return svg_text(fig, "bars")


def _group_label(point: Mapping[str, ScalarValue]) -> str:
    """One axis per line (vocab's point label), so long sweep labels do not run together."""
    return "\n".join(point_label({axis: value}) for axis, value in point.items()) or point_label({})


def series_plot(report: Report) -> str | None:
    """Median headline of each campaign of this name, per point, change points dashed."""
    series = report.series
    if series is None or series.metric is None:
        return None
    with rc_context(_RC):
        fig, (ax,) = _figure()
        for index, point in enumerate(series.points):
            xs, ys = series.values(point)
            colour = f"C{index % 10}"
            ax.plot(xs, ys, "o-", color=colour, ms=4, lw=1.2, label=point_label(point))
            for cp in series.changes.get(point, []):
                ax.axvline(cp.index - 0.5, color=colour, ls="--", lw=1)
        here = [i for i, e in enumerate(series.entries) if e.campaign_id == report.campaign.id]
        for i in here:
            ax.axvspan(i - 0.4, i + 0.4, color="0.85", zorder=0)
        ax.set_xticks(range(len(series.entries)))
        ax.set_xticklabels([str(e.campaign_id) for e in series.entries])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("campaign (oldest first; shaded: this one)")
        # the medians are of the headlines adjusted when the series took slowdowns out
        adjusted = f" at {series.slowdown.short_at()}" if series.slowdown else ""
        _finish_axes(
            ax,
            series.metric,
            report.results.headline_label + adjusted,
            f"{report.results.headline_label}{adjusted} per campaign of "
            f"{series.selector}: dashed = change point (E-Divisive means + t test)",
        )
    return svg_text(fig, "series")


PLOTS: dict[str, Callable[[Report], str | None]] = {
    "throughput": throughput_plot,
    "latency": latency_plot,
    "cdf": cdf_plot,
    "bars": bars_plot,
    "series": series_plot,
}


def all_plots(report: Report) -> dict[str, str | None]:
    """Every plot by name; None where the campaign has nothing to draw."""
    return {name: make(report) for name, make in PLOTS.items()}
