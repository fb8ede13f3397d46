"""The report's tables and sentences that the text and HTML reports both print.

Each is built once, here, as rows of formatted strings (`Table`) or plain
sentences, so the two formats show exactly the same cells: the setup, the
results and latency tables, the kernel test robot's comparison form, the
contention tables, the recipe's steps and where the evidence came from.
The text report pads and wraps them (report.text); the HTML report puts
them in elements (report.html).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.verdicts import ComparisonRow
from fslab.base.format import format_bytes, format_ns, format_number, format_ratio, format_share
from fslab.base.vocab import sweep_cell, value_label
from fslab.report.recipe import rerun_argv
from fslab.report.terminal import EVIDENCE_CAPTION, format_evidence
from fslab.report.text_blocks import WIDTH, Table, note_lines, shell_lines, wrap
from fslab.report.tree import (
    Contention,
    EvidenceRun,
    FilesystemSetup,
    Report,
    Results,
    Step,
)
from fslab.report.verdict_cells import comparison_cells
from fslab.stacks.profile import format_diff

_ZERO = {"", "0", "0s", "None"}


# ------------------------------------------------------------------ the title and setup


def title_parts(report: Report) -> list[str]:
    """The lines under the title, unwrapped: description, dates, counts, command."""
    c = report.campaign
    parts = [c.description] if c.description else []
    ended = f" to {c.ended_at}" if c.ended_at else ""
    parts.append(f"run {c.started_at}{ended} with fslab {c.fslab_version}")
    counts = f"{c.points_total} points: {c.points_ok} ok, {c.points_failed} failed"
    if c.points_pending:
        counts += f", {c.points_pending} not run"
    parts.append(counts)
    command = invocation(report)
    if command:
        parts.append(f"made with: {command}")
    parts.append(f"collectors: {c.collect_mode}: {c.collect_text}")
    if c.timing is not None:
        parts.append(f"time: {c.timing.describe()}")
    return parts


def setup_rows(report: Report) -> list[tuple[str, str]]:
    """(label, value) lines describing the machine, target and workload."""
    host, setup = report.setup.host, report.setup
    tools = [
        host.shown(k)
        for k in ("fio_version", "e2fsprogs_version", "xfsprogs_version", "perf_version")
        if host.fact(k) and host.fact(k) != "not installed"
    ]
    memory = host.fact("memory_bytes")
    host_word = "host " if setup.guests else ""  # guest points: the rows below are the host's
    rows = [
        (f"{host_word}kernel", host.shown("kernel_release", "not recorded")),
        (
            f"{host_word}CPUs",
            f"{host.shown('online_cpus')} online, nr_cpu_ids {host.shown('nr_cpu_ids')}"
            + (f" ({host.cpu_model})" if host.fact("cpu_model") else ""),
        ),
        ("memory", format_bytes(int(memory)) if memory else "not recorded"),
        *(("guest" if i == 0 else "", label) for i, label in enumerate(setup.guests)),
        ("device", setup.device_text),
        ("tools", "; ".join(tools) or "not recorded"),
    ]
    rows += [("workload" if i == 0 else "", line) for i, line in enumerate(setup.workload_text)]
    for axis, values in setup.sweep.items():
        rows.append(("sweep", f"{axis} = {', '.join(value_label(v) for v in values)}"))
    if not setup.sweep:
        rows.append(("sweep", "none: every configuration runs one point"))
    run = setup.run
    if run:
        reps = run.get("repeat", 1)
        rows.append(
            (
                "run",
                f"{reps} repetition(s) per point, {run.get('runtime') or 'default'} runtime"
                + (f" after {run['ramp']} ramp" if str(run.get("ramp", "0")) not in _ZERO else "")
                + f", {run.get('order', 'interleaved')} order",
            )
        )
    return rows


def filesystem_rows(fs: FilesystemSetup) -> list[tuple[str, str]]:
    rows = []
    if fs.mkfs_argv:
        rows.append(("mkfs", shlex.join(fs.mkfs_argv)))
    else:
        rows.append(("mkfs", f"options {shlex.join(fs.mkfs_options) or '(none)'} (not run)"))
    rows.append(("mount", ",".join(fs.mount_options) or "(defaults)"))
    if fs.mount_options_effective:
        rows.append(("in effect", fs.mount_options_effective))
    if fs.journal_bytes is not None:
        block = f", {format_bytes(fs.block_size_bytes)} blocks" if fs.block_size_bytes else ""
        rows.append((fs.journal_kind, f"{format_bytes(fs.journal_bytes)}{block}"))
    if fs.features:
        rows.append(("features", " ".join(fs.features)))
    rows += [("note", note) for note in fs.notes]
    return rows


def invocation(report: Report) -> str | None:
    """The `fslab run` command line that made the campaign, from its stored overrides."""
    overrides = report.campaign.overrides
    if not overrides.source:
        return None
    return shlex.join(rerun_argv(overrides))


def step_lines(step: Step) -> list[str]:
    lines = wrap(f"# {step.comment}", WIDTH, "", "# ") if step.comment else []
    if step.argv:
        lines += shell_lines(step.argv)
        if step.returncode:
            lines.append(f"# (exited {step.returncode})")
    return lines


# ------------------------------------------------------------------ results and comparisons


def results_table(results: Results) -> Table:
    """Median, spread (when some point ran more than once), runs, p99, watermark."""
    spread = any(row.n_ok > 1 for row in results.rows)
    headers = ["config", *results.axes, results.headline_label]
    headers += ["min..max"] if spread else []
    headers.append("runs")
    if results.latency:
        headers.append(results.latency_label)
    evidence = shows_evidence(results)
    if evidence:
        headers.append("evidence")
    if results.watermark_relevant:
        headers += ["free", "watermark"]
    rows = []
    for row in results.rows:
        cells = [row.config, *(sweep_cell(row.sweep, a) for a in results.axes)]
        cells.append(format_value(results.headline, row.median))
        if spread:
            cells.append(
                f"{format_value(results.headline, row.minimum)}.."
                f"{format_value(results.headline, row.maximum)}"
                if row.n_ok > 1
                else "-"
            )
        cells.append(f"{row.n_ok}" + (f" ({row.n_failed} failed)" if row.n_failed else ""))
        if results.latency:
            cells.append(format_value(results.latency, row.latency_p99))
        if evidence:
            cells.append(
                format_evidence(
                    results.headline, row.evidence, row.perturbation_pct, row.evidence_failed
                )
            )
        if results.watermark_relevant:
            free = row.free_bytes_start
            cells.append(format_bytes(free) if free is not None else "-")
            mark = row.watermark_bytes
            below = " BELOW" if row.below_watermark else ""
            cells.append(f"{format_bytes(mark)}{below}" if mark is not None else "n/a")
        rows.append(cells)
    return Table(headers, rows, "l" + "r" * (len(headers) - 1))


def shows_evidence(results: Results) -> bool:
    return any(r.evidence is not None or r.evidence_failed for r in results.rows)


def results_explanation(results: Results) -> str:
    """What the results table's figures are (shared by text and HTML)."""
    spread = any(row.n_ok > 1 for row in results.rows)
    text = f"{results.headline_label}: median over runs" + (
        ", min..max over runs" if spread else " (one run per point)"
    )
    if results.latency:
        text += (
            f"; {results.latency_label}: median over runs of each run's p99 from merged "
            "histogram bins"
        )
    if shows_evidence(results):
        text += f"; {EVIDENCE_CAPTION}"
    if results.watermark_relevant:
        text += (
            "; free: free space when the workload started; watermark: ext4's "
            "EXT4_FREECLUSTERS_WATERMARK for this host (4 x percpu_counter_batch x "
            "nr_cpu_ids clusters), below which every allocation sums per-CPU counters"
        )
    return text + "."


def latency_table(results: Results) -> Table | None:
    if not results.latency_family:
        return None
    headers = ["config", *results.axes, "p50", "p99", "p99.9"]
    rows = [
        [
            row.config,
            *(str(row.sweep.get(a, "")) or "-" for a in results.axes),
            *(format_ns(row.percentiles.get(q)) for q in ("p50", "p99", "p99_9")),
        ]
        for row in results.rows
        if row.n_ok
    ]
    return Table(headers, rows, "l" + "r" * (len(headers) - 1))


def comparison_table(rows: Sequence[ComparisonRow]) -> Table:
    """Baseline vs candidate in the kernel test robot's form, one metric per line.

    base mean ± %stddev, %change, new mean ± %stddev, the verdict mark, then
    the metric (cells from report/comparison); the sweep point heads each
    group of rows. The mark comes from the statistics (analyze.campaign.verdicts), not
    from the size of the change.
    """
    out = []
    previous = None
    for row in rows:
        c = comparison_cells(row)
        if c.point != previous:
            out.append([c.point, "", "", "", "", "", ""])
            previous = c.point
        out.append(
            [
                c.mean_baseline,
                c.sd_baseline,
                c.change,
                c.mean_candidate,
                c.sd_candidate,
                c.mark,
                c.metric,
            ]
        )
    headers = ["base", "%stddev", "%change", "new", "%stddev", "", "metric"]
    return Table(headers, out, "rrrrrll", cut=6)


# ------------------------------------------------------------------ the evidence


def evidence_sentences(worst: EvidenceRun | None, best: EvidenceRun | None) -> list[str]:
    """Which runs the evidence comes from and how much the instruments moved them."""
    out = []
    for role, ev in (("worst", worst), ("best", best)):
        if ev is None:
            continue
        where = f" (#{ev.point.seq})" if ev.point is not None else ""
        out.append(f"{role} point{where}: {ev.statement}")
    return out


def diff_lines(report: Report) -> list[str]:
    p = report.profiles
    if p.best is None:
        return []
    lines: list[str] = []
    for section in (p.oncpu, p.offcpu):
        if section.diff_rows:
            basis = (
                "share of busy samples" if section.kind == "oncpu" else "share of thread-samples"
            )
            lines += [""]
            lines += wrap(
                f"{section.title}, what changed from the best point ({p.best.sweep_label}, "
                f"column a) to the worst ({p.worst.sweep_label if p.worst else '?'}, "
                f"column b), {basis}:"
            )
            lines += format_diff(section.diff_rows).rstrip("\n").splitlines()
        else:
            lines += note_lines(n for n in section.notes if n.startswith("best point"))
    return lines


def workqueue_table(contention: Contention) -> Table | None:
    if not contention.workqueues:
        return None
    rows = []
    for wq in contention.workqueues:
        for tag, values in (("best", wq.best), ("worst", wq.worst)):
            rows.append(
                [
                    wq.name if tag == "best" else "",
                    tag,
                    format_number(values.get("items_per_s")),
                    format_ns(values.get("queue_delay_ns_p99")),
                    format_ns(values.get("start_delay_ns_p99")),
                    format_ns(values.get("exec_ns_p99")),
                    format_ratio(values.get("utilisation")),
                    format_number(values.get("peak_concurrency")),
                ]
            )
    headers = [
        "workqueue",
        "point",
        "items/s",
        "queue p99",
        "start p99",
        "exec p99",
        "util",
        "peak",
    ]
    return Table(headers, rows, "llrrrrrr")


def jbd2_table(contention: Contention) -> Table | None:
    if not contention.jbd2:
        return None
    rows = [[m.label, format_number(m.best), format_number(m.worst)] for m in contention.jbd2]
    return Table(["jbd2", "best", "worst"], rows, "lrr")


def wchan_table(contention: Contention) -> Table | None:
    if not contention.wchans:
        return None
    rows = [
        [
            w.function,
            format_number(w.best_threads),
            format_number(w.worst_threads),
            format_share(w.worst_share),
        ]
        for w in contention.wchans
    ]
    return Table(["blocked in (wchan)", "best", "worst", "of blocked"], rows, "lrrr")
