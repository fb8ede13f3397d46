"""What a reply to a bug report says, assembled from the report model and the analysis.

`fslab report ID --format reply` answers the report a campaign reproduces
(its spec's [reported] table, written by `fslab reproduce`) as a maintainer
would: what ran and how it was scaled, the reporter's figures beside fslab's,
the mechanism with its evidence, the reporter's hypothesis judged, the
remedy's measured effect, and what this machine could not reproduce. Without
[reported] it is a plain "here is what fslab found". Every figure comes from
the report model or analyze/ (falloff, diagnosis, comparisons, reported);
this module only picks and orders, and `report.reply` lays it out.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.curve.falloff import Falloff
from fslab.analyze.versus.reported import FigureMatch, match_figures
from fslab.analyze.versus.within import PointVerdict, verdicts_at
from fslab.base.vocab import PointKey
from fslab.diagnose.diagnosis import ConfigDiagnosis
from fslab.diagnose.hypotheses import HypothesisJudgement, judge_hypothesis
from fslab.diagnose.mechanisms import Blamed, blamed_mechanism, load_rules
from fslab.report.model import build_report
from fslab.report.recipe import rerun_argv
from fslab.report.tree import Report
from fslab.spec.comments import SpecComment, spec_comments
from fslab.spec.reported import ReportedSpec
from fslab.store.db import Store

# the spec sections whose comments say how the experiment was scaled and changed
SCALING_SECTIONS = ("target", "workload", "sweep", "run")


@dataclass(frozen=True)
class ScalingNote:
    """One setting of the spec as it ran, with the reason the spec gives for it."""

    setting: str  # "workload.options.filesize"
    value: str  # as run; "" for a table's own comment
    reason: str
    spec_value: str = ""  # the spec's own value, when --quick replaced it


@dataclass
class HypothesisReply:
    """One hypothesis of the reporter's, as the mechanism it names and its verdict here."""

    statement: str
    line: int
    names: Sequence[tuple[str, str]]  # (kind, name) as the report's hypothesis names them
    blamed: Blamed | None  # None: the rule base has no mechanism for what it names
    judgement: HypothesisJudgement | None  # None: not judged (see why_not)
    why_not: str = ""


@dataclass
class Reply:
    report: Report
    reported: ReportedSpec | None
    rerun: list[str]  # the fslab command that runs this experiment again
    quick: bool
    quick_reason: str  # the spec's comment on its [quick] form
    scaling: list[ScalingNote]
    figures: list[FigureMatch]
    falloffs: list[Falloff]  # every configuration with results, in campaign order
    focus: ConfigDiagnosis | None  # the configuration the report centres on
    hypotheses: list[HypothesisReply]
    remedy_point: str  # where the configurations are compared
    remedies: list[PointVerdict]
    descriptions: dict[str, str] = field(default_factory=dict)  # config -> the spec's words

    @property
    def falls_off(self) -> bool:
        """The focus configuration really falls off (there is a change to explain)."""
        falloff = self.focus.falloff if self.focus is not None else None
        return falloff is not None and falloff.has_falloff


def build_reply(store: Store, campaign_id: int) -> Reply:
    report = build_report(store, campaign_id)
    data = load_campaign(store, campaign_id)
    spec = data.campaign.spec
    reported = spec.reported
    quick = data.campaign.overrides.quick
    comments = spec_comments(data.campaign.spec_toml)
    diagnoses = [e.diagnosis for e in report.diagnosis.entries if e.diagnosis is not None]
    focus = next((e.diagnosis for e in report.diagnosis.entries if e.focus and e.diagnosis), None)
    figures = match_figures(data, reported) if reported else []
    point_key, point_label = _remedy_point(focus, figures)
    remedies = verdicts_at(data, focus.config, point_key) if focus and point_key else []
    return Reply(
        report=report,
        reported=reported,
        rerun=rerun_argv(data.campaign.overrides, reported.source if reported else ""),
        quick=quick,
        quick_reason=next((c.reason for c in comments if c.path == ("quick", "set")), ""),
        scaling=_scaling(comments, spec.model_dump(mode="json"), data.campaign.spec_toml, quick),
        figures=figures,
        falloffs=[d.falloff for d in diagnoses if d.falloff is not None],
        focus=focus,
        hypotheses=_hypotheses(reported, focus),
        remedy_point=point_label,
        remedies=remedies,
        descriptions={str(fs.label): fs.description for fs in spec.filesystems},
    )


def _remedy_point(
    focus: ConfigDiagnosis | None, figures: list[FigureMatch]
) -> tuple[PointKey | None, str]:
    """Where the other configurations are judged against the focus: its falloff point,
    else the point the reporter's figures stand at, else its worst point."""
    if focus is None or focus.falloff is None:
        return None, ""
    falloff = focus.falloff
    if not falloff.has_falloff:
        matched = next((f.point for f in figures if f.point and f.config == focus.config), None)
        if matched is not None:
            return matched.key, matched.label
    return falloff.worst.key, falloff.worst.label


def _lookup(tree: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _value_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(repr(v) if v == "" else str(v) for v in value) + "]"
    if isinstance(value, dict):
        return ""
    return str(value) if value is not None else ""


def _scaling(
    comments: list[SpecComment], spec: dict[str, Any], toml_text: str, quick: bool
) -> list[ScalingNote]:
    try:
        written = tomllib.loads(toml_text) if toml_text else {}
    except (tomllib.TOMLDecodeError, RecursionError):  # an imported campaign's text
        written = {}
    quick_set = (spec.get("quick") or {}).get("set") or {} if quick else {}
    notes = []
    for comment in comments:
        if comment.path[0] not in SCALING_SECTIONS:
            continue
        ran = _value_text(_lookup(spec, comment.path))
        own = _value_text(_lookup(written, comment.path))
        replaced = comment.dotted in quick_set and own != ran
        notes.append(ScalingNote(comment.dotted, ran, comment.reason, own if replaced else ""))
    return notes


def _hypotheses(
    reported: ReportedSpec | None, focus: ConfigDiagnosis | None
) -> list[HypothesisReply]:
    if reported is None:
        return []
    rules = load_rules()
    out = []
    for hypothesis in reported.hypotheses:
        names = [(n.kind, n.name) for n in hypothesis.names]
        blamed = blamed_mechanism(names, rules)
        reply = HypothesisReply(hypothesis.statement, hypothesis.line, names, blamed, None)
        if blamed is None:
            named = ", ".join(f"{k} {n}" for k, n in names) or "no name fslab can read"
            reply.why_not = f"fslab has no mechanism for what it names ({named})"
        elif focus is None:
            reply.why_not = "no configuration was diagnosed"
        else:
            reply.judgement = judge_hypothesis(focus, blamed.rule.id)
        out.append(reply)
    return out
