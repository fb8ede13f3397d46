"""The questions a campaign must answer, and which runs would answer those still open.

A campaign about a falloff asks three things, each judged by the rule that
already answers it elsewhere (so a question is settled exactly when the
report says so). They are asked, and their runs planned, in the order 1, 3,
2: when the budget has room for part of a round only, the runs that fit go
to the mechanism's evidence first, then to each other configuration in turn.

1. Does each configuration fall off? (`analyze.curve.falloff`: settled when the
   test shows it, or the drop is under 15%.) Open: a clean run more at its
   best and at its worst point.
2. At the bad point of the deepest falloff, does each other configuration
   differ from it? (`analyze.versus.within.verdicts_at`, the rows `fslab
   compare --by filesystem` prints.) Open while either side has fewer than
   stats.MIN_REPS runs there (and, with evidence runs, until the other
   configuration has one there, for the counterfactual), or while the
   verdict reads "needs more runs": a clean run more on the side with fewer.
   When nothing falls off, the same question is asked at the reporter's point
   (a reproduced report is about whether its change moved the figure it
   quoted), else at the heaviest point, against the first configuration.
3. Is the first mechanism's lead stable? (`diagnose.diagnosis.Stability`:
   first in every evidence run at the bad point, ahead in each.) Open without
   an evidence run at the good and the bad point, with fewer than two at the
   bad one, or an unstable lead: one evidence run more, up to
   MAX_EVIDENCE_RUNS.

An adaptive campaign (run.adaptive) scanned only its first configuration's
curve coarsely (spec.expand_points); it asks one more question first:

0. Where does that curve fall off? Open while its steepest fall past the
   best point (15% or more between measured points) spans more than
   CLIFF_BRACKET in N: the spec's own sweep value nearest the geometric
   midpoint (else the midpoint itself), ADAPTIVE_SCAN_RUNS runs; then while
   its lowest point (the bad point) has a neighbour more than CLIFF_BRACKET
   away, the same way (a curve may fall, bottom out and recover), and until
   that lowest point has stats.MIN_REPS runs. While it is open the other
   questions wait: the bad point they would spend runs on may still move.

A point never gets more than MAX_CLEAN_RUNS clean runs: a chaotic point that
has not settled by then will not settle, and the question says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.analyze.curve.falloff import (
    FALLOFF_MIN_DROP,
    Curve,
    Falloff,
    campaign_falloffs,
    focus_config,
    steepest_fall,
)
from fslab.analyze.versus.reported import reporter_point
from fslab.analyze.versus.within import verdicts_at
from fslab.base.format import format_change_pct, format_p, format_ratio, format_share
from fslab.base.roles import PointRole, counts_for_headline, is_evidence
from fslab.base.vocab import PointKey, ScalarValue, point_key, point_label
from fslab.diagnose.diagnosis import ConfigDiagnosis, diagnose_config
from fslab.diagnose.mechanisms import load_rules
from fslab.spec.points import ADAPTIVE_SCAN_RUNS
from fslab.store.db import Store

MAX_CLEAN_RUNS = 12
"""Clean runs a sweep point may get from the questions."""
MAX_EVIDENCE_RUNS = 4
"""Evidence runs the bad point may get from the questions."""
CLIFF_BRACKET = 1.5
"""An adaptive campaign brackets its steepest fall to within this factor of N."""

Status = Literal["settled", "open", "stuck"]
"""settled: the rule answers it; open: more runs would; stuck: open, but its points
have all the runs the questions give."""


@dataclass(frozen=True)
class Want:
    """Runs a question asks for at one point."""

    config: str
    sweep: tuple[tuple[str, ScalarValue], ...]
    role: PointRole
    count: int = 1

    @property
    def label(self) -> str:
        return f"{self.config} {point_label(self.sweep)}"


@dataclass
class Question:
    kind: Literal["curve", "falloff", "remedy", "mechanism"]
    asks: str  # the question, in words
    status: Status
    answer: str  # what the campaign says so far
    wants: list[Want] = field(default_factory=list)  # the runs of the next round

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    def describe(self) -> str:
        if self.status == "settled":
            return f"{self.asks} {self.answer}"
        what = (
            "more runs at " + ", ".join(dict.fromkeys(w.label for w in self.wants))
            if self.wants
            else "more runs than a campaign's questions give (fslab run --until-ci)"
        )
        return f"{self.asks} not yet: {self.answer}; would settle with {what}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "asks": self.asks,
            "status": self.status,
            "answer": self.answer,
            "wants": [
                {"config": w.config, "sweep": dict(w.sweep), "role": w.role} for w in self.wants
            ],
        }


def campaign_questions(store: Store, data: CampaignData) -> list[Question]:
    """The campaign's questions, each with its status and the runs it wants now."""
    if data.headline is None:
        return []
    falloffs = campaign_falloffs(data)
    counts = _run_counts(data)
    spec = data.campaign.spec
    questions = []
    scanned = spec.filesystems[0].label
    if spec.run.adaptive and data.concurrency_axis() is not None and scanned in falloffs:
        questions.append(_curve_question(data, falloffs[scanned]))
    questions += [_falloff_question(f, counts) for f in falloffs.values() if f.kind != "single"]
    if any(q.kind == "curve" and q.is_open for q in questions):
        # the bad point moves while the cliff is bracketed: runs of the other
        # configurations there, or evidence runs, would be spent on the wrong point
        return questions
    focus = focus_config(falloffs)
    if focus is None or not focus.has_falloff:
        baseline = data.baseline_config()
        key = _compared_point(data, baseline) if baseline else None
        if baseline is None or key is None:
            return questions
        return questions + _remedy_questions(data, baseline, key, counts, separate=False)
    separate = _collects_evidence(data)
    if separate:  # before the remedies: a round the budget cuts short keeps the mechanism
        diagnosis = diagnose_config(store, data, falloffs, focus.config, load_rules())
        questions.append(_mechanism_question(diagnosis, focus, counts))
    questions += _remedy_questions(data, focus.config, focus.worst.key, counts, separate)
    return questions


def _compared_point(data: CampaignData, baseline: str) -> PointKey | None:
    """Where configurations are compared when none falls off: the reporter's point (a
    reproduced report's question is whether its change moved the figure it quoted), else
    the heaviest point, each axis at its last swept value. None with one configuration."""
    if len(data.configs()) < 2 or data.headline is None:
        return None
    keys = list(data.values(data.headline, baseline))
    if not keys:
        return None
    reported = data.campaign.spec.reported
    if reported is not None and reported.point:
        matched, _ = reporter_point(data, baseline, reported.point)
        if matched is not None:
            return matched.key
    sweep = data.campaign.spec.sweep

    def heaviness(key: PointKey) -> tuple[int, ...]:
        return tuple(_index(sweep.get(axis, []), value) for axis, value in key)

    return max(keys, key=heaviness)


def _index(values: Sequence[Any], value: ScalarValue) -> int:
    return values.index(value) if value in values else -1


def _collects_evidence(data: CampaignData) -> bool:
    """Whether the campaign runs separate evidence runs (--collect=separate)."""
    mode = data.campaign.overrides.collect
    return mode == "separate" or (mode is None and bool(data.evidence_points()))


def _run_counts(data: CampaignData) -> dict[tuple[str, PointKey, str], int]:
    """Runs done or planned per (config, point, clean|evidence)."""
    counts: dict[tuple[str, PointKey, str], int] = {}
    for p in data.points:
        kind = "clean" if counts_for_headline(p.role) else "evidence" if is_evidence(p.role) else ""
        if kind:
            key = (p.config, point_key(p.sweep), kind)
            counts[key] = counts.get(key, 0) + 1
    return counts


def _clean(
    config: str, key: PointKey, counts: Mapping[tuple[str, PointKey, str], int]
) -> list[Want]:
    if counts.get((config, key, "clean"), 0) >= MAX_CLEAN_RUNS:
        return []
    return [Want(config, key, "clean")]


def _status(wants: Sequence[Want], settled: bool) -> Status:
    if settled:
        return "settled"
    return "open" if wants else "stuck"


def _falloff_question(found: Falloff, counts: Mapping[tuple[str, PointKey, str], int]) -> Question:
    asks = f"Does {found.config} fall off?"
    if found.settled:
        answer = "yes: " if found.shown else "no: "
        return Question("falloff", asks, "settled", answer + found.reason)
    wants = [
        *_clean(found.config, found.best.key, counts),
        *_clean(found.config, found.worst.key, counts),
    ]
    return Question("falloff", asks, _status(wants, False), found.reason, wants)


def _remedy_questions(
    data: CampaignData,
    baseline: str,
    key: PointKey,
    counts: Mapping[tuple[str, PointKey, str], int],
    separate: bool,
) -> list[Question]:
    """Does each other configuration differ from `baseline` at `key` (the falloff's bad
    point, or where a campaign with none compares them)?"""
    label = point_label(key)
    verdicts = {v.candidate: v.row for v in verdicts_at(data, baseline, key)}
    questions = []
    failing = _never_ran(data)
    for candidate in data.configs():
        if candidate == baseline:
            continue
        asks = f"Does {candidate} differ from {baseline} at {label}?"
        if candidate in failing:  # more runs would fail the same way
            answer = f"no run of {candidate} succeeded: {failing[candidate]}"
            questions.append(Question("remedy", asks, "stuck", answer))
            continue
        wants = _up_to(MIN_REPS, candidate, key, counts) + _up_to(MIN_REPS, baseline, key, counts)
        if separate and not counts.get((candidate, key, "evidence")):
            wants.append(Want(candidate, key, "evidence"))  # for the counterfactual
        row = verdicts.get(candidate)
        if row is None or wants:
            runs = counts.get((candidate, key, "clean"), 0)
            answer = f"{runs} run(s) of {candidate} at {label}"
            questions.append(Question("remedy", asks, _status(wants, False), answer, wants))
            continue
        answer = (
            f"{row.verdict}: {format_change_pct(row.change_pct)} "
            f"(p {format_p(row.p_adjusted)}, {row.n_candidate} and {row.n_baseline} runs)"
        )
        if row.verdict != "needs more runs":
            questions.append(Question("remedy", asks, "settled", answer))
            continue
        wants = _fewer_side(candidate, baseline, key, counts)
        questions.append(Question("remedy", asks, _status(wants, False), answer, wants))
    return questions


def _never_ran(data: CampaignData) -> dict[str, str]:
    """Configurations with failed runs and none that succeeded, each with its first error
    (mkfs refusing an option fails every run the same way)."""
    errors: dict[str, str] = {}
    succeeded = set()
    for p in sorted(data.points, key=lambda p: p.seq):
        if p.status == "ok":
            succeeded.add(p.config)
        elif p.status == "failed":
            errors.setdefault(p.config, p.error or "failed")
    return {config: error for config, error in errors.items() if config not in succeeded}


def _fewer_side(
    candidate: str, baseline: str, key: PointKey, counts: Mapping[tuple[str, PointKey, str], int]
) -> list[Want]:
    """A clean run more for an unsettled verdict, on the side with fewer runs (both when
    even): a two-sample test gains most from its smaller side, and the baseline, shared
    by every other configuration's verdict, is usually the larger one."""
    n_candidate = counts.get((candidate, key, "clean"), 0)
    n_baseline = counts.get((baseline, key, "clean"), 0)
    return [
        *(_clean(candidate, key, counts) if n_candidate <= n_baseline else []),
        *(_clean(baseline, key, counts) if n_baseline <= n_candidate else []),
    ]


def _up_to(
    runs: int, config: str, key: PointKey, counts: Mapping[tuple[str, PointKey, str], int]
) -> list[Want]:
    """The clean runs a point lacks to reach `runs`."""
    lacking = runs - counts.get((config, key, "clean"), 0)
    return [Want(config, key, "clean", lacking)] if lacking > 0 else []


def _curve_question(data: CampaignData, found: Falloff) -> Question:
    """Adaptive campaigns: where the scanned configuration's curve falls, bracketed to
    within CLIFF_BRACKET (its steepest falling step gets its geometric midpoint), then
    its lowest point, bracketed the same way and given MIN_REPS runs."""
    asks = f"Where does {found.config} fall off?"
    curve = found.curve
    if curve is None or len(curve.points) < 2:
        return Question("curve", asks, "settled", "one point on its curve")
    fall = steepest_fall(curve)
    if fall is None:
        answer = f"nothing falls by {format_share(FALLOFF_MIN_DROP)} past {curve.peak.label}"
        return Question("curve", asks, "settled", answer)
    a, b = fall
    assert a.n is not None and b.n is not None
    bracket = f"between {a.label} and {b.label}"
    declared = data.campaign.spec.sweep.get(curve.axis, [])
    middle = _midpoint(a.n, b.n, declared)
    if b.n / a.n > CLIFF_BRACKET and middle not in (a.n, b.n):
        want = _want_at(found.config, a.key, curve.axis, middle)
        return Question("curve", asks, "open", f"{bracket} (x{format_ratio(b.n / a.n, 1)})", [want])
    answer = f"{bracket} (x{format_ratio(b.n / a.n)})"
    lowest = valley_probe(curve, declared)
    if lowest is not None:
        answer += f"; its lowest point, {curve.low.label}, is not bracketed yet"
        want = _want_at(found.config, a.key, curve.axis, lowest)
        return Question("curve", asks, "open", answer, [want])
    if len(curve.low.values) < MIN_REPS:
        # the bad point is where every other question spends its runs: on two runs of a
        # chaotic point it moved after they were spent (1448 jobs, then 1024)
        answer += f"; its lowest point, {curve.low.label}, has {len(curve.low.values)} run(s)"
        more = MIN_REPS - len(curve.low.values)
        return Question(
            "curve", asks, "open", answer, [Want(found.config, curve.low.key, "clean", more)]
        )
    return Question("curve", asks, "settled", answer)


def valley_probe(curve: Curve, declared: Sequence[Any]) -> int | None:
    """Where to look for a lower point than the curve's lowest (None: it is bracketed).

    The steepest fall need not end at the curve's lowest point: the fsync storm falls
    from 512 to 768 jobs, is lowest at 1024 and recovers by 2048. The bad point is where
    the other configurations are judged, so each side of the lowest point is bracketed
    as the fall is: within CLIFF_BRACKET, at the value `_midpoint` picks."""
    points = [p for p in curve.points if p.n is not None]
    low = curve.low
    at = next(i for i, p in enumerate(points) if p is low)
    for side in (at + 1, at - 1):
        if not 0 <= side < len(points) or points[side].n == low.n:
            continue
        lo, hi = sorted((low.n or 0.0, points[side].n or 0.0))
        middle = _midpoint(lo, hi, declared)
        if hi / lo > CLIFF_BRACKET and middle not in (lo, hi):
            return middle
    return None


def _want_at(config: str, key: PointKey, axis: str, n: int) -> Want:
    return Want(
        config, tuple((k, n if k == axis else v) for k, v in key), "clean", ADAPTIVE_SCAN_RUNS
    )


def _midpoint(low: float, high: float, declared: Sequence[Any]) -> int:
    """The point to measure inside (low, high): the spec's own sweep value nearest the
    geometric midpoint (in log terms) when it declares one there, so an adaptive campaign
    measures the grid's points; else the geometric midpoint."""
    middle = math.sqrt(low * high)
    inside = [v for v in declared if isinstance(v, int | float) and low < v < high]
    if inside:
        return int(min(inside, key=lambda v: abs(math.log(v / middle))))
    return round(middle)


def _mechanism_question(
    diagnosis: ConfigDiagnosis,
    focus: Falloff,
    counts: Mapping[tuple[str, PointKey, str], int],
) -> Question:
    bad, good = focus.worst, focus.best
    missing = [
        Want(focus.config, point.key, "evidence")
        for point in (good, bad)
        if not counts.get((focus.config, point.key, "evidence"))
    ]
    if missing or diagnosis.top is None:
        asks = f"Which mechanism explains {focus.config}'s falloff?"
        answer = (
            f"no evidence run yet at {', '.join(point_label(w.sweep) for w in missing)}"
            if missing
            else "no mechanism of the rule base explains it"
        )
        return Question("mechanism", asks, _status(missing, not missing), answer, missing)
    asks = f"Is {diagnosis.top} first in {focus.config} at {bad.label} in every evidence run?"
    stability = diagnosis.stability
    if stability is not None and stability.stable:
        return Question("mechanism", asks, "settled", "yes: " + stability.describe(bad.label))
    answer = (
        stability.describe(bad.label)
        if stability is not None
        else f"{diagnosis.bad_evidence_runs} evidence run(s) at {bad.label}"
    )
    done = counts.get((focus.config, bad.key, "evidence"), 0)
    wants = [Want(focus.config, bad.key, "evidence")] if done < MAX_EVIDENCE_RUNS else []
    return Question("mechanism", asks, _status(wants, False), answer, wants)
