"""Which kernel mechanism is to blame: measured evidence against a rule base kept as data.

Each mechanism is one TOML file in `analyze/rules/` (see docs/diagnosis.md):
the evidence it needs, an explanation, what to try next, references. For each
configuration the rules are evaluated at its worst point (lowest headline),
with its best point as the baseline, on both profiles (on-CPU: where CPUs
spin; off-CPU: where threads wait) and on collector metrics and point facts.
A candidate's score is the weight of its evidence that holds over the weight
of all its evidence; evidence against a mechanism is shown beside it. When no
rule matches, the largest change in the off-CPU (else on-CPU) profile between
best and worst point is reported instead, and the report says so.
"""

from __future__ import annotations

import fnmatch
import operator
import textwrap
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from fslab.analyze.dataset import CampaignData, key_label, load_campaign
from fslab.analyze.falloff import config_falloff
from fslab.analyze.profile import Profile, diff
from fslab.store.db import PointRow, Store
from fslab.units import format_metric_value

MATCH_SCORE = 0.5  # a candidate is reported when at least half its evidence weight holds
PROFILES = {"oncpu": "profile.oncpu.folded", "offcpu": "profile.offcpu.folded"}
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


# ------------------------------------------------------------------ rules


@dataclass(frozen=True)
class Condition:
    """One piece of evidence a rule looks for (see docs/diagnosis.md for the kinds)."""

    kind: str  # profile | metric | change | fact | workqueue | cliff
    what: str
    weight: float = 1.0
    profile: str = "offcpu"
    frame: str = ""
    under: str = ""
    metric: str = ""
    op: str = ">="
    value: float = 0.0
    factor: float = 2.0
    fact: str = ""
    equals: Any = None
    contains: str = ""
    max_peak_concurrency: float = 1.0
    min_utilisation: float = 0.5
    min_queue_delay_ns: float = 1e6


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    explanation: str
    remedies: tuple[str, ...]
    references: tuple[str, ...]
    fs_types: tuple[str, ...]
    evidence: tuple[Condition, ...]
    against: tuple[Condition, ...]


def _conditions(items: list[dict[str, Any]], rule_id: str) -> tuple[Condition, ...]:
    try:
        return tuple(Condition(**item) for item in items)
    except TypeError as exc:
        raise ValueError(f"rule {rule_id}: bad evidence entry: {exc}") from exc


def parse_rule(data: Mapping[str, Any]) -> Rule:
    rule_id = str(data["id"])
    return Rule(
        id=rule_id,
        title=str(data["title"]),
        explanation=" ".join(str(data["explanation"]).split()),
        remedies=tuple(data.get("remedies", ())),
        references=tuple(data.get("references", ())),
        fs_types=tuple(data.get("fs_types", ())),
        evidence=_conditions(data.get("evidence", []), rule_id),
        against=_conditions(data.get("against", []), rule_id),
    )


def load_rules() -> list[Rule]:
    folder = resources.files("fslab.analyze").joinpath("rules")
    return [
        parse_rule(tomllib.loads(entry.read_text()))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    ]


# ------------------------------------------------------------------ evidence


@dataclass
class PointEvidence:
    """What one point measured, in the form the rules read."""

    point: PointRow | None
    metrics: Mapping[str, float]
    facts: Mapping[str, Any]
    profiles: Mapping[str, Profile | None]

    def label(self) -> str:
        return key_label(tuple(self.point.sweep.items())) if self.point else "(none)"


def frame_share(profile: Profile | None, frame: str, under: str = "") -> float | None:
    """Share of samples whose stack holds `frame` (below `under`, when given)."""
    if profile is None or profile.total == 0:
        return None
    hits = 0
    for stack, count in profile.stacks.items():
        if frame not in stack:
            continue
        if under:
            index = stack.index(frame)
            if under not in stack[:index]:
                continue
        hits += count
    return hits / profile.total


@dataclass
class Finding:
    """A condition checked against the worst and best point: holds or not, with numbers."""

    text: str
    holds: bool
    weight: float
    applicable: bool = True  # False: no baseline to judge a change against


def _no_baseline(worst: PointEvidence, best: PointEvidence) -> bool:
    """One point only (worst is best): changes and cliffs cannot be judged."""
    return worst.point is not None and best.point is not None and worst.point.id == best.point.id


def _not_applicable(c: Condition) -> Finding:
    return Finding(f"{c.what}: not judged (a single point: no baseline)", False, c.weight, False)


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if unit == "share":
        return f"{value:.0%}"
    if unit == "ns" and abs(value) >= 1e9:
        return f"{value / 1e9:.2f}s"
    if unit == "ns" and abs(value) >= 1e6:
        return f"{value / 1e6:.1f}ms"
    return f"{value:.3g}"


def _metric_unit(name: str) -> str:
    return "ns" if "_ns" in name else ""


def _check_profile(c: Condition, worst: PointEvidence, best: PointEvidence) -> Finding:
    w = frame_share(worst.profiles.get(c.profile), c.frame, c.under)
    b = frame_share(best.profiles.get(c.profile), c.frame, c.under)
    where = f"{c.frame}" + (f" under {c.under}" if c.under else "")
    holds = w is not None and _OPS[c.op](w, c.value)
    text = (
        f"{c.what}: {c.profile} samples in {where} {_fmt(w, 'share')} at "
        f"{worst.label()} ({_fmt(b, 'share')} at {best.label()}; threshold {c.op} "
        f"{c.value:.0%})"
    )
    if w is None:
        text = f"{c.what}: no {c.profile} profile at {worst.label()}"
    return Finding(text, holds, c.weight)


def _matching_metrics(metrics: Mapping[str, float], pattern: str) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if fnmatch.fnmatchcase(k, pattern)}


def _check_metric(c: Condition, worst: PointEvidence, best: PointEvidence) -> Finding:
    found = _matching_metrics(worst.metrics, c.metric)
    if not found:
        return Finding(f"{c.what}: {c.metric} not measured at {worst.label()}", False, c.weight)
    name, value = max(found.items(), key=lambda kv: kv[1])
    unit = _metric_unit(name)
    holds = _OPS[c.op](value, c.value)
    base = best.metrics.get(name)
    text = (
        f"{c.what}: {name} = {_fmt(value, unit)} at {worst.label()} "
        f"({_fmt(base, unit)} at {best.label()}; threshold {c.op} {_fmt(c.value, unit)})"
    )
    return Finding(text, holds, c.weight)


def _check_change(c: Condition, worst: PointEvidence, best: PointEvidence) -> Finding:
    if _no_baseline(worst, best):
        return _not_applicable(c)
    w, b = worst.metrics.get(c.metric), best.metrics.get(c.metric)
    family = c.metric.split(".")[0] + "."
    if b is None and any(k.startswith(family) for k in best.metrics):
        b = 0.0  # the collector ran at the best point and never saw it
    unit = _metric_unit(c.metric)
    if w is None or b is None:
        return Finding(f"{c.what}: {c.metric} not measured at both points", False, c.weight)
    grew = w >= c.factor * b if b > 0 else w > 0
    holds = grew if c.op in (">", ">=", "grew") else (w * c.factor <= b)
    direction = "grew" if c.op in (">", ">=", "grew") else "shrank"
    text = (
        f"{c.what}: {c.metric} {_fmt(b, unit)} at {best.label()} -> {_fmt(w, unit)} at "
        f"{worst.label()} (needs: {direction} {c.factor:g}x)"
    )
    return Finding(text, holds, c.weight)


def _check_fact(c: Condition, worst: PointEvidence, _best: PointEvidence) -> Finding:
    value = worst.facts.get(c.fact)
    if c.contains:
        holds = c.contains in str(value or "")
        text = f"{c.what}: {c.fact} = {value!r}"
    else:
        holds = value == c.equals
        text = f"{c.what}: {c.fact} = {value!r} at {worst.label()}"
        extra = [k for k in ("free_bytes_start", "ext4_watermark_bytes") if k in worst.facts]
        if c.fact == "below_ext4_watermark" and extra:
            text += " (" + ", ".join(f"{k} {worst.facts[k]:.0f}" for k in extra) + ")"
    return Finding(text, holds, c.weight)


def _check_workqueue(c: Condition, worst: PointEvidence, _best: PointEvidence) -> Finding:
    """Some workqueue runs one item at a time, busy, with items waiting behind it."""
    names = {k.split(".")[1] for k in worst.metrics if k.startswith("wq.") and k.count(".") >= 2}
    best_name, best_text = None, ""
    for name in sorted(names):
        peak = worst.metrics.get(f"wq.{name}.peak_concurrency")
        util = worst.metrics.get(f"wq.{name}.utilisation")
        delay = worst.metrics.get(f"wq.{name}.queue_delay_ns_p99")
        if peak is None or util is None or delay is None:
            continue
        text = (
            f"{c.what}: {name} peak concurrency {peak:g}, utilisation {util:.2f}, "
            f"queue->activate p99 {_fmt(delay, 'ns')} at {worst.label()}"
        )
        if (
            peak <= c.max_peak_concurrency
            and util >= c.min_utilisation
            and delay >= c.min_queue_delay_ns
        ):
            return Finding(text, True, c.weight)
        if best_name is None or util > worst.metrics.get(f"wq.{best_name}.utilisation", 0):
            best_name, best_text = name, text
    return Finding(
        best_text or f"{c.what}: no workqueue metrics at {worst.label()}", False, c.weight
    )


def _check_cliff(c: Condition, worst: PointEvidence, best: PointEvidence) -> Finding:
    if _no_baseline(worst, best):
        return _not_applicable(c)
    bracket = worst.facts.get("cliff")
    if bracket:
        return Finding(f"{c.what}: throughput falls off a cliff {bracket}", True, c.weight)
    return Finding(f"{c.what}: no cliff in the throughput curve", False, c.weight)


_CHECKS = {
    "profile": _check_profile,
    "metric": _check_metric,
    "change": _check_change,
    "fact": _check_fact,
    "workqueue": _check_workqueue,
    "cliff": _check_cliff,
}


# ------------------------------------------------------------------ verdicts


@dataclass
class Candidate:
    mechanism: str
    title: str
    score: float
    weight_held: float  # breaks ties: more (and stronger) evidence ranks first
    evidence_for: list[str]
    evidence_against: list[str]
    explanation: str
    remedies: list[str]
    references: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(rule: Rule, worst: PointEvidence, best: PointEvidence) -> Candidate:
    findings = [_CHECKS[c.kind](c, worst, best) for c in rule.evidence]
    counter = [_CHECKS[c.kind](c, worst, best) for c in rule.against]
    judged = [f for f in findings if f.applicable]
    total = sum(f.weight for f in judged) or 1.0
    held = sum(f.weight for f in judged if f.holds)
    against_weight = sum(f.weight for f in counter if f.holds)
    score = max(0.0, held / total - 0.5 * against_weight / total)
    return Candidate(
        mechanism=rule.id,
        title=rule.title,
        score=round(score, 3),
        weight_held=held,
        evidence_for=[f.text for f in findings if f.holds],
        evidence_against=[f"not seen: {f.text}" for f in judged if not f.holds]
        + [f.text for f in counter if f.holds],
        explanation=rule.explanation,
        remedies=list(rule.remedies),
        references=list(rule.references),
    )


@dataclass
class ConfigDiagnosis:
    config: str
    fs_type: str
    worst_point: dict[str, Any]
    best_point: dict[str, Any]
    candidates: list[Candidate] = field(default_factory=list)
    rejected: list[Candidate] = field(default_factory=list)
    fallback: list[str] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "fs_type": self.fs_type,
            "worst_point": self.worst_point,
            "best_point": self.best_point,
            "candidates": [c.to_dict() for c in self.candidates],
            "rejected": [{"mechanism": c.mechanism, "score": c.score} for c in self.rejected],
            "fallback": self.fallback,
            "note": self.note,
        }

    def describe(self, width: int = 80) -> list[str]:
        """Plain-text lines, each at most `width` columns."""
        head = f"{self.config} ({self.fs_type})" + (f": {self.note}" if self.note else "")
        lines = textwrap.wrap(head, width=width, subsequent_indent="  ")
        if self.worst_point:
            for name, point in (("worst", self.worst_point), ("best", self.best_point)):
                text = f"{name} point {point['label']}: {point['figure']}"
                lines += textwrap.wrap(
                    text, width=width, initial_indent="  ", subsequent_indent="    "
                )
        for rank, c in enumerate(self.candidates, 1):
            title = f"{rank}. {c.title} [{c.mechanism}] score {c.score:.2f}"
            lines += textwrap.wrap(
                title, width=width, initial_indent="  ", subsequent_indent="     "
            )
            lines += _wrap("evidence: ", c.evidence_for, width)
            lines += _wrap("against:  ", c.evidence_against, width)
            lines += _wrap("try:      ", c.remedies, width)
        if not self.candidates and self.fallback:
            lines.append("  no mechanism in the rule base matched; largest profile changes")
            lines.append("  between best and worst point:")
            lines += _wrap("", self.fallback, width)
        return lines


def _wrap(prefix: str, items: list[str], width: int) -> list[str]:
    """Each item wrapped under a hanging prefix, every line within `width`."""
    lines: list[str] = []
    for item in items:
        parts = textwrap.wrap(item, width=width - 5 - len(prefix)) or [""]
        lines.append(f"     {prefix}{parts[0]}")
        lines += [" " * (5 + len(prefix)) + part for part in parts[1:]]
    return lines


# ------------------------------------------------------------------ campaign


def _profile(store: Store, point: PointRow, name: str) -> Profile | None:
    text = store.artifact(point.id, PROFILES[name])
    return Profile.from_folded(text) if text else None


def point_evidence(
    store: Store, data: CampaignData, point: PointRow, cliff: str | None
) -> PointEvidence:
    facts: dict[str, Any] = dict(point.facts)
    facts["fs_type"] = point.fs_type
    facts["free_bytes_start"] = data.metrics.get(point.id, {}).get("fs.free_bytes_start")
    if cliff:
        facts["cliff"] = cliff
    return PointEvidence(
        point=point,
        metrics=data.metrics.get(point.id, {}),
        facts=facts,
        profiles={name: _profile(store, point, name) for name in PROFILES},
    )


def fallback_changes(worst: PointEvidence, best: PointEvidence, limit: int = 5) -> list[str]:
    for name in ("offcpu", "oncpu"):
        a, b = best.profiles.get(name), worst.profiles.get(name)
        if a is None or b is None:
            continue
        rows = diff(a, b, limit=limit, kinds=("chain",))
        return [
            f"{name} {row.share_a:.0%} -> {row.share_b:.0%} ({row.delta:+.0%}): "
            f"{_chain_tail(row.name)}"
            for row in rows
        ]
    return []


def _chain_tail(chain: str, frames: int = 4) -> str:
    """The comm and the last few frames of a folded chain: where the time went."""
    parts = chain.split(";")
    tail = parts[-frames:] if len(parts) > frames + 1 else parts[1:]
    return f"{parts[0]}: " + (" <- ".join(reversed(tail)))


def _point_summary(row: PointRow, evidence: PointEvidence, data: CampaignData) -> dict[str, Any]:
    assert data.headline is not None
    value = data.metrics[row.id][data.headline]
    return {
        "seq": row.seq,
        "label": evidence.label(),
        "headline": value,
        "metric": data.headline,
        "figure": f"{format_metric_value(data.headline, value)} {data.headline}",
    }


def diagnose_config(
    store: Store, data: CampaignData, config: str, rules: list[Rule]
) -> ConfigDiagnosis:
    fs_type = data.fs_type(config)
    found = config_falloff(data, config)
    worst_row = data.evidence_row(config, found.worst.key) if found else None
    best_row = data.evidence_row(config, found.best.key) if found else None
    if found is None or worst_row is None or best_row is None:
        return ConfigDiagnosis(config, fs_type, {}, {}, note="no successful point to diagnose")
    cliff = found.cliff.bracket(found.axis or "N") if found.cliff else None
    worst = point_evidence(store, data, worst_row, cliff)
    best = point_evidence(store, data, best_row, None)
    assert data.headline is not None
    diagnosis = ConfigDiagnosis(
        config,
        fs_type,
        worst_point=_point_summary(worst_row, worst, data),
        best_point=_point_summary(best_row, best, data),
    )
    for rule in rules:
        if rule.fs_types and fs_type not in rule.fs_types:
            continue
        candidate = evaluate(rule, worst, best)
        (diagnosis.candidates if candidate.score >= MATCH_SCORE else diagnosis.rejected).append(
            candidate
        )
    diagnosis.candidates.sort(key=lambda c: (-c.score, -c.weight_held))
    diagnosis.rejected.sort(key=lambda c: (-c.score, -c.weight_held))
    if worst_row.id == best_row.id:
        diagnosis.note = "a single point: no best point to compare with"
    if not diagnosis.candidates:
        diagnosis.fallback = fallback_changes(worst, best)
    return diagnosis


def diagnose_campaign(store: Store, campaign_id: int) -> list[ConfigDiagnosis]:
    """One diagnosis per configuration of the campaign, candidates ranked by score."""
    data = load_campaign(store, campaign_id)
    rules = load_rules()
    return [diagnose_config(store, data, config, rules) for config in data.configs()]
