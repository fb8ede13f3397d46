"""The report as plain text for a mailing list: every line at most 80 columns, no colour.

Kernel developers read reports in a mail client: fixed width, no markup,
commands they can paste. So tables are padded text, commands are shell-quoted
and wrapped with backslashes, and call chains use `perf report --stdio -g`'s
callee-first layout. The tables are built here as rows of strings
(`Table`) so the HTML report shows exactly the same cells.
"""

from __future__ import annotations

import math
import shlex
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fslab.analyze.campaign.verdicts import ComparisonRow
from fslab.base.units import format_bytes
from fslab.base.vocab import (
    ScalarValue,
    format_ns,
    format_value,
    metric_label,
    point_label,
    sweep_cell,
    value_label,
)
from fslab.report.recipe import rerun_argv
from fslab.report.series_text import series_lines
from fslab.report.terminal import EVIDENCE_CAPTION, format_evidence
from fslab.report.tree import (
    Comparisons,
    Contention,
    EvidenceRun,
    FilesystemSetup,
    Report,
    Results,
    Step,
)
from fslab.report.verdict_cells import MARK_LEGEND, SHARE_LEGEND, comparison_cells
from fslab.stacks.profile import format_diff

WIDTH = 80
_ZERO = {"", "0", "0s", "None"}
# ------------------------------------------------------------------ building blocks


@dataclass
class Table:
    """Rows of already formatted cells; text pads them, HTML puts them in <td>."""

    headers: list[str]
    rows: list[list[str]]
    align: str  # one "l" or "r" per column
    notes: list[str] = field(default_factory=list)
    cut: int = 0  # the column shortened when the table is wider than the page

    def is_group(self, row: Sequence[str]) -> bool:
        """A row with only its first cell set: a heading for the rows below it."""
        return len(row) > 1 and all(cell == "" for cell in row[1:])

    def lines(self, width: int = WIDTH, indent: str = "") -> list[str]:
        """Padded columns two spaces apart; the first column is cut to fit `width`."""
        cols = len(self.headers)
        body = [r for r in self.rows if not self.is_group(r)]
        widths = [max(len(r[i]) for r in [self.headers, *body]) for i in range(cols)]
        overflow = len(indent) + sum(widths) + 2 * (cols - 1) - width
        if overflow > 0:
            widths[self.cut] = max(4, widths[self.cut] - overflow)
        out = []
        for row in [self.headers, *self.rows]:
            if self.is_group(row):
                out.append((indent + row[0])[:width])
                continue
            cells = []
            for i, cell in enumerate(row):
                cell = cell if len(cell) <= widths[i] else cell[: widths[i] - 2] + ".."
                padded = cell.rjust(widths[i]) if self.align[i] == "r" else cell.ljust(widths[i])
                cells.append(padded)
            out.append((indent + "  ".join(cells)).rstrip())
        return out


def wrap(text: str, width: int = WIDTH, indent: str = "", hang: str | None = None) -> list[str]:
    """Wrap one paragraph; long words are broken rather than overflowing."""
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent if hang is None else hang,
        break_long_words=True,
        break_on_hyphens=False,
    )
    return lines or [indent.rstrip()]


def rewrap(lines: Iterable[str], width: int = WIDTH, indent: str = "") -> list[str]:
    """Indent lines written by others, re-wrapping any that would pass `width`."""
    out = []
    for line in lines:
        full = indent + line
        if len(full) <= width:
            out.append(full.rstrip())
            continue
        lead = " " * (len(full) - len(full.lstrip()))
        out += wrap(full.strip(), width, lead, lead + "    ")
    return out


def heading(title: str) -> list[str]:
    return ["", title, "-" * min(len(title), WIDTH)]


def shell_lines(argv: Sequence[str], width: int = WIDTH, prompt: str = "# ") -> list[str]:
    """A command shell-quoted, wrapped with backslashes so each line fits `width`."""
    words: list[str] = []
    for arg in argv:
        words += _quoted_pieces(arg, width - 8)
    lines: list[str] = []
    current = prompt
    for i, word in enumerate(words):
        glued = word.startswith("\0")  # a piece of a word too long for one line
        word = word.lstrip("\0")
        last = i == len(words) - 1
        room = width if last else width - 2
        sep = "" if glued or current == prompt else " "
        if len(current) + len(sep) + len(word) <= room or current.strip() in ("", "#"):
            current += sep + word
            continue
        lines.append(current + ("\\" if glued else " \\"))
        current = ("" if glued else "    ") + word
    lines.append(current)
    return lines


def _quoted_pieces(arg: str, limit: int) -> list[str]:
    """shlex-quoted arg; one too long for a line becomes pieces joined without a space."""
    quoted = shlex.quote(arg)
    if len(quoted) <= limit:
        return [quoted]
    size = max(8, limit // 2)
    pieces = [shlex.quote(arg[i : i + size]) for i in range(0, len(arg), size)]
    return [pieces[0], *("\0" + p for p in pieces[1:])]


def fmt_num(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    if abs(value) >= 10_000:
        return f"{value / 1000:.1f}K"
    return f"{value:.{digits}g}" if abs(value) < 100 else f"{value:.0f}"


def fmt_pct(fraction: float | None) -> str:
    return "-" if fraction is None or not math.isfinite(fraction) else f"{100 * fraction:.0f}%"


def new_stderr_lines(error: str, tail: Sequence[str], keep: int = 3) -> list[str]:
    """The last stderr lines that the one-line error does not already quote."""
    flat = " ".join(error.split())
    return [line for line in tail if " ".join(line.split())[:40] not in flat][-keep:]


def sweep_text(sweep: Mapping[str, ScalarValue]) -> str:
    return point_label(sweep)


# ------------------------------------------------------------------ tables shared with HTML


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
    group of rows. The mark comes from the statistics (analyze.compare), not
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
                    fmt_num(values.get("items_per_s")),
                    format_ns(values.get("queue_delay_ns_p99")),
                    format_ns(values.get("start_delay_ns_p99")),
                    format_ns(values.get("exec_ns_p99")),
                    _fixed(values.get("utilisation")),
                    fmt_num(values.get("peak_concurrency")),
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


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def jbd2_table(contention: Contention) -> Table | None:
    if not contention.jbd2:
        return None
    rows = [[m.label, fmt_num(m.best), fmt_num(m.worst)] for m in contention.jbd2]
    return Table(["jbd2", "best", "worst"], rows, "lrr")


def wchan_table(contention: Contention) -> Table | None:
    if not contention.wchans:
        return None
    rows = [
        [w.function, fmt_num(w.best_threads), fmt_num(w.worst_threads), fmt_pct(w.worst_share)]
        for w in contention.wchans
    ]
    return Table(["blocked in (wchan)", "best", "worst", "of blocked"], rows, "lrrr")


# ------------------------------------------------------------------ sections


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


def _notes(notes: Iterable[str], indent: str = "") -> list[str]:
    out = []
    for note in notes:
        out += wrap(f"({note})", WIDTH, indent, indent + " ")
    return out


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
    return lines + _notes(report.setup.notes)


def step_lines(step: Step) -> list[str]:
    lines = wrap(f"# {step.comment}", WIDTH, "", "# ") if step.comment else []
    if step.argv:
        lines += shell_lines(step.argv)
        if step.returncode:
            lines.append(f"# (exited {step.returncode})")
    return lines


def _reproduce(report: Report) -> list[str]:
    r = report.reproduce
    lines = heading("Reproduce one point by hand")
    if r.point is None:
        return lines + _notes(r.notes or ["nothing to reproduce"])
    lines += wrap(
        f"{r.point.label}, {r.why}, exactly as fslab ran it (as root; the loop "
        "device and mount point were this run's, any free ones will do):"
    )
    lines.append("")
    for step in r.steps:
        lines += step_lines(step)
    return lines + _notes(r.notes)


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
    lines += _notes(res.notes)
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
    return lines + _notes(s.notes)


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
    return lines + _notes(c.notes)


def _series(report: Report) -> list[str]:
    """The campaigns of this name over time (nothing when this is the only one)."""
    if report.series is None:
        return []
    return heading(f"Series: {report.series.selector}") + series_lines(report.series)


def _profiles(report: Report) -> list[str]:
    p = report.profiles
    lines = heading("Hottest kernel call chains at the worst point")
    if p.worst is None:
        return lines + _notes(p.notes)
    headline = format_value(report.results.headline, p.worst.headline)
    lines += wrap(f"{p.worst.label}: {headline} {report.results.headline_label}; {p.why}.")
    lines += evidence_lines(p.worst_evidence, p.best_evidence if p.best else None)
    for section in (p.oncpu, p.offcpu):
        lines.append("")
        if section.profile is None:
            lines.append(f"{section.title}:")
            lines += _notes(section.notes, "  ")
            continue
        unit = "samples" if section.kind == "oncpu" else "thread-samples"
        idle = f", {fmt_pct(section.idle_share)} idle" if section.idle_share is not None else ""
        lines.append(f"{section.title}: {section.samples} {unit}{idle}")
        lines.append("")
        lines += section.chains_text.rstrip("\n").splitlines()
    lines += diff_lines(report)
    return lines + _notes(p.notes)


def evidence_sentences(worst: EvidenceRun | None, best: EvidenceRun | None) -> list[str]:
    """Which runs the evidence comes from and how much the instruments moved them."""
    out = []
    for role, ev in (("worst", worst), ("best", best)):
        if ev is None:
            continue
        where = f" (#{ev.point.seq})" if ev.point is not None else ""
        out.append(f"{role} point{where}: {ev.statement}")
    return out


def evidence_lines(worst: EvidenceRun | None, best: EvidenceRun | None) -> list[str]:
    lines = []
    for sentence in evidence_sentences(worst, best):
        lines += wrap(sentence, WIDTH, "  ", "    ")
    return lines


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
            lines += _notes(n for n in section.notes if n.startswith("best point"))
    return lines


def _contention(report: Report) -> list[str]:
    c = report.contention
    lines = heading("Contention evidence: best vs worst point")
    if c.worst is None:
        return lines + _notes(c.notes)
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
    return lines + _notes(c.notes)


def _diagnosis(report: Report) -> list[str]:
    d = report.diagnosis
    lines = heading("Diagnosis")
    for entry in d.entries:
        lines += rewrap(entry.lines)
        lines.append("")
    if lines[-1] == "":
        lines.pop()
    return lines + _notes(d.notes)
