"""The report as one self-contained HTML file: inline CSS, inline SVG, nothing fetched.

A report is mailed, attached to bugs and opened years later, offline: so
there are no external scripts, fonts, stylesheets or images, and no script
at all in the page. Plots come from `plots`, tables and preformatted blocks
from the same cell builders as the text report, so both say the same.

Flame graphs are inlined as static SVG: `flamegraph_svg` writes a standalone
document whose script looks up ids and the document root, which collides once
two graphs share a page. The script and its `onload` are dropped and ids are
prefixed per graph; every frame keeps its <title> tooltip (name, samples,
share), which the browser shows on hover without any script.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import format_share
from fslab.report import text_blocks as tb
from fslab.report import text_tables as tt
from fslab.report.flamegraph import diff_flamegraph_svg, flamegraph_svg
from fslab.report.html_diagnosis import entry_html
from fslab.report.plots import all_plots
from fslab.report.series_text import series_lines
from fslab.report.tree import Report
from fslab.report.verdict_cells import MARK_LEGEND
from fslab.workload.registry import metric_label

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --rule: #d9d9de; --bg: #ffffff; --code: #f5f5f7; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 1.2rem 1.6rem 3rem; color: var(--fg);
       background: var(--bg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
       Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 1.45rem; margin: 0.2rem 0 0.3rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 0.6rem; padding-bottom: 0.2rem;
     border-bottom: 1px solid var(--rule); }
h3 { font-size: 1rem; margin: 1.2rem 0 0.4rem; }
p { margin: 0.35rem 0; }
.muted, .note { color: var(--muted); }
.note { font-style: italic; }
nav { margin: 0.8rem 0 0.4rem; font-size: 0.92rem; }
nav a { margin-right: 0.9rem; color: #1a5fb4; text-decoration: none; }
table { border-collapse: collapse; margin: 0.4rem 0 0.8rem; font-size: 0.9rem; }
th, td { padding: 0.18rem 0.7rem 0.18rem 0; text-align: left; vertical-align: top; }
th { border-bottom: 1px solid var(--rule); font-weight: 600; }
td.r, th.r { text-align: right; }
table.kv th { border: 0; color: var(--muted); font-weight: normal; padding-right: 1.2rem; }
tr.group td { font-weight: 600; padding-top: 0.45rem; }
pre { background: var(--code); padding: 0.6rem 0.8rem; overflow-x: auto; font-size: 0.82rem;
      line-height: 1.35; border-radius: 4px; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
figure { margin: 0.6rem 0 1rem; }
figcaption { color: var(--muted); font-size: 0.85rem; }
svg.plot { width: 100%; max-width: 900px; height: auto; }
span.w { white-space: nowrap; }
.flame svg { width: 100%; height: auto; border: 1px solid var(--rule); }
.verdict-better { color: #1e7b34; font-weight: 600; }
.verdict-worse { color: #b3261e; font-weight: 600; }
.verdict-changed { color: #8a6100; }
.diagnosis { margin-bottom: 1.2rem; }
.diagnosis h4 { font-size: 0.95rem; margin: 0.8rem 0 0.3rem; }
p.mechanism { font-size: 1.05rem; margin: 0.6rem 0 0.2rem; }
table.evidence td:first-child { max-width: 26rem; }
"""

# The answer and the curves first; the setup and the recipe, reference material, last
# (the mailing-list text keeps the bug-report order: setup first).
SECTIONS = (
    ("diagnosis", "Diagnosis"),
    ("results", "Results"),
    ("scaling", "Scaling"),
    ("latency", "Latency"),
    ("comparisons", "Comparisons"),
    ("series", "Series"),
    ("profiles", "Profiles"),
    ("contention", "Contention"),
    ("setup", "Setup"),
    ("reproduce", "Reproduce"),
)


def render_html(report: Report) -> str:
    """The whole report as one HTML document (no external references)."""
    plots = all_plots(report)
    c = report.campaign
    title = f"fslab report: campaign {c.id}, {c.name}"
    body = [
        f"<h1>{escape(title)} <span class='muted'>({escape(c.status)})</span></h1>",
        *_p_lines(tt.title_parts(report)),
        "<nav>"
        + "".join(f"<a href='#{key}'>{escape(name)}</a>" for key, name in SECTIONS)
        + "</nav>",
        _diagnosis(report),
        _results(report),
        _scaling(report, plots["throughput"]),
        _latency(report, plots["latency"], plots["cdf"]),
        _comparisons(report, plots["bars"]),
        _series(report, plots["series"]),
        _profiles(report),
        _contention(report),
        _setup(report),
        _reproduce(report),
        f"<p class='muted'>fslab {escape(c.fslab_version)}: "
        f"<code>fslab report {c.id} --format html</code></p>",
    ]
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body>\n</html>\n"
    )


# ------------------------------------------------------------------ helpers


def _section(key: str, title: str, parts: Iterable[str]) -> str:
    return f"<section id='{key}'>\n<h2>{escape(title)}</h2>\n" + "\n".join(parts) + "\n</section>"


def _p_lines(lines: Iterable[str], cls: str = "") -> list[str]:
    attr = f" class='{cls}'" if cls else ""
    return [f"<p{attr}>{escape(line)}</p>" for line in lines]


def _notes(notes: Iterable[str]) -> list[str]:
    return _p_lines(notes, "note")


def _pre(lines: Iterable[str] | str) -> str:
    body = lines if isinstance(lines, str) else "\n".join(lines)
    return f"<pre>{escape(body.rstrip())}</pre>"


def _table(table: tb.Table, group_rows: bool = False) -> str:
    head = "".join(
        f"<th class='{a}'>{escape(h)}</th>" for h, a in zip(table.headers, table.align, strict=True)
    )
    rows = []
    for row in table.rows:
        if group_rows and table.is_group(row):
            rows.append(f"<tr class='group'><td colspan='{len(row)}'>{escape(row[0])}</td></tr>")
            continue
        cells = []
        for cell, align in zip(row, table.align, strict=True):
            cls = align + _verdict_class(cell)
            cells.append(f"<td class='{cls}'>{escape(cell.strip())}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(rows) + "\n</table>"


def _verdict_class(cell: str) -> str:
    for verdict in ("better", "worse", "changed"):
        if cell.endswith(f" {verdict}"):
            return f" verdict-{verdict}"
    return ""


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{escape(k)}</th><td>{_words(v)}</td></tr>" for k, v in rows)
    return f"<table class='kv'>{body}</table>"


def _words(text: str) -> str:
    """Escaped text that wraps only between words: `--runtime=30` never splits at a dash."""
    return " ".join(f"<span class='w'>{escape(word)}</span>" for word in text.split(" "))


def _figure(svg: str | None, caption: str) -> str:
    if not svg:
        return ""
    return f"<figure>\n{svg}\n<figcaption>{escape(caption)}</figcaption>\n</figure>"


def inline_svg(svg: str, prefix: str) -> str:
    """A standalone SVG made safe to share a page: no prolog, no script, unique ids."""
    svg = re.sub(r"<\?xml[^>]*\?>\s*", "", svg)
    svg = re.sub(r"<script\b.*?</script>", "", svg, flags=re.DOTALL)
    svg = re.sub(r"\sonload=\"[^\"]*\"", "", svg)
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', svg)
    return re.sub(
        r"<style>(.*?)</style>",
        lambda m: "<style>" + re.sub(r"#([\w-]+)", rf"#{prefix}-\1", m.group(1)) + "</style>",
        svg,
        flags=re.DOTALL,
    )


# ------------------------------------------------------------------ sections


def _diagnosis(report: Report) -> str:
    d = report.diagnosis
    parts = [entry_html(entry) for entry in sorted(d.entries, key=lambda e: not e.focus)]
    return _section("diagnosis", "Diagnosis", parts + _notes(d.notes))


def _setup(report: Report) -> str:
    parts = [_kv(tt.setup_rows(report))]
    for fs in report.setup.filesystems:
        head = f"{fs.config} ({fs.fs_type})" + (f": {fs.description}" if fs.description else "")
        parts += [f"<h3>{escape(head)}</h3>", _kv(tt.filesystem_rows(fs))]
    command = tt.invocation(report)
    if command:
        parts.append(f"<p>made with <code>{escape(command)}</code></p>")
    return _section("setup", "Setup", parts + _notes(report.setup.notes))


def _reproduce(report: Report) -> str:
    r = report.reproduce
    if r.point is None:
        return _section("reproduce", "Reproduce one point by hand", _notes(r.notes))
    lines = [line for step in r.steps for line in tt.step_lines(step)]
    intro = (
        f"{r.point.label}, {r.why}, exactly as fslab ran it (as root; the loop device and "
        "mount point were this run's, any free ones will do):"
    )
    return _section(
        "reproduce",
        "Reproduce one point by hand",
        [*_p_lines([intro]), _pre(lines), *_notes(r.notes)],
    )


def _results(report: Report) -> str:
    res = report.results
    parts = []
    if res.headline:
        parts.append(_table(tt.results_table(res)))
        parts += _p_lines([tt.results_explanation(res)], "muted")
        lat = tt.latency_table(res)
        if lat is not None:
            parts += [f"<h3>{escape(metric_label(res.latency_family))} percentiles</h3>"]
            parts.append(_table(lat))
    parts += _p_lines(res.set_aside)
    parts += _notes(res.notes)
    if res.failures:
        parts.append("<h3>Failed points</h3>")
        rows = [
            [
                f"#{f.seq}",
                f.config,
                tb.sweep_text(f.sweep),
                f.error + _tail(tb.new_stderr_lines(f.error, f.stderr_tail)),
            ]
            for f in res.failures
        ]
        parts.append(_table(tb.Table(["seq", "config", "point", "reason"], rows, "llll")))
    return _section("results", "Results", parts)


def _tail(lines: Sequence[str]) -> str:
    return (" | " + " / ".join(lines[-3:])) if lines else ""


def _scaling(report: Report, svg: str | None) -> str:
    s = report.scaling
    parts = [
        _figure(
            svg,
            "Each point is one run; the solid line joins the medians; dashed lines are "
            "the USL fits, where identified; a ring marks the knee (beyond it, doubling "
            "concurrency gains under 10%); a shaded band marks a cliff.",
        )
    ]
    describe = [line for curve in s.curves for line in [*curve.describe(), ""]]
    for move in s.moves:
        describe += [f"{move['candidate']} vs {move['baseline']}:"]
        describe += [f"  {line}" for line in move["lines"]]
    if describe:
        parts.append(_pre(describe))
    title = f"Scaling over {s.axis} (Universal Scalability Law)" if s.axis else "Scaling"
    return _section("scaling", title, parts + _notes(s.notes))


def _latency(report: Report, curves_svg: str | None, cdf_svg: str | None) -> str:
    lat = report.latency
    parts = [
        _figure(
            curves_svg,
            "Dotted p50, solid p99, dashed p99.9; each the median over runs of the "
            "percentile from the run's merged json+ histogram.",
        ),
        _figure(
            cdf_svg,
            "Left: the share of operations completed within x. Right: the tail, the share "
            "slower than x, on a log scale (p99 and p99.9 where the curves cross the "
            "dotted lines). Best and worst point as in the profiles below.",
        ),
    ]
    return _section("latency", f"Latency: {lat.label}", parts + _notes(lat.notes))


def _comparisons(report: Report, svg: str | None) -> str:
    c = report.comparisons
    parts = [
        _figure(
            svg,
            "Bars: median over runs; error bars: 95% percentile-bootstrap interval of the "
            "median (shown with 3 or more runs; n=1 marks a single run).",
        )
    ]
    for item in c.items:
        parts.append(f"<h3>{escape(item.candidate)} vs {escape(item.baseline)} (baseline)</h3>")
        if item.table.rows:
            parts.append(_table(tt.comparison_table(item.table.rows), group_rows=True))
        parts += _p_lines(item.table.describe()[-1:], "muted")
    if c.items:
        parts += _p_lines([MARK_LEGEND], "muted")
    title = "Comparisons" + (f" (baseline: {c.baseline})" if c.baseline else "")
    return _section("comparisons", title, parts + _notes(c.notes))


def _series(report: Report, svg: str | None) -> str:
    """The campaigns of this name over time, with change points."""
    if report.series is None:
        note = f"campaign {report.campaign.id} is the only stored campaign of its name"
        return _section("series", "Series", _notes([note]))
    parts = [_figure(svg, "median headline per campaign and point")] if svg else []
    parts.append(_pre(series_lines(report.series)))
    return _section("series", f"Series: {report.series.selector}", parts)


def _profiles(report: Report) -> str:
    p = report.profiles
    if p.worst is None:
        return _section("profiles", "Profiles", _notes(p.notes))
    headline = format_value(report.results.headline, p.worst.headline)
    parts = _p_lines([f"{p.worst.label}: {headline} {report.results.headline_label}; {p.why}."])
    parts += _p_lines(tt.evidence_sentences(p.worst_evidence, p.best_evidence), "muted")
    on = p.oncpu
    if on.profile is not None:
        parts.append("<h3 id='flame-graph'>Flame graph of the worst point (on-CPU)</h3>")
        svg = flamegraph_svg(on.profile, title=f"on-CPU: {p.worst.label}")
        parts.append(f"<div class='flame'>{inline_svg(svg, 'flame-worst')}</div>")
        parts += _p_lines(["Hover a frame for its name, samples and share."], "muted")
        if on.best_profile is not None and p.best is not None:
            parts.append(
                "<h3 id='flame-diff'>Differential flame graph: "
                f"best ({escape(p.best.sweep_label)}) to worst ({escape(p.worst.sweep_label)})</h3>"
            )
            diff_svg = diff_flamegraph_svg(
                on.best_profile.busy(),
                on.profile.busy(),
                title=f"on-CPU busy time, A = best {p.best.label}, B = worst {p.worst.label}",
            )
            parts.append(f"<div class='flame'>{inline_svg(diff_svg, 'flame-diff')}</div>")
            parts += _p_lines(
                ["Frames sized by the worst point; red grew, blue shrank (busy samples only)."],
                "muted",
            )
    for section in (p.oncpu, p.offcpu):
        parts.append(f"<h3>Hottest call chains, {escape(section.title)}</h3>")
        if section.profile is None:
            parts += _notes(section.notes)
            continue
        unit = "samples" if section.kind == "oncpu" else "thread-samples"
        idle = (
            f", {format_share(section.idle_share)} idle" if section.idle_share is not None else ""
        )
        parts += _p_lines([f"{section.samples} {unit}{idle}"], "muted")
        parts.append(_pre(section.chains_text))
    diff_lines = tt.diff_lines(report)
    if diff_lines:
        parts.append("<h3>What changed from the best to the worst point</h3>")
        parts.append(_pre(diff_lines[1:]))
    return _section("profiles", "Profiles", parts + _notes(p.notes))


def _contention(report: Report) -> str:
    c = report.contention
    if c.worst is None:
        return _section("contention", "Contention evidence", _notes(c.notes))
    parts = _p_lines([f"best: {c.best.label if c.best else 'none'}; worst: {c.worst.label}"])
    parts += _p_lines(tt.evidence_sentences(c.worst_evidence, c.best_evidence), "muted")
    wq = tt.workqueue_table(c)
    if wq is not None:
        parts += [
            "<h3 id='contention-workqueues'>Workqueues</h3>",
            *_p_lines(
                [
                    "Most items waiting at the worst point first; p99 of queue->activate "
                    "(waiting for a max_active slot), activate->start (for a worker), and "
                    "execution."
                ],
                "muted",
            ),
            _table(wq),
        ]
    jbd2 = tt.jbd2_table(c)
    if jbd2 is not None:
        parts += ["<h3 id='contention-jbd2'>jbd2 journal</h3>", _table(jbd2)]
    wchan = tt.wchan_table(c)
    if wchan is not None:
        parts += [
            "<h3 id='contention-wchan'>Where the workload's threads wait (off-CPU, wchan)</h3>",
            _table(wchan),
        ]
        if c.blocked_threads_worst is not None:
            parts += _p_lines(
                [
                    f"Mean threads blocked per sample; {c.blocked_threads_worst:.0f} blocked at "
                    "the worst point in all."
                ],
                "muted",
            )
    return _section(
        "contention", "Contention evidence: best vs worst point", parts + _notes(c.notes)
    )
