"""One configuration's diagnosis, and a campaign's: the orchestration.

For each configuration, `analyze.curve.falloff` names the good point (best)
and the bad point (worst); without a falloff there is nothing to explain,
unless a device caps every point (`diagnose.ceiling`). Every rule that
applies is scored (`diagnose.score`), those that explain enough are named,
and the strongest alternatives are ruled out with their reasons, which the
JSON form carries as well as every report. With several evidence runs at the
bad point, the ranking is also made from each alone, to say how stable the
first mechanism and its margin are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.curve.falloff import Falloff, campaign_falloffs
from fslab.base.format import format_change_pct, format_share
from fslab.diagnose.ceiling import Ceiling, config_ceiling
from fslab.diagnose.evidence import PointEvidence, load_evidence
from fslab.diagnose.mechanisms import Rule, load_rules
from fslab.diagnose.score import (
    MIN_SCORE,
    Candidate,
    Context,
    evaluate,
    make_context,
    rank_candidates,
    rounded,
)
from fslab.diagnose.unknown import UNEXPLAINED, Unknown, find_unknown, made_with
from fslab.store.db import Store

SHOWN = 3  # candidates and ruled-out hypotheses listed


@dataclass(frozen=True)
class Stability:
    """The ranking made from each evidence run at the bad point on its own: how often the
    pooled ranking's first mechanism is first, and its margin over the next in each."""

    mechanism: str
    runs: int  # evidence runs at the bad point
    first: int  # runs in which it ranks first
    margins: tuple[float, ...]  # its score minus the best other score, per run

    @property
    def low(self) -> float:
        return min(self.margins)

    @property
    def high(self) -> float:
        return max(self.margins)

    @property
    def stable(self) -> bool:
        """First in every run, ahead in every run."""
        return self.first == self.runs and self.low > 0

    def describe(self, bad_label: str) -> str:
        word = "stable" if self.stable else "not stable"
        return (
            f"{word}: {self.mechanism} first in {self.first} of {self.runs} evidence runs at "
            f"{bad_label}; its margin over the next {self.low:.2f}..{self.high:.2f}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "runs": self.runs,
            "first": self.first,
            "margins": [round(m, 3) for m in self.margins],
            "margin_low": round(self.low, 3),
            "margin_high": round(self.high, 3),
            "stable": self.stable,
        }


@dataclass
class ConfigDiagnosis:
    """One configuration's diagnosis as data: the ranking, the alternatives ruled out, the
    ceiling, and its JSON form (its lines in words are `report.diagnosis_text`'s)."""

    config: str
    fs_type: str
    falloff: Falloff | None
    candidates: list[Candidate] = field(default_factory=list)  # ranked, score >= MIN_SCORE
    ruled_out: list[Candidate] = field(default_factory=list)
    judged: list[Candidate] = field(default_factory=list)  # every rule, ranked
    ceiling: Ceiling | None = None
    unknown: Unknown | None = None  # what grew that the rule base does not explain
    note: str = ""
    good_label: str = ""
    bad_label: str = ""
    stability: Stability | None = None  # with 2 or more evidence runs at the bad point
    bad_evidence_runs: int = 0

    @property
    def margin(self) -> float | None:
        if not self.candidates:
            return None
        second = self.judged[1].score if len(self.judged) > 1 else 0.0
        return self.candidates[0].score - second

    @property
    def top(self) -> str | None:
        """The mechanism ranked first (None: nothing to explain, or nothing explains it)."""
        return self.candidates[0].mechanism if self.candidates else None

    def candidate(self, mechanism: str) -> Candidate | None:
        return next((c for c in self.judged if c.mechanism == mechanism), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "fs_type": self.fs_type,
            "falloff": self.falloff.to_dict() if self.falloff else None,
            "good_point": self.good_label,
            "bad_point": self.bad_label,
            "top": self.top,
            "margin": rounded(self.margin),
            "candidates": [c.to_dict() for c in self.candidates],
            "ruled_out": [
                {"mechanism": c.mechanism, "title": c.title, "why": ruled_out_text(c, self)}
                for c in self.ruled_out
            ],
            "scores": {c.mechanism: round(c.score, 3) for c in self.judged},
            "ceiling": self.ceiling.to_dict() if self.ceiling else None,
            "unknown": self.unknown.to_dict() if self.unknown else None,
            "note": self.note,
            "bad_evidence_runs": self.bad_evidence_runs,
            "stability": self.stability.to_dict() if self.stability else None,
        }


def diagnose_config(
    store: Store,
    data: CampaignData,
    falloffs: Mapping[str, Falloff],
    config: str,
    rules: list[Rule],
) -> ConfigDiagnosis:
    """One configuration: its good and bad points, every rule judged, the ranking, the
    alternatives ruled out, and how stable the first is across the evidence runs."""
    fs_type = data.fs_type(config)
    found = falloffs.get(config)
    if found is None:
        return ConfigDiagnosis(config, fs_type, None, note="no successful point to diagnose")
    diagnosis = ConfigDiagnosis(
        config, fs_type, found, good_label=found.best.label, bad_label=found.worst.label
    )
    applicable = [r.for_fs(fs_type) for r in rules if r.applies_to(fs_type)]
    good = load_evidence(store, data, config, found.best.key, found.best.median)
    bad = load_evidence(store, data, config, found.worst.key, found.worst.median)
    diagnosis.ceiling = config_ceiling(store, data, found, applicable)
    if not found.has_falloff:
        diagnosis.note = f"{found.reason}: nothing to explain"
        if diagnosis.ceiling is not None:
            _rank_ceiling(diagnosis, applicable, good, bad, data, store)
        return diagnosis
    ctx = make_context(store, data, falloffs, found, good, bad, applicable)
    diagnosis.judged = rank_candidates(ctx, applicable, diagnosis.ceiling)
    diagnosis.candidates = [c for c in diagnosis.judged if c.score >= MIN_SCORE][:SHOWN]
    diagnosis.ruled_out = _ruled_out(diagnosis, applicable)
    diagnosis.bad_evidence_runs = len(bad.rows)
    if diagnosis.ceiling is None:  # a device at its limit explains every point at once
        diagnosis.unknown = _unknown(store, data, ctx, diagnosis, applicable)
    if diagnosis.candidates and len(bad.rows) >= 2:
        top = diagnosis.candidates[0].mechanism
        margins, first = [], 0
        for row in bad.rows:
            alone = load_evidence(store, data, config, found.worst.key, found.worst.median, [row])
            ranked = rank_candidates(
                make_context(store, data, falloffs, found, good, alone, applicable),
                applicable,
                diagnosis.ceiling,
            )
            mine = next(c.score for c in ranked if c.mechanism == top)
            others = max((c.score for c in ranked if c.mechanism != top), default=0.0)
            margins.append(mine - others)
            first += ranked[0].mechanism == top
        diagnosis.stability = Stability(top, len(bad.rows), first, tuple(margins))
    return diagnosis


def _unknown(
    store: Store, data: CampaignData, ctx: Context, d: ConfigDiagnosis, rules: list[Rule]
) -> Unknown | None:
    """What grew that the rules explain too little of, with the other configurations'
    shares of the same frames at the same two points."""
    explained = d.candidates[0].explained if d.candidates else 0.0
    if explained >= UNEXPLAINED:
        return None
    best, worst = ctx.falloff.best.key, ctx.falloff.worst.key
    pairs = {
        other: (
            load_evidence(store, data, other, best, None),
            load_evidence(store, data, other, worst, None),
        )
        for other in data.configs()
        if other != d.config
    }
    for pair in pairs.values():
        for evidence in pair:
            ctx.comps.add(evidence, rules)
    first = next((r for r in rules if d.candidates and r.id == d.candidates[0].mechanism), None)
    types = {c: data.fs_type(c) for c in pairs}
    made = {
        ("" if fs.label == d.config else fs.label): made_with(fs)
        for fs in data.campaign.spec.filesystems
    }
    held = frozenset(c for c, _ in ctx.others)
    return find_unknown(
        explained, d.fs_type, ctx.good, ctx.bad, ctx.comps, pairs, rules, first, types, made, held
    )


def _rank_ceiling(
    diagnosis: ConfigDiagnosis,
    rules: list[Rule],
    good: PointEvidence,
    bad: PointEvidence,
    data: CampaignData,
    store: Store,
) -> None:
    """No falloff, but the device caps every point: name the device, say so."""
    assert diagnosis.falloff is not None and diagnosis.ceiling is not None
    ctx = make_context(store, data, {}, diagnosis.falloff, good, bad, rules)
    for rule in rules:
        if rule.ceiling == "device_limits":
            candidate = evaluate(rule, ctx)
            candidate.score = min(1.0, diagnosis.ceiling.utilisation)
            diagnosis.judged = [candidate]
            diagnosis.candidates = [candidate]
    diagnosis.note = f"{diagnosis.falloff.reason}; {diagnosis.ceiling.text}"


def _ruled_out(diagnosis: ConfigDiagnosis, rules: list[Rule]) -> list[Candidate]:
    """The strongest alternatives, with why they are not the answer."""
    if not diagnosis.candidates:
        return []
    top = diagnosis.candidates[0]
    by_id = {r.id: r for r in rules}
    named = set(by_id[top.mechanism].alternatives) if top.mechanism in by_id else set()
    shown = {c.mechanism for c in diagnosis.candidates}
    pool = [c for c in diagnosis.judged if c.mechanism != top.mechanism]
    picked = [c for c in pool if c.mechanism in named]
    # then those whose frames held the most at the bad point (the tempting ones)
    tempting = sorted(
        (c for c in pool if c not in picked and c.mechanism not in shown),
        key=lambda c: -max((b for _, b in c.shares.values()), default=0.0),
    )
    picked += [c for c in tempting if max((b for _, b in c.shares.values()), default=0) >= 0.1]
    return picked[:SHOWN]


def ruled_out_text(c: Candidate, diagnosis: ConfigDiagnosis) -> str:
    """Why a mechanism is not the answer, with its numbers."""
    return "; ".join(ruled_out_reasons(c, diagnosis))


def ruled_out_reasons(c: Candidate, diagnosis: ConfigDiagnosis) -> list[str]:
    """Each reason a mechanism is not the answer: a failed requirement, its frames' trend,
    a counterfactual that weakens it, what explains more."""
    good, bad = diagnosis.good_label, diagnosis.bad_label
    top = diagnosis.candidates[0] if diagnosis.candidates else None
    parts = [c.ruled_out] if c.ruled_out else []
    for kind, (g, b) in c.shares.items():
        trend = "held" if abs(b - g) < 0.05 else "fell" if b < g else "grew"
        what = "of threads waiting" if kind == "offcpu" else "of busy CPU"
        parts.append(
            f"its frames {trend}: {format_share(g)} {what} at {good} -> {format_share(b)} at {bad}"
        )
        break
    weak = next((x for x in c.counterfactuals if x.verdict == "weakens"), None)
    if weak is not None:
        parts.append(
            f"as present where throughput held ({weak.config} at {weak.label}: "
            f"{format_share(weak.theirs)}, {format_change_pct(weak.gain_pct)})"
        )
    if top is not None and top.mechanism != c.mechanism and top.explained > c.explained:
        parts.append(
            f"threads wait for {top.short}, not for {c.short}: "
            f"{format_share(top.explained)} of the "
            f"change against {format_share(c.explained)}"
        )
    return parts


def diagnose_campaign(
    store: Store, campaign_id: int, rules: list[Rule] | None = None
) -> list[ConfigDiagnosis]:
    """One diagnosis per configuration of the campaign (against `rules`, default the rule
    base: the accuracy bench holds a rule out to check the honest unknown)."""
    data = load_campaign(store, campaign_id)
    rules = load_rules() if rules is None else rules
    falloffs = campaign_falloffs(data)
    return [diagnose_config(store, data, falloffs, c, rules) for c in data.configs()]
