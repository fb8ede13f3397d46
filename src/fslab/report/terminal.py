"""Terminal tables (rich) for campaigns, their results and `fslab compare`."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.markup import escape
from rich.table import Table

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.summary import SummaryRow, watermark_relevant
from fslab.analyze.campaign.verdicts import ComparisonRow, Verdict
from fslab.analyze.versus.comparisons import Comparison
from fslab.base.format import format_bytes, format_change_pct
from fslab.base.vocab import PointKey, point_label, sweep_cell
from fslab.report.verdict_cells import CALL_CHAIN_SHARE, comparison_cells, comparison_label
from fslab.store.db import CampaignRow, PointRow
from fslab.workload.registry import metric_label


def format_evidence(
    headline: str | None, evidence: float | None, perturbation_pct: float | None, failed: bool
) -> str:
    """The evidence run's headline and its perturbation: "7.4K (-19%)"."""
    if evidence is None:
        return "failed" if failed else "-"
    pct = f" ({format_change_pct(perturbation_pct)})" if perturbation_pct is not None else ""
    return f"{format_value(headline, evidence)}{pct}"


EVIDENCE_CAPTION = (
    "evidence: the instrumented run's own headline and its change from the clean median"
)


def results_table(rows: Sequence[SummaryRow], title: str) -> Table:
    axes = list(dict.fromkeys(axis for row in rows for axis in row.sweep))
    headline = rows[0].headline if rows else None
    latency = rows[0].latency if rows else None
    show_watermark = watermark_relevant(rows)
    show_evidence = any(r.evidence is not None or r.evidence_failed for r in rows)
    caption = "median over runs; range: min..max over runs"
    if latency and latency.startswith("fio."):
        caption += "; p99 from merged histogram bins, median over runs"
    elif latency:  # sysbench and the others report their own percentiles
        caption += f"; {metric_label(latency)} as the tool reports it, median over runs"
    if show_evidence:
        caption += f"; {EVIDENCE_CAPTION}"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("config")
    for axis in axes:  # names and values are text, never rich markup ('[/]' is a name)
        table.add_column(escape(axis), justify="right")
    table.add_column(metric_label(headline, missing="result"), justify="right")
    table.add_column("range", justify="right")
    table.add_column("runs", justify="right")
    if latency:
        table.add_column(metric_label(latency), justify="right")
    if show_evidence:
        table.add_column("evidence", justify="right")
    if show_watermark:
        table.add_column("free", justify="right")
        table.add_column("watermark", justify="right")
    for row in rows:
        cells = [escape(row.config), *(escape(sweep_cell(row.sweep, axis)) for axis in axes)]
        cells.append(format_value(row.headline, row.median))
        spread = (
            f"{format_value(row.headline, row.minimum)}..{format_value(row.headline, row.maximum)}"
            if row.n_ok > 1
            else ""
        )
        cells.append(spread)
        runs = f"{row.n_ok}" + (f" ({row.n_failed} failed)" if row.n_failed else "")
        cells.append(runs)
        if latency:
            cells.append(format_value(latency, row.latency_median))
        if show_evidence:
            cells.append(
                format_evidence(headline, row.evidence, row.perturbation_pct, row.evidence_failed)
            )
        if show_watermark:
            free = row.facts.free_bytes_start
            cells.append(format_bytes(free) if free is not None else "-")
            mark = row.facts.ext4_watermark_bytes
            below = " BELOW" if row.facts.below_ext4_watermark else ""
            cells.append(f"{format_bytes(mark)}{below}" if mark is not None else "n/a")
        table.add_row(*cells)
    return table


def campaigns_table(campaigns: Sequence[CampaignRow], counts: dict[int, dict[str, int]]) -> Table:
    table = Table(title="campaigns", title_justify="left")
    columns = (
        "id",
        "name",
        "host",
        "status",
        "points ok/failed/pending",
        "started (UTC)",
        "kernel",
    )
    for column in columns:
        table.add_column(column)
    for c in campaigns:
        n = counts.get(c.id, {})
        table.add_row(
            str(c.id),
            escape(c.name),
            escape(c.hostname),
            c.status,
            f"{n.get('ok', 0)}/{n.get('failed', 0)}/{n.get('pending', 0)}",
            escape(c.started_at.replace("+00:00", "")),
            escape(str(c.host.fact("kernel_release") or "")),
        )
    return table


def failures_table(points: Sequence[PointRow]) -> Table:
    table = Table(title="failed points", title_justify="left")
    for column in ("seq", "config", "sweep", "reason"):
        table.add_column(column)
    for p in points:
        if p.status == "failed":
            sweep = point_label(p.sweep, empty="")
            table.add_row(str(p.seq), escape(p.config), escape(sweep), escape(p.error or ""))
    return table


# ------------------------------------------------------------------ comparisons
# `fslab compare`'s tables: the statistics of each row (n, medians, ratio and its
# interval, BH-adjusted p, verdict), picked from report/comparison's cells; the
# reports print other columns of the same cells (report/text.comparison_table).

_VERDICT_STYLE: dict[Verdict, str] = {
    "better": "green",
    "worse": "bold red",
    "changed": "yellow",
    "needs more runs": "dim",
    "no change shown": "",
}
METRIC_COLUMN_MAX = 12  # longer metric names get a table each


def comparison_tables(comparison: Comparison) -> list[tuple[str, Table]]:
    """(title, table) per configuration when the points carry one, else one table.

    Long metric names (evidence metrics such as wq.ext4-rsv-conversion.*) do
    not fit a column of an 80-column table: then each metric gets a table of
    its own, titled with its name.
    """
    rows = comparison.table.rows
    by_metric = any(len(comparison_label(r.metric)) > METRIC_COLUMN_MAX for r in rows)
    groups: dict[tuple[str | None, str | None], list[ComparisonRow]] = {}
    for row in rows:
        key = (_config_of(row.point), row.metric if by_metric else None)
        groups.setdefault(key, []).append(row)
    versus = f"{comparison.candidate} vs {comparison.baseline} (baseline)"
    tables = []
    shown: set[str | None] = set()
    for (config, metric), group in groups.items():
        heading = [] if config in shown else [f"{config}: {versus}" if config else versus]
        shown.add(config)
        if metric:
            heading.append(f"  {comparison_label(metric)}")
        tables.append(("\n".join(heading), comparison_table(group, with_metric=not by_metric)))
    return tables


def _config_of(point: PointKey) -> str | None:
    if isinstance(point, tuple) and point and point[0][0] == "config":
        return str(point[0][1])
    return None


def comparison_table(rows: Sequence[ComparisonRow], *, with_metric: bool = True) -> Table:
    """Rows of one comparison, narrow enough for 80 columns."""
    axes = [a for a in _point_axes(rows) if a != "config"]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=0)
    table.add_column(" ".join(axes) or "point", no_wrap=True)
    if with_metric:
        table.add_column("metric", no_wrap=True)
    for name in ("n", "base", "cand", "ratio", "95% CI", "p"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    previous = None
    for row in rows:
        c = comparison_cells(row)
        point = "" if row.point == previous else escape(_point_values(row.point))
        previous = row.point
        style = _VERDICT_STYLE[c.verdict]
        verdict = f"[{style}]{c.verdict}[/]" if style else c.verdict
        metric = [escape(c.metric)] if with_metric else []
        stats = [c.n, c.median_baseline, c.median_candidate, c.ratio, c.ci, c.p]
        table.add_row(point, *metric, *stats, verdict)
    return table


def shows_call_chain_shares(comparisons: Sequence[Comparison]) -> bool:
    """Whether a table has call-chain share rows (named by function: say what they are)."""
    return any(r.metric.startswith(CALL_CHAIN_SHARE) for c in comparisons for r in c.table.rows)


def _point_axes(rows: Sequence[ComparisonRow]) -> list[str]:
    """Axis names of the rows' point keys, for one header instead of one per cell."""
    axes: dict[str, None] = {}
    for row in rows:
        if isinstance(row.point, tuple):
            axes.update((str(pair[0]), None) for pair in row.point)
    return list(axes)


def _point_values(point: PointKey) -> str:
    if isinstance(point, tuple):
        return " ".join(str(value) for axis, value in point if axis != "config") or "-"
    return point_label(point)
