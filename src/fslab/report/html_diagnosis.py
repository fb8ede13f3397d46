"""The Diagnosis section as HTML: the mechanism and its score, an evidence table with the
good-point and bad-point values, the counterfactual, the hypotheses ruled out, and links
to the flame graph and tables the evidence comes from. Laid out, not preformatted.
"""

from __future__ import annotations

from html import escape

from fslab.base.format import format_change_pct, format_number, format_ratio, format_share
from fslab.diagnose.diagnosis import ConfigDiagnosis, ruled_out_text
from fslab.diagnose.judge import Finding
from fslab.diagnose.score import Candidate
from fslab.report.diagnosis_text import unknown_head, unknown_items
from fslab.report.tree import DiagnosisEntry

KIND_WORDS = {"offcpu": "threads waiting in its frames", "oncpu": "busy CPU in its frames"}
KIND_LINKS = {"offcpu": "#contention-wchan", "oncpu": "#flame-graph"}


def _td(text: str, cls: str = "") -> str:
    attr = f" class='{cls}'" if cls else ""
    return f"<td{attr}>{escape(text)}</td>"


def _mark(holds: bool | None) -> str:
    return {True: "yes", False: "no", None: "not measured"}[holds]


def _finding_row(f: Finding) -> str:
    what, _, detail = f.text.partition(": ")
    good = "" if f.good is None else format_number(f.good)
    bad = "" if f.bad is None else format_number(f.bad)
    return (
        "<tr>"
        + _td(what)
        + _td(good, "r")
        + _td(bad, "r")
        + _td(_mark(f.holds), "verdict-better" if f.holds else "")
        + _td(detail)
        + "</tr>"
    )


def evidence_table(c: Candidate, d: ConfigDiagnosis, links: bool) -> str:
    """One row per piece of evidence: its value at the good and the bad point."""
    head = (
        "<tr><th>evidence</th>"
        f"<th class='r'>good: {escape(d.good_label)}</th>"
        f"<th class='r'>bad: {escape(d.bad_label)}</th>"
        "<th>supports</th><th>detail</th></tr>"
    )
    rows = []
    for kind, (good, bad) in c.shares.items():
        what = escape(KIND_WORDS.get(kind, kind))
        if links:
            what = f"<a href='{KIND_LINKS[kind]}'>{what}</a>"
        explained = c.explained_off if kind == "offcpu" else c.explained_on
        rows.append(
            f"<tr><td>{what}</td>"
            + _td(format_share(good), "r")
            + _td(format_share(bad), "r")
            + _td(_mark(bad > good), "verdict-better" if bad > good else "")
            + _td(f"{format_share(explained or 0)} of the {kind.replace('cpu', '-CPU')} change")
            + "</tr>"
        )
    for f in c.metrics + c.requires:
        rows.append(_finding_row(f))
    for f in c.against:
        if f.holds:
            rows.append(
                "<tr>"
                + _td(f"against: {f.text}")
                + _td("")
                + _td("")
                + _td("no")
                + _td("")
                + "</tr>"
            )
    return "<table class='evidence'>\n" + head + "\n" + "\n".join(rows) + "\n</table>"


def counterfactual_table(c: Candidate) -> str:
    if not c.counterfactuals:
        return ""
    head = (
        "<tr><th>configuration that held up</th><th>at</th><th class='r'>signal there</th>"
        "<th class='r'>signal here</th><th class='r'>throughput</th><th>verdict</th></tr>"
    )
    rows = [
        "<tr>"
        + _td(cf.config)
        + _td(cf.label)
        + _td(format_share(cf.theirs), "r")
        + _td(format_share(cf.ours), "r")
        + _td(format_change_pct(cf.gain_pct), "r")
        + _td(cf.verdict, "verdict-better" if cf.verdict == "confirms" else "verdict-worse")
        + "</tr>"
        for cf in c.counterfactuals
    ]
    return "<table>\n" + head + "\n" + "\n".join(rows) + "\n</table>"


def _falloff_lines(d: ConfigDiagnosis) -> list[str]:
    lines = d.falloff.describe() if d.falloff else [d.note]
    if d.falloff is not None and not d.falloff.has_falloff and d.ceiling is None:
        lines.append("no falloff: nothing to explain")
    if d.ceiling is not None:
        lines.append(d.ceiling.text)
    return lines


def entry_html(entry: DiagnosisEntry) -> str:
    d = entry.diagnosis
    if d is None:
        return "<pre>" + escape("\n".join(entry.lines)) + "</pre>"
    parts = [f"<h3 id='diagnosis-{escape(d.config)}'>{escape(d.config)} ({escape(d.fs_type)})</h3>"]
    parts += [f"<p>{escape(line)}</p>" for line in _falloff_lines(d)]
    if d.candidates:
        top = d.candidates[0]
        margin = (
            f", {d.margin:.2f} ahead of {escape(d.judged[1].mechanism)}"
            if d.margin is not None and len(d.judged) > 1
            else ""
        )
        parts.append(
            f"<p class='mechanism'><b>{escape(top.title)}</b> <code>{escape(top.mechanism)}</code>"
            f" score {top.score:.2f}{margin}: explains {format_share(top.explained)} of the change"
            f" (metrics x{format_ratio(top.metric_factor)}).</p>"
        )
        parts.append(f"<p class='muted'>{escape(top.explanation)}</p>")
        if d.stability is not None:
            parts.append(f"<p>{escape(d.stability.describe(d.bad_label))}</p>")
        parts.append(evidence_table(top, d, links=entry.focus))
        cf = counterfactual_table(top)
        if cf:
            parts += ["<h4>Counterfactual: configurations that held up at the bad point</h4>", cf]
        if top.remedies:
            parts.append(
                "<h4>What to try</h4><ul>"
                + "".join(f"<li>{escape(r)}</li>" for r in top.remedies)
                + "</ul>"
            )
    if d.ruled_out:
        parts.append("<h4>Ruled out</h4><ul>")
        parts += [
            f"<li><b>{escape(c.title)}</b> <code>{escape(c.mechanism)}</code>: "
            f"{escape(ruled_out_text(c, d))}</li>"
            for c in d.ruled_out
        ]
        parts.append("</ul>")
    if len(d.candidates) > 1:
        parts.append("<h4>Other candidates</h4>" + _others_table(d))
    if d.falloff is not None and d.falloff.has_falloff and d.unknown is not None:
        head = unknown_head(d)
        parts.append(f"<p>{escape(head[0].upper() + head[1:])}</p>")
        parts.append("<ul>" + "".join(f"<li>{escape(x)}</li>" for x in unknown_items(d)) + "</ul>")
    if entry.focus and d.candidates:
        parts.append(
            "<p class='muted'>Evidence from: <a href='#flame-graph'>flame graph</a>, "
            "<a href='#flame-diff'>differential flame graph</a>, "
            "<a href='#contention-wchan'>where threads wait</a>, "
            "<a href='#contention-workqueues'>workqueues</a>, "
            "<a href='#contention-jbd2'>jbd2</a>.</p>"
        )
    return "<div class='diagnosis'>\n" + "\n".join(parts) + "\n</div>"


def _others_table(d: ConfigDiagnosis) -> str:
    head = (
        "<tr><th>rank</th><th>mechanism</th><th class='r'>score</th>"
        "<th class='r'>explains</th><th>counterfactual</th></tr>"
    )
    rows = []
    for rank, c in enumerate(d.candidates[1:], 2):
        verdicts = ", ".join(f"{cf.verdict} ({cf.config})" for cf in c.counterfactuals) or "-"
        rows.append(
            "<tr>"
            + _td(str(rank))
            + _td(f"{c.title} [{c.mechanism}]")
            + _td(f"{c.score:.2f}", "r")
            + _td(format_share(c.explained), "r")
            + _td(verdicts)
            + "</tr>"
        )
    return "<table>\n" + head + "\n" + "\n".join(rows) + "\n</table>"
