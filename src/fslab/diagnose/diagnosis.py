"""Which kernel mechanism explains the falloff: differential, counterfactual, rivals ruled out.

For each configuration, `analyze.falloff` names the good point (best) and
the bad point (worst); without a falloff there is nothing to explain. Each
mechanism of the rule base (`analyze.mechanisms`) is then scored by how much
of the change from the good to the bad point it accounts for
(docs/diagnosis.md has the formula and a worked example):

    score = E x M x A x C

- E, the explained share: b x E_off + (1 - b) x E_on, where E_off and E_on
  are its frames' share of the change in the off-CPU and on-CPU profiles
  (`analyze.attribution`) and b the fraction of the workload's threads
  blocked at the bad point (time-weighted: where the threads spend it).
- M, its metrics judged as changes from the good point:
  (1 + held) / (1 + measured); a metric as high at the good point explains
  nothing, and one nobody measured neither helps nor hurts.
- A = 0.5 per fact against it that holds (dioread_lock against credits).
- C, the counterfactual: another configuration that held up at the bad
  point (at least 15% more throughput there) and shows the mechanism's
  signal as strongly (>= 2/3 of it) weakens it (C = 0.5); one where the
  signal is absent (<= 1/4 of it) confirms it (shown, C = 1).

A requirement that fails rules the mechanism out (score 0), with its
numbers: a single-threaded worker that is idle most of the time serialises
nothing. Candidates are ranked by score; the margin between the first two is
shown. A mechanism with a `ceiling` may also cap every point at once (a
device at its configured limit), which no change between points can show:
that is checked at every point and reported even when the falloff is small.

Evidence for a sweep point is read only from `CampaignData.evidence_rows`: with
several evidence runs at a point their profiles are pooled (samples added) and
their metrics averaged, and the ranking is also made from each evidence run at
the bad point alone, to say how stable the first mechanism and its margin are.
"""

from __future__ import annotations

import fnmatch
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.curve.falloff import FALLOFF_MIN_DROP, Falloff, campaign_falloffs
from fslab.base.errors import UsageError
from fslab.base.vocab import PointKey, format_value, point_label
from fslab.diagnose.attribution import Shift, class_label, classify
from fslab.diagnose.mechanisms import (
    PROFILE_KINDS,
    Condition,
    Frame,
    MetricSignal,
    ProfileKind,
    Rule,
    load_rules,
)
from fslab.stacks.profile import Profile
from fslab.store.db import PointRow, Store

RUNNING = "running"  # the off-CPU composition's class for threads on a CPU or runnable
MIN_SCORE = 0.10  # a candidate below this explains too little to be named
SHOWN = 3  # candidates and ruled-out hypotheses listed
WEAKENS = 2 / 3  # held-up config's signal >= this fraction of ours: weakened
CONFIRMS = 1 / 4  # <= this fraction (and ours >= MIN_SIGNAL): confirmed
MIN_SIGNAL = 0.05
HELD_UP = 1.0 + FALLOFF_MIN_DROP
CEILING_UTILISATION = 0.90  # a device at >= 90% of its configured limit is at it
PROFILE_ARTIFACTS: dict[ProfileKind, str] = {
    "oncpu": "profile.oncpu.folded",
    "offcpu": "profile.offcpu.folded",
}


# ------------------------------------------------------------------ evidence


@dataclass
class PointEvidence:
    """What one point's evidence run measured, in the form the scoring reads."""

    key: PointKey
    row: PointRow | None  # the last of `rows`: its facts are the point's
    headline: float | None
    metrics: Mapping[str, float]
    facts: Mapping[str, Any]  # by stored name, as the rules' fact conditions name them
    profiles: dict[ProfileKind, Profile | None]
    rows: tuple[PointRow, ...] = ()  # the evidence runs pooled here

    @property
    def ident(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.rows)

    @property
    def label(self) -> str:
        return point_label(self.key)

    @property
    def blocked_fraction(self) -> float | None:
        """Fraction of the workload's threads blocked (off-CPU sampler), None if not measured."""
        total = self.metrics.get("offcpu.threads_mean")
        blocked = self.metrics.get("offcpu.blocked_threads_mean")
        if not total or blocked is None:
            return None
        return min(1.0, blocked / total)


def load_evidence(
    store: Store,
    data: CampaignData,
    config: str,
    key: PointKey,
    headline: float | None,
    rows: list[PointRow] | None = None,
) -> PointEvidence:
    """A sweep point's evidence: its evidence runs (or the `rows` given) pooled."""
    rows = data.evidence_rows(config, key) if rows is None else rows
    if not rows:
        return PointEvidence(key, None, headline, {}, {}, {"oncpu": None, "offcpu": None})
    profiles: dict[ProfileKind, Profile | None] = {}
    for kind, name in PROFILE_ARTIFACTS.items():
        counts: dict[str, int] = {}
        for row in rows:
            text = store.artifact(row.id, name)
            for stack, n in (Profile.from_folded(text).to_counts() if text else {}).items():
                counts[stack] = counts.get(stack, 0) + n
        profile = Profile.from_counts(counts) if counts else None
        if profile is not None and kind == "oncpu":
            profile = profile.busy()
        profiles[kind] = profile if profile is not None and profile.total else None
    last = rows[-1]
    facts = {**last.facts.stored(), "fs_type": last.fs_type}  # rules name facts as stored
    metrics = _mean_metrics([data.metrics.get(row.id, {}) for row in rows])
    return PointEvidence(key, last, headline, metrics, facts, profiles, tuple(rows))


def _mean_metrics(sets: list[Mapping[str, float]]) -> dict[str, float]:
    """Each metric's mean over the evidence runs that measured it."""
    names = dict.fromkeys(name for m in sets for name in m)
    return {
        name: sum(values) / len(values)
        for name in names
        if (values := [m[name] for m in sets if name in m])
    }


def _all_frames(rules: list[Rule], kind: ProfileKind) -> list[Frame]:
    return list(dict.fromkeys(f for rule in rules for f in rule.frames(kind)))


@dataclass
class Compositions:
    """Each point's profiles cut into the rule base's classes (analyze.attribution)."""

    by_row: dict[tuple[int, ...], dict[ProfileKind, dict[str, float] | None]] = field(
        default_factory=dict
    )

    def add(self, evidence: PointEvidence, rules: list[Rule]) -> None:
        found: dict[ProfileKind, dict[str, float] | None] = {}
        for kind, profile in evidence.profiles.items():
            found[kind] = classify(profile, _all_frames(rules, kind)) if profile else None
        blocked = evidence.blocked_fraction
        off = found.get("offcpu")
        if off is not None and blocked is not None:
            # shares of all the workload's threads: a thread that went from running to
            # waiting in a mechanism's frames is part of the change too
            found["offcpu"] = {**{k: v * blocked for k, v in off.items()}, RUNNING: 1 - blocked}
        if evidence.rows:
            self.by_row[evidence.ident] = found

    def of(self, evidence: PointEvidence, kind: ProfileKind) -> dict[str, float] | None:
        if not evidence.rows:
            return None
        return self.by_row.get(evidence.ident, {}).get(kind)


def signal(evidence: PointEvidence, rule: Rule, comps: Compositions) -> tuple[float, str] | None:
    """The mechanism's share at one point, and of what: off-CPU first (where threads wait)."""
    for kind in PROFILE_KINDS:
        classes = comps.of(evidence, kind)
        if classes is not None and rule.frames(kind):
            keys = {f.key for f in rule.frames(kind)}
            share = sum(v for k, v in classes.items() if k in keys)
            return share, "of threads" if kind == "offcpu" else "of busy CPU"
    return None


# ------------------------------------------------------------------ findings


@dataclass
class Finding:
    """One judged piece of evidence, with its numbers in words."""

    text: str
    holds: bool | None  # None: not measured, so not judged
    good: float | None = None
    bad: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "holds": self.holds, "good": self.good, "bad": self.bad}


def _fmt(value: float | None, name: str = "") -> str:
    if value is None:
        return "n/a"
    if "_ns" in name:
        return format_value("x_ns", value)
    if "utilisation" in name or name == "share":
        return f"{value:.0%}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def _largest(metrics: Mapping[str, float], pattern: str) -> tuple[str, float] | None:
    found = [(k, v) for k, v in metrics.items() if fnmatch.fnmatchcase(k, pattern)]
    return max(found, key=lambda kv: kv[1]) if found else None


def judge_metric(signal_def: MetricSignal, good: PointEvidence, bad: PointEvidence) -> Finding:
    """A metric judged as a change from the good point to the bad one."""
    at_bad = _largest(bad.metrics, signal_def.metric)
    if at_bad is None:
        return Finding(f"{signal_def.what}: {signal_def.metric} not measured", None)
    name, b = at_bad
    g = good.metrics.get(name)
    family = name.split(".")[0] + "."
    if g is None and any(k.startswith(family) for k in good.metrics):
        g = 0.0  # its collector ran at the good point and never saw it
    if g is None:
        return Finding(f"{signal_def.what}: {name} not measured at {good.label}", None)
    floor = signal_def.floor
    if signal_def.grows:
        holds = b > floor and b >= signal_def.factor * g
        need = f"needs x{signal_def.factor:g}"
    else:
        holds = b * signal_def.factor <= g and g > floor
        need = f"needs /{signal_def.factor:g}"
    text = f"{signal_def.what}: {_fmt(g, name)} -> {_fmt(b, name)} ({name}; {need})"
    return Finding(text, holds, g, b)


def judge_condition(c: Condition, bad: PointEvidence) -> Finding:
    """A requirement or counter-argument at the bad point."""
    if c.kind == "fact":
        value = bad.facts.get(c.fact)
        if value is None:
            return Finding(f"{c.what}: {c.fact} not recorded", None)
        holds = c.contains in str(value) if c.contains else value == c.equals
        return Finding(f"{c.what}: {c.fact} = {value!r}", holds)
    if c.kind == "metric":
        found = _largest(bad.metrics, c.metric)
        if found is None:
            return Finding(f"{c.what}: {c.metric} not measured", None)
        name, value = found
        holds = value >= c.value if c.op == ">=" else value <= c.value
        return Finding(
            f"{c.what}: {name} = {_fmt(value, name)} ({c.op} {c.value:g})", holds, None, value
        )
    return _judge_workqueue(c, bad)


def _judge_workqueue(c: Condition, bad: PointEvidence) -> Finding:
    """A serialising worker: one item at a time, busy, with items waiting behind it."""
    names = sorted(
        {k.split(".")[1] for k in bad.metrics if k.startswith("wq.") and k.count(".") >= 2}
    )
    if c.workqueue:
        names = [n for n in names if n == c.workqueue]
    rows = []
    for name in names:
        m = bad.metrics
        peak = m.get(f"wq.{name}.peak_concurrency")
        util = m.get(f"wq.{name}.utilisation")
        delay = m.get(f"wq.{name}.queue_delay_ns_p99")
        if peak is None or util is None or delay is None:
            continue
        rows.append((name, peak, util, delay))
    if not rows:
        return Finding(f"{c.what}: no workqueue measured at {bad.label}", None)
    serial = [r for r in rows if r[1] <= c.max_peak_concurrency and r[3] >= c.min_queue_delay_ns]
    if not serial:
        name, peak, util, delay = max(rows, key=lambda r: r[3])
        text = (
            f"no workqueue ran one item at a time with items waiting: the longest queue, "
            f"{name}, reached {peak:g} in flight, queue p99 {_fmt(delay, 'x_ns')}"
        )
        return Finding(text, False, None, util)
    name, peak, util, delay = max(serial, key=lambda r: r[3])
    holds = util >= c.min_utilisation
    at_once = "one item" if peak <= 1 else f"at most {peak:g} items"
    text = (
        f"{name} ran {at_once} at a time with queue p99 {_fmt(delay, 'x_ns')}, "
        f"{'and' if holds else 'but'} was busy {util:.0%} of the time"
    )
    if not holds:
        text += f" (a serialising worker is busy >= {c.min_utilisation:.0%})"
    return Finding(text, holds, None, util)


# ------------------------------------------------------------------ candidates


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

    def evidence_lines(self, good: str, bad: str) -> list[str]:
        lines = []
        for kind, (g, b) in self.shares.items():
            what = "threads waiting" if kind == "offcpu" else "busy CPU"
            lines.append(f"{what} in its frames: {g:.0%} at {good} -> {b:.0%} at {bad}")
        lines += [f.text for f in self.metrics if f.holds is not None]
        lines += [f.text for f in self.requires if f.holds is not None]
        lines += [f"against: {f.text}" for f in self.against if f.holds]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "title": self.title,
            "score": round(self.score, 3),
            "explained": round(self.explained, 3),
            "explained_offcpu": _round(self.explained_off),
            "explained_oncpu": _round(self.explained_on),
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
        }


def _round(value: float | None) -> float | None:
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
        elif theirs >= WEAKENS * ours and ours >= MIN_SIGNAL:
            verdict = "weakens"
        else:
            verdict = "neutral"
        fmt = format_value
        text = (
            f"{config} at {other.label}: {rule.short} {theirs:.0%} {of_what} "
            f"({ours:.0%} here), {gain:+.0f}% {_metric_word(ctx.metric)} "
            f"({fmt(ctx.metric, other.headline)} vs {fmt(ctx.metric, ctx.bad.headline)})"
        )
        out.append(Counterfactual(config, other.label, ours, theirs, gain, verdict, text))
    return out


def _metric_word(metric: str) -> str:
    return "IOPS" if metric.endswith("iops") else "throughput"


# ------------------------------------------------------------------ ceiling


@dataclass
class Ceiling:
    """A configured device limit reached at every point: it caps them all."""

    text: str
    utilisation: float  # lowest measured/limit over the points

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


_LIMIT_RATE = {  # limit -> (device counter, scale to the limit's unit)
    "write_iops": ("blk.write_ios", 1.0),
    "read_iops": ("blk.read_ios", 1.0),
    "write_bps": ("blk.write_sectors", 512.0),
    "read_bps": ("blk.read_sectors", 512.0),
}


def device_rate(evidence: PointEvidence, limit: str) -> float | None:
    counter, scale = _LIMIT_RATE[limit]
    count, elapsed = evidence.metrics.get(counter), evidence.metrics.get("sys.elapsed_s")
    if count is None or not elapsed:
        return None
    return count * scale / elapsed


def device_ceiling(points: list[PointEvidence]) -> Ceiling | None:
    """The limit every point ran at (>= 90% of it), with the numbers; None if any did not."""
    found: Ceiling | None = None
    row = points[0].row if points else None
    limits = row.facts.device_limits if row is not None else None
    if limits is None:
        return None
    for limit in _LIMIT_RATE:
        value = getattr(limits, limit)
        if not value:
            continue
        rates = [device_rate(p, limit) for p in points]
        if any(r is None for r in rates):
            continue
        ratios = [r / value for r in rates if r is not None]
        if min(ratios) < CEILING_UTILISATION:
            continue
        unit = "IOPS" if limit.endswith("iops") else "B/s"
        direction = limit.split("_")[0] + "s"
        shown = ", ".join(
            f"{_rate(r, unit)} at {p.label}" for p, r in zip(points, rates, strict=True) if r
        )
        text = (
            f"the device limits every point: {direction} {shown}, against its limit of "
            f"{_rate(float(value), unit)} ({min(ratios):.0%} of it or more)"
        )
        if found is None or min(ratios) > found.utilisation:
            found = Ceiling(text, min(ratios))
    return found


def _rate(value: float, unit: str) -> str:
    if unit == "IOPS":
        return f"{value:.0f} IOPS"
    return f"{value / 2**20:.1f} MiB/s"


# ------------------------------------------------------------------ one configuration


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
    config: str
    fs_type: str
    falloff: Falloff | None
    candidates: list[Candidate] = field(default_factory=list)  # ranked, score >= MIN_SCORE
    ruled_out: list[Candidate] = field(default_factory=list)
    judged: list[Candidate] = field(default_factory=list)  # every rule, ranked
    ceiling: Ceiling | None = None
    fallback: list[str] = field(default_factory=list)
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
            "margin": _round(self.margin),
            "candidates": [c.to_dict() for c in self.candidates],
            "ruled_out": [
                {"mechanism": c.mechanism, "title": c.title, "why": ruled_out_text(c, self)}
                for c in self.ruled_out
            ],
            "scores": {c.mechanism: round(c.score, 3) for c in self.judged},
            "ceiling": self.ceiling.to_dict() if self.ceiling else None,
            "fallback": self.fallback,
            "note": self.note,
            "bad_evidence_runs": self.bad_evidence_runs,
            "stability": self.stability.to_dict() if self.stability else None,
        }

    def describe(self, width: int = 80) -> list[str]:
        """Plain-text lines, each at most `width` columns."""
        return describe(self, width)


def diagnose_config(
    store: Store,
    data: CampaignData,
    falloffs: Mapping[str, Falloff],
    config: str,
    rules: list[Rule],
) -> ConfigDiagnosis:
    fs_type = data.fs_type(config)
    found = falloffs.get(config)
    if found is None:
        return ConfigDiagnosis(config, fs_type, None, note="no successful point to diagnose")
    diagnosis = ConfigDiagnosis(
        config, fs_type, found, good_label=found.best.label, bad_label=found.worst.label
    )
    applicable = [r for r in rules if r.applies_to(fs_type)]
    good = load_evidence(store, data, config, found.best.key, found.best.median)
    bad = load_evidence(store, data, config, found.worst.key, found.worst.median)
    diagnosis.ceiling = _ceiling(store, data, found, applicable)
    if not found.has_falloff:
        diagnosis.note = f"{found.reason}: nothing to explain"
        if diagnosis.ceiling is not None:
            _rank_ceiling(diagnosis, applicable, good, bad, data, store)
        return diagnosis
    ctx = _context(store, data, falloffs, found, good, bad, applicable)
    diagnosis.judged = _ranked(ctx, applicable, diagnosis.ceiling)
    diagnosis.candidates = [c for c in diagnosis.judged if c.score >= MIN_SCORE][:SHOWN]
    diagnosis.ruled_out = _ruled_out(diagnosis, applicable)
    diagnosis.bad_evidence_runs = len(bad.rows)
    if not diagnosis.candidates:
        diagnosis.fallback = fallback_changes(ctx)
    elif len(bad.rows) >= 2:
        top = diagnosis.candidates[0].mechanism
        margins, first = [], 0
        for row in bad.rows:
            alone = load_evidence(store, data, config, found.worst.key, found.worst.median, [row])
            ranked = _ranked(
                _context(store, data, falloffs, found, good, alone, applicable),
                applicable,
                diagnosis.ceiling,
            )
            mine = next(c.score for c in ranked if c.mechanism == top)
            others = max((c.score for c in ranked if c.mechanism != top), default=0.0)
            margins.append(mine - others)
            first += ranked[0].mechanism == top
        diagnosis.stability = Stability(top, len(bad.rows), first, tuple(margins))
    return diagnosis


def _ranked(ctx: Context, rules: list[Rule], ceiling: Ceiling | None) -> list[Candidate]:
    """Every rule judged and ranked; a device at its limit at every point lifts the
    device-bound mechanism to its utilisation."""
    judged = [evaluate(rule, ctx) for rule in rules]
    if ceiling is not None:
        ids = {r.id for r in rules if r.ceiling == "device_limits"}
        for c in judged:
            if c.mechanism in ids:
                c.score = max(c.score, min(1.0, ceiling.utilisation))
    judged.sort(key=lambda c: (-c.score, -c.explained, c.mechanism))
    return judged


def _context(
    store: Store,
    data: CampaignData,
    falloffs: Mapping[str, Falloff],
    found: Falloff,
    good: PointEvidence,
    bad: PointEvidence,
    rules: list[Rule],
) -> Context:
    comps = Compositions()
    for evidence in (good, bad):
        comps.add(evidence, rules)
    shifts = {}
    for kind in PROFILE_KINDS:
        g, b = comps.of(good, kind), comps.of(bad, kind)
        if g is not None and b is not None:
            shifts[kind] = Shift(kind, g, b)
    others = []
    for config, other in falloffs.items():
        if config == found.config:
            continue
        point = next((p for p in other.points if p.key == found.worst.key), None)
        if point is None or point.median < HELD_UP * found.worst.median:
            continue
        evidence = load_evidence(store, data, config, point.key, point.median)
        comps.add(evidence, rules)
        others.append((config, evidence))
    return Context(found.config, found, good, bad, shifts, others, comps, found.metric)


def _ceiling(store: Store, data: CampaignData, found: Falloff, rules: list[Rule]) -> Ceiling | None:
    if not any(r.ceiling == "device_limits" for r in rules):
        return None
    points = [load_evidence(store, data, found.config, p.key, p.median) for p in found.points]
    return device_ceiling([p for p in points if p.row is not None])


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
    ctx = _context(store, data, {}, diagnosis.falloff, good, bad, rules)
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
        parts.append(f"its frames {trend}: {g:.0%} {what} at {good} -> {b:.0%} at {bad}")
        break
    weak = next((x for x in c.counterfactuals if x.verdict == "weakens"), None)
    if weak is not None:
        parts.append(
            f"as present where throughput held ({weak.config} at {weak.label}: "
            f"{weak.theirs:.0%}, {weak.gain_pct:+.0f}%)"
        )
    if top is not None and top.mechanism != c.mechanism and top.explained > c.explained:
        parts.append(
            f"threads wait for {top.short}, not for {c.short}: {top.explained:.0%} of the "
            f"change against {c.explained:.0%}"
        )
    return parts


def fallback_changes(ctx: Context, limit: int = 4) -> list[str]:
    """The classes that grew most, when no mechanism of the rule base explains the change."""
    for kind in PROFILE_KINDS:
        shift = ctx.shifts.get(kind)
        if shift is None:
            continue
        what = "threads" if kind == "offcpu" else "busy CPU"
        return [
            f"{what} in {class_label(k)}: {g:.0%} -> {b:.0%} ({b - g:+.0%})"
            for k, g, b in shift.top_increases(limit)
        ]
    return []


# ------------------------------------------------------------------ campaign


def diagnose_campaign(store: Store, campaign_id: int) -> list[ConfigDiagnosis]:
    """One diagnosis per configuration of the campaign."""
    data = load_campaign(store, campaign_id)
    rules = load_rules()
    falloffs = campaign_falloffs(data)
    return [diagnose_config(store, data, falloffs, c, rules) for c in data.configs()]


def check_mechanism(mechanism: str) -> Rule:
    """The rule named on the command line (--hypothesis), or a UsageError listing them."""
    rules = {r.id: r for r in load_rules()}
    if mechanism not in rules:
        raise UsageError(
            f"--hypothesis {mechanism!r}: no such mechanism (known: {', '.join(sorted(rules))})"
        )
    return rules[mechanism]


# ------------------------------------------------------------------ text


def _wrap(text: str, width: int, indent: str, hang: str) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=hang) or [
        indent
    ]


def describe(d: ConfigDiagnosis, width: int = 80) -> list[str]:
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
    if d.falloff is not None and d.falloff.has_falloff and not d.candidates:
        lines.append("  no mechanism in the rule base explains the change; what grew most:")
        lines += [line for item in d.fallback for line in _wrap(item, width, "   - ", "     ")]
    return lines


def candidate_head(c: Candidate, d: ConfigDiagnosis, rank: int) -> str:
    margin = ""
    if rank == 1 and d.margin is not None and len(d.judged) > 1:
        margin = f", {d.margin:.2f} ahead of {d.judged[1].mechanism}"
    return f"{rank}. {c.title} [{c.mechanism}] score {c.score:.2f}{margin}"


def describe_candidate(c: Candidate, d: ConfigDiagnosis, rank: int, width: int = 80) -> list[str]:
    lines = _wrap(candidate_head(c, d, rank), width, "  ", "     ")
    if d.falloff is not None and not d.falloff.has_falloff and d.ceiling is not None:
        lines += _wrap("no change to explain, but a ceiling at every point", width, "     ", "  ")
        return lines + [
            line for r in c.remedies for line in _wrap(r, width, "     try: ", "          ")
        ]
    parts = []
    if c.explained_off is not None:
        parts.append(f"off-CPU {c.explained_off:.0%}")
    if c.explained_on is not None:
        parts.append(f"on-CPU {c.explained_on:.0%}")
    factors = f"metrics x{c.metric_factor:.2f}"
    if c.against_factor < 1:
        factors += f", against x{c.against_factor:g}"
    if c.counterfactual_factor < 1:
        factors += f", weakened x{c.counterfactual_factor:g}"
    summary = (
        f"explains {c.explained:.0%} of the change ({', '.join(parts) or 'no profile'}); {factors}"
    )
    lines += _wrap(summary, width, "     ", "       ")
    for item in c.evidence_lines(d.good_label, d.bad_label):
        lines += _wrap(item, width, "     evidence: ", "               ")
    for cf in c.counterfactuals:
        lines += _wrap(f"{cf.verdict}: {cf.text}", width, "     ", "       ")
    if rank == 1:
        for remedy in c.remedies:
            lines += _wrap(remedy, width, "     try: ", "          ")
    return lines


HypothesisVerdict = Literal["supported", "weaker", "not supported", "ruled out", "not judged"]


@dataclass
class HypothesisJudgement:
    """One named mechanism judged for one configuration, for or against, with its numbers."""

    config: str
    mechanism: str
    verdict: HypothesisVerdict
    text: str  # the verdict and its numbers, in words
    candidate: Candidate | None
    rank: int | None  # among every judged mechanism

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "mechanism": self.mechanism,
            "verdict": self.verdict,
            "text": self.text,
            "rank": self.rank,
        }


def judge_hypothesis(d: ConfigDiagnosis, mechanism: str) -> HypothesisJudgement:
    """The verdict on one mechanism: ranked first, behind another, too weak, or ruled out."""
    verdict: HypothesisVerdict
    c = d.candidate(mechanism)
    if c is None:
        why = d.note or f"{mechanism} does not apply to {d.fs_type}"
        return HypothesisJudgement(d.config, mechanism, "not judged", why, None, None)
    rank = d.judged.index(c) + 1
    if c.ruled_out:
        verdict, text = "ruled out", c.ruled_out
    elif rank == 1 and c.score >= MIN_SCORE:
        verdict, text = "supported", f"ranked first, score {c.score:.2f}"
    elif c.score >= MIN_SCORE:
        top = d.judged[0]
        verdict = "weaker"
        text = f"ranked {rank} (score {c.score:.2f}; {top.mechanism} {top.score:.2f})"
    else:
        verdict = "not supported"
        text = f"score {c.score:.2f}, it explains {c.explained:.0%} of the change"
    return HypothesisJudgement(d.config, mechanism, verdict, text, c, rank)


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
