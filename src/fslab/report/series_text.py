"""A series of campaigns as text: `fslab series` and the report's Series section."""

from __future__ import annotations

import textwrap

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.history.series import Series
from fslab.base.format import format_change_pct
from fslab.base.vocab import point_label
from fslab.workload.registry import metric_label


def series_lines(built: Series) -> list[str]:
    """The series as text: a row per campaign, a column per point, change points marked."""
    metric = metric_label(built.metric or "?")
    lines = [
        f"series {built.selector}: {len(built.entries)} campaign(s), {metric} median per point"
    ]
    if built.slowdown is not None:  # the medians are adjusted: say so before them
        lines += textwrap.wrap(built.slowdown.describe(), width=80, subsequent_indent="  ")
    columns = _column_labels(built)
    width = max([7, *(len(c) for c in columns)])
    lines.append(
        f"{'id':>4}  {'started (UTC)':<16}  {'kernel or commit':<16} "
        + " ".join(f"{c:>{width}}" for c in columns)
    )
    starts = {(p, cp.index): cp for p, cps in built.changes.items() for cp in cps}
    for i, entry in enumerate(built.entries):
        cells = []
        for point in built.points:
            value = entry.medians.get(point)
            mark = "*" if (point, i) in starts else " "
            text = format_value(built.metric, value) if value is not None else "-"
            cells.append(f"{mark + text:>{width}}")
        when = entry.started_at.replace("+00:00", "")[:16].replace("T", " ")
        where = (entry.candidate or entry.kernel)[:16]
        lines.append(f"{entry.campaign_id:>4}  {when:<16}  {where:<16} " + " ".join(cells))
    lines.append("")
    if not built.changes:
        lines.append("no change point (E-Divisive means + t test, p < threshold)")
    for point, cps in built.changes.items():
        for cp in cps:
            entry = built.entries[cp.index]
            lines.append(
                f"* change at campaign {entry.campaign_id} ({point_label(point)}): "
                f"{format_value(built.metric, cp.mean_before)} -> "
                f"{format_value(built.metric, cp.mean_after)} "
                f"({format_change_pct(cp.change_pct, 1)}), "
                f"p {cp.p_value:.2g}"
            )
    lines.append("change points: E-Divisive means (ruptures Binseg, l2) + t test between segments")
    return lines


def _column_labels(built: Series) -> list[str]:
    """Point labels, without the configuration when every point has the same one."""
    configs = {dict(p).get("config") for p in built.points}
    if len(configs) != 1:
        return [point_label(p) for p in built.points]
    return [point_label(tuple(kv for kv in p if kv[0] != "config")) or "-" for p in built.points]
