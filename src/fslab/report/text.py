"""The report as plain text for a mailing list: every line at most 80 columns, no colour.

Kernel developers read reports in a mail client: fixed width, no markup,
commands they can paste, and call chains in `perf report --stdio -g`'s
callee-first layout. This module lays out the sections in that order; the
tables and sentences it prints are shared with the HTML report
(report.text_tables) and written with report.text_blocks.
"""

from __future__ import annotations

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import format_share
from fslab.report.series_text import series_lines
from fslab.report.text_blocks import (
    WIDTH,
    heading,
    new_stderr_lines,
    note_lines,
    rewrap,
    sweep_text,
    wrap,
)
from fslab.report.text_tables import (
    comparison_table,
    diff_lines,
    evidence_sentences,
    filesystem_rows,
    jbd2_table,
    latency_table,
    results_explanation,
    results_table,
    setup_rows,
    step_lines,
    title_parts,
    wchan_table,
    workqueue_table,
)
from fslab.report.tree import Comparisons, EvidenceRun, Report
from fslab.report.verdict_cells import MARK_LEGEND, SHARE_LEGEND
from fslab.workload.registry import metric_label


def render_text(report: Report) -> str:
    """The whole report; every line at most 80 columns."""
    lines = title_lines(report)
    for section in (
        _setup,
        _reproduce,
        _results,
        _scaling,
        _comparisons,
        _series,
        _profiles,
        _contention,
        _diagnosis,
    ):
        lines += section(report)
    lines += ["", f"-- fslab {report.campaign.fslab_version}: fslab report {report.campaign.id}"]
    return "\n".join(_fit(line) for line in lines) + "\n"


def _fit(line: str) -> str:
    """Last guard: nothing past column 80 even if a section misjudged."""
    line = line.rstrip()
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def title_lines(report: Report) -> list[str]:
    c = report.campaign
    lines = [f"fslab report: campaign {c.id}, {c.name} ({c.status})"]
    for part in title_parts(report):
        lines += wrap(part)
    return lines


def _setup(report: Report) -> list[str]:
    lines = heading("Setup")
    for label, value in setup_rows(report):
        lines += wrap(value, WIDTH, f"{label:<9} ", " " * 10)
    for fs in report.setup.filesystems:
        lines.append("")
        head = f"{fs.config} ({fs.fs_type})" + (f": {fs.description}" if fs.description else "")
        lines += wrap(head, WIDTH, "", "  ")
        for label, value in filesystem_rows(fs):
            lines += wrap(value, WIDTH, f"  {label:<10} ", " " * 13)
    return lines + note_lines(report.setup.notes)


def _reproduce(report: Report) -> list[str]:
    r = report.reproduce
    lines = heading("Reproduce one point by hand")
    if r.point is None:
        return lines + note_lines(r.notes or ["nothing to reproduce"])
    lines += wrap(
        f"{r.point.label}, {r.why}, exactly as fslab ran it (as root; the loop "
        "device and mount point were this run's, any free ones will do):"
    )
    lines.append("")
    for step in r.steps:
        lines += step_lines(step)
    return lines + note_lines(r.notes)


def _results(report: Report) -> list[str]:
    res = report.results
    lines = heading("Results")
    if res.headline:
        lines += [*wrap(results_explanation(res)), ""]
        lines += results_table(res).lines()
        lat = latency_table(res)
        if lat is not None:
            lines += ["", f"{metric_label(res.latency_family)} percentiles (median over runs):"]
            lines += lat.lines()
    for sentence in res.set_aside:
        lines += ["", *wrap(sentence)]
    lines += note_lines(res.notes)
    if res.failures:
        lines += ["", "failed points:"]
        for f in res.failures:
            lines += wrap(
                f"#{f.seq} {f.config} {sweep_text(f.sweep)}: {f.error}", WIDTH, "  ", "    "
            )
            lines += [_fit(f"    | {line}") for line in new_stderr_lines(f.error, f.stderr_tail)]
    return lines


def _scaling(report: Report) -> list[str]:
    s = report.scaling
    title = f"Scaling over {s.axis} (Universal Scalability Law)" if s.axis else "Scaling"
    lines = heading(title)
    for curve in s.curves:
        lines += rewrap(curve.describe())
        lines.append("")
    for move in s.moves:
        lines += wrap(f"{move['candidate']} vs {move['baseline']}:")
        lines += rewrap(move["lines"], indent="  ")
    if lines[-1] == "":
        lines.pop()
    return lines + note_lines(s.notes)


def _comparisons(report: Report) -> list[str]:
    c: Comparisons = report.comparisons
    lines = heading("Comparisons" + (f" (baseline: {c.baseline})" if c.baseline else ""))
    for item in c.items:
        lines += wrap(f"{item.candidate} vs {item.baseline}:")
        if item.table.rows:
            lines += comparison_table(item.table.rows).lines(indent="  ")
        lines += rewrap(item.table.describe()[-1:], indent="  ")
        lines.append("")
    if c.items:
        lines += wrap(
            "base, new: means over repetitions, +- sample SD in % of the mean (left out "
            f"below 2%); %change: new vs base. {SHARE_LEGEND}, their change in "
            "percentage points."
        )
        lines += wrap(MARK_LEGEND)
    return lines + note_lines(c.notes)


def _series(report: Report) -> list[str]:
    """The campaigns of this name over time (nothing when this is the only one)."""
    if report.series is None:
        return []
    return heading(f"Series: {report.series.selector}") + series_lines(report.series)


def _profiles(report: Report) -> list[str]:
    p = report.profiles
    lines = heading("Hottest kernel call chains at the worst point")
    if p.worst is None:
        return lines + note_lines(p.notes)
    headline = format_value(report.results.headline, p.worst.headline)
    lines += wrap(f"{p.worst.label}: {headline} {report.results.headline_label}; {p.why}.")
    lines += evidence_lines(p.worst_evidence, p.best_evidence if p.best else None)
    for section in (p.oncpu, p.offcpu):
        lines.append("")
        if section.profile is None:
            lines.append(f"{section.title}:")
            lines += note_lines(section.notes, "  ")
            continue
        unit = "samples" if section.kind == "oncpu" else "thread-samples"
        idle = (
            f", {format_share(section.idle_share)} idle" if section.idle_share is not None else ""
        )
        lines.append(f"{section.title}: {section.samples} {unit}{idle}")
        lines.append("")
        lines += section.chains_text.rstrip("\n").splitlines()
    lines += diff_lines(report)
    return lines + note_lines(p.notes)


def evidence_lines(worst: EvidenceRun | None, best: EvidenceRun | None) -> list[str]:
    lines = []
    for sentence in evidence_sentences(worst, best):
        lines += wrap(sentence, WIDTH, "  ", "    ")
    return lines


def _contention(report: Report) -> list[str]:
    c = report.contention
    lines = heading("Contention evidence: best vs worst point")
    if c.worst is None:
        return lines + note_lines(c.notes)
    best = c.best.label if c.best else "none"
    lines += wrap(f"best: {best}; worst: {c.worst.label}")
    lines += evidence_lines(c.worst_evidence, c.best_evidence)
    wq = workqueue_table(c)
    if wq is not None:
        lines += [""]
        lines += wrap(
            "workqueues, most items waiting at the worst point first (p99 of "
            "queue->activate, activate->start, execution):"
        )
        lines += wq.lines()
    for table in (jbd2_table(c), wchan_table(c)):
        if table is not None:
            lines += [""]
            lines += table.lines()
    if c.wchans and c.blocked_threads_worst is not None:
        lines += wrap(
            f"mean threads blocked per sample; {c.blocked_threads_worst:.0f} blocked "
            "at the worst point in all"
        )
    return lines + note_lines(c.notes)


def _diagnosis(report: Report) -> list[str]:
    d = report.diagnosis
    lines = heading("Diagnosis")
    for entry in d.entries:
        lines += rewrap(entry.lines)
        lines.append("")
    if lines[-1] == "":
        lines.pop()
    return lines + note_lines(d.notes)
