"""The reply to a bug report as plain text: mailing-list style, within 72 columns.

A maintainer's answer is read in a mail client and quoted back line by line,
so every line fits 72 columns (room for a few levels of "> "), none starts
with ">" (a quoting client would take it for a quote), there is no markup,
and commands are shell-quoted so they paste. The order is the order a
reader asks in: what ran and how, your figures beside mine, why it falls
off, your hypothesis, what helps, what could not be reproduced. What it
says is decided in `report.reply_model`; this module only lays it out.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.verdicts import ComparisonRow
from fslab.analyze.versus.reported import FigureMatch
from fslab.analyze.versus.within import PointVerdict
from fslab.base.format import format_bytes, format_change_pct, format_share
from fslab.base.vocab import PointKey, ScalarValue, point_key, point_label
from fslab.diagnose.diagnosis import ConfigDiagnosis, ruled_out_reasons
from fslab.diagnose.score import Candidate
from fslab.report.diagnosis_text import candidate_evidence, unknown_items
from fslab.report.reply_model import HypothesisReply, Reply, ScalingNote, build_reply
from fslab.report.text_blocks import Table, shell_lines, wrap
from fslab.report.tree import FailedPoint, FilesystemSetup
from fslab.report.verdict_cells import comparison_cells
from fslab.spec.reported import ReportedFigure
from fslab.store.db import Store
from fslab.workload.registry import metric_label

WIDTH = 72
INDENT = "  "
SHORT_ERROR = 150  # characters of a failure's error kept in a reply


def reply_text(store: Store, campaign_id: int) -> str:
    """`fslab report ID --format reply`: the campaign's answer to its report."""
    return render_reply(build_reply(store, campaign_id))


def render_reply(reply: Reply) -> str:
    lines = _opening(reply)
    for title, body in (
        ("What I ran", _what_ran(reply)),
        ("Your figures and mine" if reply.reported else "What fslab measured", _figures(reply)),
        ("Why it falls off" if reply.falls_off else "Diagnosis", _mechanism(reply)),
        ("Your hypothesis", _hypotheses(reply)),
        ("What helps", _remedies(reply)),
        ("What I could not reproduce here", _unreproduced(reply)),
    ):
        if body:
            lines += ["", title, "-" * len(title), *body]
    lines += ["", *_para(_closing(reply), "")]
    return "\n".join(_checked(lines)) + "\n"


def _checked(lines: list[str]) -> list[str]:
    """Every line within WIDTH, none that a mail client would take for a quote."""
    out = []
    for line in lines:
        line = line.rstrip()
        if line.startswith(">"):
            line = " " + line
        out += [line] if len(line) <= WIDTH else wrap(line.strip(), WIDTH, "", INDENT)
    return out


# ------------------------------------------------------------------ building blocks


def _para(text: str, indent: str = INDENT, hang: str | None = None) -> list[str]:
    return wrap(text, WIDTH, indent, indent if hang is None else hang)


def _bullets(items: Iterable[str], indent: str = INDENT) -> list[str]:
    return [line for item in items for line in _para(item, indent + "- ", indent + "  ")]


def _block(*parts: list[str]) -> list[str]:
    """Paragraphs one blank line apart, empty ones left out."""
    out: list[str] = []
    for part in parts:
        if part:
            out += ([""] if out else []) + part
    return out


def _point(key: PointKey | Mapping[str, ScalarValue]) -> str:
    """A sweep point as the reply names it (vocab's rule); a campaign without a sweep: in prose."""
    return point_label(key, empty="the one point")


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _per_point(runs: list[int]) -> str:
    """How many runs each median is over: "one run a point", "median over 4 runs a point"."""
    if runs == [1]:
        return "one run a point"
    return f"median over {'/'.join(str(n) for n in runs) or 'no'} runs a point"


def _short(text: str, limit: int = SHORT_ERROR) -> str:
    """An error cut to its first sentence (or `limit` characters): the report has it all."""
    flat = " ".join(text.split())
    end = flat.find(". ", 40)
    if 0 < end < limit:
        return flat[: end + 1]
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _what(metric: str) -> str:
    """A figure's name for readers: "write IOPS", "find_next_bit (self)"."""
    kind, _, function = metric.removeprefix("profile.").partition(".")
    if metric.startswith("profile.") and function:
        return f"{function} ({kind})"
    return metric_label(metric)


def _shell(argv: list[str], indent: str = INDENT) -> list[str]:
    return [indent + line for line in shell_lines(argv, WIDTH - len(indent), prompt="# ")]


# ------------------------------------------------------------------ opening


def _host(reply: Reply) -> str:
    host = reply.report.setup.host
    memory = host.fact("memory_bytes")
    memory_text = f", {format_bytes(int(memory))} of memory" if memory else ""
    machine = (
        f"a {host.shown('online_cpus')}-CPU machine{memory_text}, kernel "
        f"{host.shown('kernel_release')}"
    )
    guests = reply.report.setup.guests
    return f"{machine}, in qemu guests ({'; '.join(guests)})" if guests else machine


def _opening(reply: Reply) -> list[str]:
    campaign = reply.report.campaign
    runs = _runs(campaign.points_ok) + (
        f", {campaign.points_failed} failed" if campaign.points_failed else ""
    )
    lines = []
    if reply.reported is not None:
        if reply.reported.title:
            lines += [f"Subject: Re: {reply.reported.title}", ""]
        lines += ["Hi,", ""]
        lines += _para(
            f"thanks for the report. I reproduced it with fslab {campaign.fslab_version}, "
            f"scaled to {_host(reply)} (campaign {campaign.id}, {runs}).",
            "",
        )
    else:
        lines += ["Hi,", ""]
        lines += _para(
            f"here is what fslab {campaign.fslab_version} found in campaign {campaign.id} "
            f"({campaign.name}: {campaign.description or 'no description'}), on "
            f"{_host(reply)} ({runs}).",
            "",
        )
    return [*lines, "", *_para("In short: " + " ".join(_summary(reply)), "")]


def _summary(reply: Reply) -> list[str]:
    focus = reply.focus
    if focus is None or focus.falloff is None:
        return ["no point succeeded, so there is nothing to explain yet (below: why)."]
    falloff = focus.falloff
    if not falloff.has_falloff:
        out = [f"on {focus.config}, {falloff.reason}."]
        if focus.candidates:
            top = focus.candidates[0]
            out.append(f"But every point is capped: {top.title} [{top.mechanism}].")
    else:
        out = [
            f"on {focus.config}, {metric_label(falloff.metric)} drops from "
            f"{format_value(falloff.metric, falloff.best.median)} at "
            f"{_point(falloff.best.key)} to "
            f"{format_value(falloff.metric, falloff.worst.median)} at "
            f"{_point(falloff.worst.key)} ({format_change_pct(-falloff.drop_pct)})"
        ]
        if focus.candidates:
            top = focus.candidates[0]
            out[0] += f", and the cause is {top.title} [{top.mechanism}]."
        else:
            out[0] += ", and no mechanism fslab knows explains it."
    for hypothesis in reply.hypotheses:
        if hypothesis.judgement and hypothesis.blamed:
            out.append(
                f"Your hypothesis ({hypothesis.blamed.name}, fslab's "
                f"{hypothesis.blamed.rule.id}) is {hypothesis.judgement.verdict} here."
            )
    lead = _lead_remedy(reply.remedies)
    if lead is not None:
        row = lead.row
        p = comparison_cells(row).p
        judged = {"better": "is better", "worse": "is worse", "no change shown": "shows no change"}
        out.append(
            f"At {reply.remedy_point}, {lead.candidate} {judged.get(row.verdict, row.verdict)}: "
            f"{format_change_pct(row.change_pct)} against {lead.baseline}"
            + (f", p {p}." if p != "-" else ".")
        )
    return out


def _lead_remedy(remedies: list[PointVerdict]) -> PointVerdict | None:
    """The configuration that gains most, preferring those judged better."""
    if not remedies:
        return None
    return max(remedies, key=lambda v: (v.row.verdict == "better", v.row.ratio))


# ------------------------------------------------------------------ what ran


def _what_ran(reply: Reply) -> list[str]:
    report = reply.report
    workload: list[str] = []
    if reply.reported is not None and reply.reported.workload:
        line = reply.reported.workload_line
        where = f" (line {line})" if line else ""
        workload = _para(f"Your workload{where}, as you gave it:")
        workload += _para(reply.reported.workload, INDENT * 2)
    scaling: list[str] = []
    if reply.scaling:
        scaling = _para("Scaled to this machine, in the spec's own words:")
        scaling += _bullets(_scaling_text(note) for note in reply.scaling)
        if reply.quick and reply.quick_reason:
            scaling += _bullets([reply.quick_reason])
    configs = _para("Configurations:") + _bullets(
        _config_text(reply, fs) for fs in report.setup.filesystems
    )
    by_hand: list[str] = []
    point = report.reproduce.point
    if report.reproduce.steps and point is not None:
        by_hand = _para(f"{report.reproduce.why.capitalize()} ({point.label}), by hand:")
        for step in report.reproduce.steps:
            if step.comment:
                by_hand += _para(step.comment, INDENT * 2)
            if step.argv:
                by_hand += _shell(step.argv, INDENT * 2)
    return _block(_shell(reply.rerun), workload, scaling, configs, by_hand)


def _scaling_text(note: ScalingNote) -> str:
    value = f" = {note.value}" if note.value else ""
    spec = f" (--quick; the spec: {note.spec_value})" if note.spec_value else ""
    return f"{note.setting}{value}{spec}: {note.reason}"


def _config_text(reply: Reply, fs: FilesystemSetup) -> str:
    description = reply.descriptions.get(fs.config) or fs.description
    head = f"{fs.config}: {description}; " if description else f"{fs.config}: "
    mkfs = shlex.join(fs.mkfs_argv) if fs.mkfs_argv else f"{fs.fs_type} (mkfs never ran)"
    mount = ",".join(fs.mount_options) or "defaults"
    journal = f", {format_bytes(fs.journal_bytes)} {fs.journal_kind}" if fs.journal_bytes else ""
    failed = "; no point succeeded" if any("no point succeeded" in n for n in fs.notes) else ""
    return f"{head}{mkfs}, mounted {mount}{journal}{failed}"


# ------------------------------------------------------------------ figures


def _figures(reply: Reply) -> list[str]:
    reported = _figure_table(reply) if reply.reported is not None and reply.figures else []
    sweep = _sweep_table(reply)
    falloffs = _bullets(f"{f.config}: {f.reason}" for f in reply.falloffs)
    failures = _bullets(_failure_text(group) for group in _failure_groups(reply))
    return _block(reported, sweep, falloffs, failures, _bullets(reply.report.results.notes))


def _figure_table(reply: Reply) -> list[str]:
    """Per figure (a group row), each configuration: the reporter's value and fslab's."""
    assert reply.reported is not None
    points = [f.point for f in reply.figures if f.point is not None]
    common = points[0] if points and all(p.key == points[0].key for p in points) else None
    cpus = reply.reported.cpus
    host_cpus = reply.report.setup.host.shown("online_cpus")
    where = "in the guest" if reply.report.setup.guests else f"{host_cpus} CPUs"
    here = f"here ({where})" + (f", {_point(common.key)}" if common else "")
    headers = ["", f"yours ({cpus} CPUs)" if cpus else "yours", here]
    rows: list[list[str]] = []
    missing: list[str] = []
    previous: tuple[str, str] | None = None
    for match in sorted(reply.figures, key=lambda m: m.metric != reply.report.results.headline):
        if previous is None or match.metric != previous[1]:
            rows.append([_what(match.metric) if match.metric else "other figures", "", ""])
        first = previous != (match.config, match.metric)
        fslab = _fslab_cell(match, with_point=common is None) if first else ""
        if first and match.measured is None:
            missing.append(f"{match.config}, {_yours_cell(match.figure)}: {match.why_none}")
        rows.append([match.config if first else "", _yours_cell(match.figure), fslab])
        previous = (match.config, match.metric)
    lines = Table(headers, rows, "lll").lines(WIDTH, INDENT)
    notes = []
    if common is not None and not common.exact:
        notes.append(
            f"{_point(common.key)} is the point measured nearest yours ({common.reporter})."
        )
    runs = sorted({m.runs for m in reply.figures if m.runs})
    if runs:
        notes.append(f"Mine: {_per_point(runs)}.")
    said = sorted({m.figure.line for m in reply.figures if m.figure is not None})
    if said:
        notes.append(f"Yours as the report gives them (line {', '.join(map(str, said))}).")
    out = lines + (["", *_para(" ".join(notes))] if notes else [])
    if missing:
        out += ["", *_para("No figure of mine beside:"), *_bullets(missing)]
    return out


def _yours_cell(figure: ReportedFigure | None) -> str:
    if figure is None:
        return "-"
    if figure.kernel:
        return f"{figure.text} on {figure.kernel}"
    if figure.context and len(figure.context) <= 12 and figure.context != figure.config:
        return f"{figure.text} ({figure.context})"
    return figure.text


def _fslab_cell(match: FigureMatch, *, with_point: bool) -> str:
    if match.measured is None:
        return "-"
    text = format_value(match.metric, match.measured)
    if with_point and match.point is not None:
        text += f" at {_point(match.point.key)}"
    return text


def _sweep_table(reply: Reply) -> list[str]:
    """fslab's own figures: the headline median at every point of every configuration."""
    results = reply.report.results
    if results.headline is None or not results.rows:
        return []
    configs = list(dict.fromkeys(r.config for r in results.rows))
    points = list(dict.fromkeys(point_key(r.sweep) for r in results.rows))
    cells = {(r.config, point_key(r.sweep)): r for r in results.rows}

    def cell(config: str, key: PointKey) -> str:
        row = cells.get((config, key))
        if row is None:
            return ""
        if row.median is None:
            return "failed"
        return format_value(results.headline, row.median)

    axes = " ".join(results.axes) or "point"

    def point_text(key: PointKey) -> str:
        return " ".join(str(v) if v != "" else "-" for _, v in key) or "-"

    if len(configs) > 3 and len(points) < len(configs):  # too wide: configurations as rows
        headers = ["config", *(point_text(p) for p in points)]
        rows = [[c, *(cell(c, p) for p in points)] for c in configs]
        headers[0] = f"config \\ {axes}"
    else:
        headers = [axes, *configs]
        rows = [[point_text(p), *(cell(c, p) for c in configs)] for p in points]
    runs = sorted({r.n_ok for r in results.rows if r.n_ok})
    caption = _para(f"{results.headline_label} at every point here ({_per_point(runs)}):")
    return caption + Table(headers, rows, "l" + "r" * (len(headers) - 1)).lines(WIDTH, INDENT)


def _failure_groups(reply: Reply) -> list[list[FailedPoint]]:
    """Failed runs by configuration and error (their paths aside), in run order."""
    groups: dict[tuple[str, str], list[FailedPoint]] = {}
    for failed in reply.report.results.failures:
        head = _short(failed.error, 60)
        groups.setdefault((failed.config, head), []).append(failed)
    return list(groups.values())


def _failure_text(group: list[FailedPoint]) -> str:
    first = group[0]
    # a sweep point's repetitions and its evidence run fail alike: name each point once
    where = ", ".join(dict.fromkeys(_point(f.sweep) for f in group))
    return f"{first.config}: {_runs(len(group))} failed ({where}): {_short(first.error)}"


# ------------------------------------------------------------------ mechanism


def _mechanism(reply: Reply) -> list[str]:
    d = reply.focus
    if d is None:
        notes = reply.report.diagnosis.notes
        return _para(notes[0] if notes else "no configuration has a successful point.")
    if d.falloff is None:
        return _para(f"{d.config}: {d.note}.")
    if not d.falloff.has_falloff and not d.candidates:
        return _para("Nothing falls off, so there is nothing to explain.")
    if not d.falloff.has_falloff:  # a ceiling: one mechanism caps every point at once
        top = d.candidates[0]
        ceiling = f", but {d.ceiling.text}" if d.ceiling is not None else ""
        return _block(
            _para(
                f"{d.config}: nothing falls off between points{ceiling}: "
                f"{top.title} [{top.mechanism}] caps them all."
            ),
            _para(top.explanation),
        )
    if not d.candidates:
        return _para(
            f"{d.config}: no mechanism in fslab's rule base explains the change. What grew "
            f"most from {d.good_label} to {d.bad_label}:"
        ) + _bullets(unknown_items(d))
    top = d.candidates[0]
    evidence = candidate_evidence(top, d.good_label, d.bad_label)
    counterfactuals = [f"{cf.verdict}: {cf.text}" for cf in top.counterfactuals]
    ruled_out = [
        f"{c.title} [{c.mechanism}]: {'; '.join(ruled_out_reasons(c, d))}" for c in d.ruled_out
    ]
    return _block(
        _para(_head(top, d)),
        _para(top.explanation),
        _para("Evidence:") + _bullets(evidence) if evidence else [],
        _para("Against the other configurations at the same point:") + _bullets(counterfactuals)
        if counterfactuals
        else [],
        _para("Ruled out:") + _bullets(ruled_out) if ruled_out else [],
    )


def _head(top: Candidate, d: ConfigDiagnosis) -> str:
    margin = ""
    if d.margin is not None and len(d.judged) > 1:
        margin = f", {d.margin:.2f} ahead of {d.judged[1].mechanism}"
    parts = [f"off-CPU {format_share(top.explained_off)}"] if top.explained_off is not None else []
    parts += [f"on-CPU {format_share(top.explained_on)}"] if top.explained_on is not None else []
    split = f" ({', '.join(parts)})" if parts else ""
    stable = (
        f" Across the evidence runs it is {d.stability.describe(d.bad_label)}."
        if d.stability
        else ""
    )
    return (
        f"{d.config}: {top.title} [{top.mechanism}], score {top.score:.2f}{margin}. "
        f"It explains {format_share(top.explained)} of the change from {d.good_label} to "
        f"{d.bad_label}{split}.{stable}"
    )


# ------------------------------------------------------------------ hypothesis


def _hypotheses(reply: Reply) -> list[str]:
    parts = []
    for hypothesis in reply.hypotheses:
        parts.append(_para(f'You wrote (line {hypothesis.line}): "{hypothesis.statement}"'))
        parts.append(_judged(hypothesis, reply.focus))
    return _block(*parts)


def _judged(hypothesis: HypothesisReply, d: ConfigDiagnosis | None) -> list[str]:
    blamed, judged = hypothesis.blamed, hypothesis.judgement
    if blamed is None or judged is None or d is None:
        return _para(f"Not judged: {hypothesis.why_not}.")
    lines = _para(
        f"fslab reads {blamed.name} (a {blamed.kind}) as {blamed.rule.title} "
        f"[{blamed.rule.id}]. Verdict on {judged.config}: {judged.verdict}: {judged.text}."
    )
    c = judged.candidate
    if c is not None and judged.verdict == "supported":
        lines += _bullets(
            [
                *candidate_evidence(c, d.good_label, d.bad_label),
                *(f"{cf.verdict}: {cf.text}" for cf in c.counterfactuals),
            ]
        )
    elif c is not None:
        lines += _bullets(r for r in ruled_out_reasons(c, d) if r != judged.text)
    other = [(kind, name) for kind, name in hypothesis.names if not blamed.rule.is_blamed_by(name)]
    if other:
        named = ", ".join(f"{k} {n[:12] if k == 'commit' else n}" for k, n in other)
        commit = any(k == "commit" for k, _ in other)
        why = " (a commit needs guest kernels built with and without it)" if commit else ""
        lines += _para(f"Not tested here: {named}{why}.")
    return lines


# ------------------------------------------------------------------ remedies


def _remedies(reply: Reply) -> list[str]:
    measured: list[str] = []
    if reply.remedies:
        measured = _para(
            f"Each configuration against {reply.remedies[0].baseline} at {reply.remedy_point}, "
            "by fslab's comparison (ratio of medians, its 95% bootstrap interval, "
            "Benjamini-Hochberg adjusted p):"
        ) + _bullets(_remedy_text(reply, v) for v in reply.remedies)
    suggested: list[str] = []
    d = reply.focus
    if d is not None and d.candidates and d.candidates[0].remedies:
        top = d.candidates[0]
        suggested = _para(f"What the diagnosis suggests against {top.short}:")
        suggested += _bullets(top.remedies)
    return _block(measured, suggested)


def _remedy_text(reply: Reply, v: PointVerdict) -> str:
    description = reply.descriptions.get(v.candidate, "")
    what = f" ({description})" if description else ""
    return f"{v.candidate}{what}: {_verdict_long(v.row)}"


def _verdict_short(row: ComparisonRow) -> str:
    p = comparison_cells(row).p
    return f"{row.verdict}, {format_change_pct(row.change_pct)}" + (f", p {p}" if p != "-" else "")


def _verdict_long(row: ComparisonRow) -> str:
    c = comparison_cells(row)
    interval = f", 95% CI x{c.ci_low}..x{c.ci_high}" if c.ci != "-" else ""
    return (
        f"{_verdict_short(row)} ({c.metric} {c.median_candidate} vs {c.median_baseline}, "
        f"x{c.ratio}{interval}; {row.n_candidate} vs {row.n_baseline} runs)"
    )


# ------------------------------------------------------------------ what was not reproduced


def _unreproduced(reply: Reply) -> list[str]:
    reported = reply.reported
    facts: list[str] = []
    questions: list[str] = []
    if reported is not None:
        facts = _bullets(
            f"{f.fact} {f.value} (line {f.line}): {f.reason}" for f in reported.unreproduced
        )
        if reported.questions:
            questions = _para("Where the report left a choice open, fslab assumed:")
            questions += _bullets(
                (f"line {q.line}: " if q.line else "") + f"{q.question}; assumed: {q.assumed}"
                for q in reported.questions
            )
    campaign = reply.report.campaign
    gaps = []
    if campaign.points_failed:
        gaps.append(f"{campaign.points_failed} of {campaign.points_total} runs failed")
    if campaign.points_pending:
        gaps.append(f"{campaign.points_pending} never ran (fslab run --resume {campaign.id})")
    missing = _para("; ".join(gaps) + "; the figures above leave them out.") if gaps else []
    return _block(facts, questions, missing)


def _closing(reply: Reply) -> str:
    cid = reply.report.campaign.id
    return (
        f"Everything above is in `fslab report {cid}` (tables, profiles, every command) and "
        f"`fslab report {cid} --format html`; `fslab diagnose {cid}` has the full diagnosis."
    )
