"""Each mechanism scored by how much of the change from the good to the bad point it explains.

docs/diagnosis.md has the formula and a worked example:

    score = E x M x A x C

- E, the explained share: b x E_off + (1 - b) x E_on, where E_off and E_on
  are its frames' share of the change in the off-CPU and on-CPU profiles
  (`diagnose.attribution`) and b the fraction of the workload's threads
  blocked at the bad point (time-weighted: where the threads spend it).
- M, its metrics judged as changes from the good point (`diagnose.judge`):
  (1 + held) / (1 + measured); one nobody measured neither helps nor hurts.
- A, halved by each fact against it that holds.
- C, the counterfactual: another configuration that held up at the bad point
  and shows the mechanism's signal as strongly weakens it (halved); one where
  the signal is absent confirms it (shown, C = 1).

A requirement that fails rules the mechanism out (score 0), with its numbers.
Candidates are ranked by score; a device at its limit at every point
(`diagnose.ceiling`) lifts the device-bound mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.curve.falloff import FALLOFF_MIN_DROP, Falloff, falls
from fslab.base.format import format_change_pct, format_share
from fslab.diagnose.attribution import Shift
from fslab.diagnose.ceiling import Ceiling
from fslab.diagnose.evidence import Compositions, PointEvidence, load_evidence, signal
from fslab.diagnose.judge import Finding, judge_condition, judge_metric
from fslab.diagnose.mechanisms import PROFILE_KINDS, ProfileKind, Rule
from fslab.store.db import Store

MIN_SCORE = 0.10  # a candidate below this explains too little to be named
WEAKENS = 2 / 3  # held-up config's signal >= this fraction of ours: weakened
CONFIRMS = 1 / 4  # <= this fraction (and ours >= MIN_SIGNAL): confirmed
MIN_SIGNAL = 0.05
HELD_UP = 1.0 + FALLOFF_MIN_DROP


@dataclass
class Counterfactual:
    """Another configuration at the bad point: did it hold up, and does it show the signal?"""

    config: str
    label: str  # sweep point
    ours: float
    theirs: float
    gain_pct: float  # their headline over ours at that point
    verdict: str  # "confirms" | "weakens" | "neutral"
    text: str

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class Candidate:
    """One mechanism judged for one configuration."""

    mechanism: str
    title: str
    short: str
    score: float
    explained: float  # E
    explained_off: float | None
    explained_on: float | None
    shares: dict[str, tuple[float, float]]  # kind -> (good, bad) share of its frames
    metric_factor: float  # M
    against_factor: float  # A
    counterfactual_factor: float  # C
    metrics: list[Finding]
    requires: list[Finding]
    against: list[Finding]
    counterfactuals: list[Counterfactual]
    ruled_out: str | None  # why it cannot be the answer, with numbers
    explanation: str
    remedies: list[str]
    references: list[str]
    capped: float | None = None  # the device's use of its limit when that ranked it

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "title": self.title,
            "score": round(self.score, 3),
            "explained": round(self.explained, 3),
            "explained_offcpu": rounded(self.explained_off),
            "explained_oncpu": rounded(self.explained_on),
            "shares": {k: {"good": g, "bad": b} for k, (g, b) in self.shares.items()},
            "metric_factor": round(self.metric_factor, 3),
            "against_factor": self.against_factor,
            "counterfactual_factor": self.counterfactual_factor,
            "metrics": [f.to_dict() for f in self.metrics],
            "requires": [f.to_dict() for f in self.requires],
            "against": [f.to_dict() for f in self.against],
            "counterfactuals": [c.to_dict() for c in self.counterfactuals],
            "ruled_out": self.ruled_out,
            "explanation": self.explanation,
            "remedies": self.remedies,
            "references": self.references,
            "capped": rounded(self.capped),
        }


def rounded(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


@dataclass
class Context:
    """Everything one configuration's judgement reads."""

    config: str
    falloff: Falloff
    good: PointEvidence
    bad: PointEvidence
    shifts: dict[ProfileKind, Shift]
    others: list[tuple[str, PointEvidence]]  # configs that held up at the bad point
    comps: Compositions
    metric: str
    # of those, the ones that fell off between the same two points themselves, only less
    # far: the same signal there is another case of the mechanism, not evidence against it
    fell_too: frozenset[str] = frozenset()


def evaluate(rule: Rule, ctx: Context) -> Candidate:
    """Score one mechanism against the change from the good to the bad point."""
    explained: dict[ProfileKind, float] = {}
    shares: dict[str, tuple[float, float]] = {}
    for kind in PROFILE_KINDS:
        shift = ctx.shifts.get(kind)
        if shift is None or not rule.frames(kind):
            continue
        explained[kind] = shift.explained(rule.frames(kind))
        shares[kind] = shift.shares(rule.frames(kind))
    e = _combine(explained, ctx)
    metrics = [judge_metric(m, ctx.good, ctx.bad) for m in rule.metrics]
    measured = [f for f in metrics if f.holds is not None]
    m_factor = (1 + sum(1 for f in measured if f.holds)) / (1 + len(measured))
    requires = [judge_condition(c, ctx.bad) for c in rule.requires]
    against = [judge_condition(c, ctx.bad) for c in rule.against]
    a_factor = 0.5 ** sum(1 for f in against if f.holds)
    counterfactuals = _counterfactuals(rule, ctx)
    c_factor = 0.5 if any(c.verdict == "weakens" for c in counterfactuals) else 1.0
    failed = [f for f in requires if f.holds is False]
    ruled_out = failed[0].text if failed else None
    score = 0.0 if failed else e * m_factor * a_factor * c_factor
    return Candidate(
        mechanism=rule.id,
        title=rule.title,
        short=rule.short,
        score=score,
        explained=e,
        explained_off=explained.get("offcpu"),
        explained_on=explained.get("oncpu"),
        shares=shares,
        metric_factor=m_factor,
        against_factor=a_factor,
        counterfactual_factor=c_factor,
        metrics=metrics,
        requires=requires,
        against=against,
        counterfactuals=counterfactuals,
        ruled_out=ruled_out,
        explanation=rule.explanation,
        remedies=list(rule.remedies),
        references=list(rule.references),
    )


def _combine(explained: Mapping[ProfileKind, float], ctx: Context) -> float:
    """b x E_off + (1 - b) x E_on over the profile kinds measured at both points.

    The weights are the same for every mechanism, so scores compare: a
    mechanism with no frames of a kind explains none of that kind's change.
    With only one kind measured, it carries the whole weight.
    """
    kinds = set(ctx.shifts)
    weights: dict[ProfileKind, float]
    if kinds == {"offcpu", "oncpu"}:
        b = ctx.bad.blocked_fraction
        weights = {"offcpu": b if b is not None else 0.5}
        weights["oncpu"] = 1 - weights["offcpu"]
    else:
        weights = {kind: 1.0 for kind in kinds}
    return sum(w * explained.get(kind, 0.0) for kind, w in weights.items())


def _counterfactuals(rule: Rule, ctx: Context) -> list[Counterfactual]:
    found = signal(ctx.bad, rule, ctx.comps)
    if found is None:
        return []
    ours, of_what = found
    out = []
    for config, other in ctx.others:
        their_signal = signal(other, rule, ctx.comps)
        if their_signal is None or other.headline is None or not ctx.bad.headline:
            continue
        theirs = their_signal[0]
        gain = 100.0 * (other.headline / ctx.bad.headline - 1.0)
        if ours >= MIN_SIGNAL and theirs <= CONFIRMS * ours:
            verdict = "confirms"
        elif theirs >= WEAKENS * ours and ours >= MIN_SIGNAL and config not in ctx.fell_too:
            verdict = "weakens"
        else:
            verdict = "neutral"
        fmt = format_value
        text = (
            f"{config} at {other.label}: {rule.short} {format_share(theirs)} {of_what} "
            f"({format_share(ours)} here), {format_change_pct(gain)} {_metric_word(ctx.metric)} "
            f"({fmt(ctx.metric, other.headline)} vs {fmt(ctx.metric, ctx.bad.headline)})"
        )
        out.append(Counterfactual(config, other.label, ours, theirs, gain, verdict, text))
    return out


def _metric_word(metric: str) -> str:
    return "IOPS" if metric.endswith("iops") else "throughput"


def rank_candidates(ctx: Context, rules: list[Rule], ceiling: Ceiling | None) -> list[Candidate]:
    """Every rule judged and ranked; a device at its limit at every point lifts the
    device-bound mechanism to its utilisation."""
    judged = [evaluate(rule, ctx) for rule in rules]
    if ceiling is not None:
        ids = {r.id for r in rules if r.ceiling == "device_limits"}
        for c in judged:
            if c.mechanism in ids and ceiling.utilisation > c.score:
                c.score, c.capped = min(1.0, ceiling.utilisation), ceiling.utilisation
    judged.sort(key=lambda c: (-c.score, -c.explained, c.mechanism))
    return judged


def make_context(
    store: Store,
    data: CampaignData,
    falloffs: Mapping[str, Falloff],
    found: Falloff,
    good: PointEvidence,
    bad: PointEvidence,
    rules: list[Rule],
) -> Context:
    """The judging context: both points' compositions and shifts, and the configurations
    that held up at the bad point (for the counterfactuals)."""
    comps = Compositions()
    for evidence in (good, bad):
        comps.add(evidence, rules)
    shifts = {}
    for kind in PROFILE_KINDS:
        g, b = comps.of(good, kind), comps.of(bad, kind)
        if g is not None and b is not None:
            shifts[kind] = Shift(kind, g, b)
    others = []
    fell_too: set[str] = set()
    for config, other in falloffs.items():
        if config == found.config:
            continue
        at = {p.key: p for p in other.points}
        point = at.get(found.worst.key)
        if point is None or point.median < HELD_UP * found.worst.median:
            continue
        evidence = load_evidence(store, data, config, point.key, point.median)
        comps.add(evidence, rules)
        others.append((config, evidence))
        # another filesystem that fell off too is faster or slower for reasons of its
        # own: its speed says nothing of this mechanism. The same filesystem configured
        # otherwise, better at the bad point with as much of the signal, does.
        start = at.get(found.best.key)
        other_fs = data.fs_type(config) != data.fs_type(found.config)
        if start is not None and falls(start.median, point.median) and other_fs:
            fell_too.add(config)
    return Context(
        found.config, found, good, bad, shifts, others, comps, found.metric, frozenset(fell_too)
    )
