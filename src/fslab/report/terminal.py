"""Terminal tables (rich) for campaigns and their results."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from fslab.analyze.summary import SummaryRow
from fslab.store.db import CampaignRow, PointRow
from fslab.units import format_bytes
from fslab.units import format_metric_value as format_value


def _headline_label(metric: str | None) -> str:
    labels = {
        "fio.write.iops": "write IOPS",
        "fio.read.iops": "read IOPS",
        "fio.total.iops": "IOPS",
        "dd.bw_bytes_s": "dd rate",
    }
    return labels.get(metric or "", metric or "result")


def _latency_label(metric: str) -> str:
    kind = {"sync": "fsync", "write": "write", "read": "read"}.get(metric.split(".")[1], "")
    return f"{kind} p99"


def _shows_watermark(rows: Sequence[SummaryRow]) -> bool:
    """ext4's watermark matters for dd-style writes or when the filesystem was pre-filled."""
    has_ext4 = any("ext4_watermark_bytes" in r.facts for r in rows)
    relevant = any(r.facts.get("filled") or r.headline == "dd.bw_bytes_s" for r in rows)
    return has_ext4 and relevant


def format_evidence(
    headline: str | None, evidence: float | None, perturbation_pct: float | None, failed: bool
) -> str:
    """The evidence run's headline and its perturbation: "7.4K (-19%)"."""
    if evidence is None:
        return "failed" if failed else "-"
    pct = f" ({round(perturbation_pct):+d}%)" if perturbation_pct is not None else ""
    return f"{format_value(headline, evidence)}{pct}"


EVIDENCE_CAPTION = (
    "evidence: the instrumented run's own headline and its change from the clean median"
)


def results_table(rows: Sequence[SummaryRow], title: str) -> Table:
    axes = list(dict.fromkeys(axis for row in rows for axis in row.sweep))
    headline = rows[0].headline if rows else None
    latency = rows[0].latency if rows else None
    show_watermark = _shows_watermark(rows)
    show_evidence = any(r.evidence is not None or r.evidence_failed for r in rows)
    caption = "median over runs; range: min..max over runs"
    if latency:
        caption += "; p99 from merged histogram bins, median over runs"
    if show_evidence:
        caption += f"; {EVIDENCE_CAPTION}"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    table.add_column("config")
    for axis in axes:
        table.add_column(axis, justify="right")
    table.add_column(_headline_label(headline), justify="right")
    table.add_column("range", justify="right")
    table.add_column("runs", justify="right")
    if latency:
        table.add_column(_latency_label(latency), justify="right")
    if show_evidence:
        table.add_column("evidence", justify="right")
    if show_watermark:
        table.add_column("free", justify="right")
        table.add_column("watermark", justify="right")
    for row in rows:
        cells = [row.config, *(str(row.sweep.get(axis, "")) or "-" for axis in axes)]
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
            free = row.facts.get("free_bytes_start")
            cells.append(format_bytes(free) if free is not None else "-")
            mark = row.facts.get("ext4_watermark_bytes")
            below = " BELOW" if row.facts.get("below_ext4_watermark") else ""
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
            c.name,
            c.hostname,
            c.status,
            f"{n.get('ok', 0)}/{n.get('failed', 0)}/{n.get('pending', 0)}",
            c.started_at.replace("+00:00", ""),
            str(c.host.get("kernel_release", "")),
        )
    return table


def failures_table(points: Sequence[PointRow]) -> Table:
    table = Table(title="failed points", title_justify="left")
    for column in ("seq", "config", "sweep", "reason"):
        table.add_column(column)
    for p in points:
        if p.status == "failed":
            sweep = ", ".join(f"{k}={v}" for k, v in p.sweep.items())
            table.add_row(str(p.seq), p.config, sweep, p.error or "")
    return table
