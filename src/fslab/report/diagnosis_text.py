"""A diagnosis in words: `fslab diagnose`, --hypothesis, and the report's text.

The diagnose package judges and ranks; this module only lays its results out
in lines of at most `width` columns (the reply and the HTML report lay the
same results out in their own forms).
"""

from __future__ import annotations

import textwrap

from fslab.base.format import format_plain, format_ratio, format_share
from fslab.diagnose.diagnosis import ConfigDiagnosis, ruled_out_text
from fslab.diagnose.hypotheses import judge_hypothesis
from fslab.diagnose.score import Candidate


def _wrap(text: str, width: int, indent: str, hang: str) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=hang) or [
        indent
    ]


def describe_diagnosis(d: ConfigDiagnosis, width: int = 80) -> list[str]:
    """Plain-text lines, each at most `width` columns."""
    lines = _wrap(f"{d.config} ({d.fs_type})", width, "", "  ")
    if d.falloff is not None:
        lines += _wrap(d.falloff.reason, width, "  ", "    ")
        for extra in d.falloff.describe()[1:]:
            lines += _wrap(extra, width, "  ", "    ")
    if d.falloff is None:
        lines += _wrap(d.note, width, "  ", "    ")
    elif not d.falloff.has_falloff and d.ceiling is None:
        lines.append("  no falloff: nothing to explain")
    if d.ceiling is not None:
        lines += _wrap(d.ceiling.text, width, "  ", "    ")
    for rank, c in enumerate(d.candidates, 1):
        lines += describe_candidate(c, d, rank, width)
    if d.ruled_out:
        lines.append("  ruled out:")
        for c in d.ruled_out:
            lines += _wrap(
                f"{c.title} [{c.mechanism}]: {ruled_out_text(c, d)}", width, "   - ", "     "
            )
    if d.stability is not None:
        lines += _wrap(d.stability.describe(d.bad_label), width, "  ", "    ")
    if d.falloff is not None and d.falloff.has_falloff and d.unknown is not None:
        lines += _wrap(unknown_head(d), width, "  ", "    ")
        lines += [
            line for item in unknown_items(d) for line in _wrap(item, width, "   - ", "     ")
        ]
    return lines


def unknown_head(d: ConfigDiagnosis) -> str:
    """The honest unknown's first sentence: nothing explains it, or too little does."""
    if not d.candidates or d.unknown is None:
        return "no mechanism in the rule base explains the change; what grew most:"
    return (
        f"the rule base explains {format_share(d.unknown.explained)} of the change; what else grew:"
    )


def unknown_items(d: ConfigDiagnosis) -> list[str]:
    """Each grown frame with its chain, subsystem, site and the other configurations'
    shares; then the configuration that would test it."""
    if d.unknown is None:
        return []
    items = []
    for f in d.unknown.frames:
        what = "threads" if f.kind == "offcpu" else "busy CPU"
        text = (
            f"{what} in {f.frame}: {format_share(f.good)} at {d.good_label} -> "
            f"{format_share(f.bad)} at {d.bad_label}"
        )
        if f.subsystem:
            text += f", in {f.subsystem}"
        text += f"; it {f.site}"
        if len(f.chain) > 2:
            text += f"; reached by {' > '.join(f.chain)}"
        if f.elsewhere:
            shown = ", ".join(
                f"{config} {format_share(g)} -> {format_share(b)}"
                for config, (g, b) in f.elsewhere.items()
            )
            text += f"; the same frame elsewhere: {shown}"
        items.append(text)
    items.append(f"to test it, add: {d.unknown.test}")
    return items


def candidate_head(c: Candidate, d: ConfigDiagnosis, rank: int) -> str:
    margin = ""
    if rank == 1 and d.margin is not None and len(d.judged) > 1:
        margin = f", {d.margin:.2f} ahead of {d.judged[1].mechanism}"
    return f"{rank}. {c.title} [{c.mechanism}] score {c.score:.2f}{margin}"


def candidate_evidence(c: Candidate, good: str, bad: str) -> list[str]:
    """The evidence a candidate stands on, one item a line: its frames' shares at the good
    and bad points, its measured metrics and requirements, the facts against it."""
    lines = []
    for kind, (g, b) in c.shares.items():
        what = "threads waiting" if kind == "offcpu" else "busy CPU"
        lines.append(
            f"{what} in its frames: {format_share(g)} at {good} -> {format_share(b)} at {bad}"
        )
    lines += [f.text for f in c.metrics if f.holds is not None]
    lines += [f.text for f in c.requires if f.holds is not None]
    lines += [f"against: {f.text}" for f in c.against if f.holds]
    return lines


def describe_candidate(c: Candidate, d: ConfigDiagnosis, rank: int, width: int = 80) -> list[str]:
    lines = _wrap(candidate_head(c, d, rank), width, "  ", "     ")
    if d.falloff is not None and not d.falloff.has_falloff and d.ceiling is not None:
        lines += _wrap("no change to explain, but a ceiling at every point", width, "     ", "  ")
        return lines + [
            line for r in c.remedies for line in _wrap(r, width, "     try: ", "          ")
        ]
    parts = []
    if c.explained_off is not None:
        parts.append(f"off-CPU {format_share(c.explained_off)}")
    if c.explained_on is not None:
        parts.append(f"on-CPU {format_share(c.explained_on)}")
    factors = f"metrics x{format_ratio(c.metric_factor)}"
    if c.against_factor < 1:
        factors += f", against x{format_plain(c.against_factor)}"
    if c.counterfactual_factor < 1:
        factors += f", weakened x{format_plain(c.counterfactual_factor)}"
    split = f"({', '.join(parts) or 'no profile'}); {factors}"
    summary = f"explains {format_share(c.explained)} of the change {split}"
    if c.capped is not None:  # the limit every point runs at ranks it, not the change
        summary = (
            f"ranked by the device's limit ({format_share(c.capped)} of it or more at every "
            f"point), not by the change between the points, of which it explains "
            f"{format_share(c.explained)} {split}"
        )
    lines += _wrap(summary, width, "     ", "       ")
    for item in candidate_evidence(c, d.good_label, d.bad_label):
        lines += _wrap(item, width, "     evidence: ", "               ")
    for cf in c.counterfactuals:
        lines += _wrap(f"{cf.verdict}: {cf.text}", width, "     ", "       ")
    if rank == 1:
        for remedy in c.remedies:
            lines += _wrap(remedy, width, "     try: ", "          ")
    return lines


def describe_hypothesis(d: ConfigDiagnosis, mechanism: str, width: int = 80) -> list[str]:
    """One mechanism judged in full, for or against (fslab diagnose --hypothesis)."""
    lines = _wrap(f"{d.config} ({d.fs_type}): hypothesis {mechanism}", width, "", "  ")
    if d.falloff is not None:
        lines += _wrap(d.falloff.reason, width, "  ", "    ")
    judged = judge_hypothesis(d, mechanism)
    c, rank = judged.candidate, judged.rank
    if c is None or rank is None:
        return lines + _wrap(f"not judged: {judged.text}", width, "  ", "    ")
    lines += _wrap(f"verdict: {judged.verdict}: {judged.text}", width, "  ", "    ")
    head = len(_wrap(candidate_head(c, d, rank), width, "  ", "     "))
    lines += describe_candidate(c, d, rank, width)[head:]
    for f in c.metrics + c.requires + c.against:
        if f.holds is None:
            lines += _wrap(f"not measured: {f.text}", width, "     ", "       ")
    if d.candidates and c is not d.candidates[0]:
        lines += _wrap(f"why not: {ruled_out_text(c, d)}", width, "     ", "       ")
    return lines
