"""The questions a campaign must answer, and which runs would answer those still open.

A campaign about a falloff asks three things, each judged by the rule that
already answers it elsewhere (so a question is settled exactly when the
report says so):

1. Does each configuration fall off? (`analyze.falloff`: settled when the
   test shows it, or the drop is under 15%.) Open: a clean run more at its
   best and at its worst point.
2. At the bad point of the deepest falloff, does each other configuration
   differ from it? (`analyze.comparisons.verdicts_at`, the rows `fslab
   compare --by filesystem` prints.) Open while the verdict reads "needs more
   runs": a clean run more of both.
3. Is the first mechanism's lead stable? (`analyze.diagnose.Stability`:
   first in every evidence run at the bad point, ahead in each.) Open with
   fewer than two evidence runs there, or an unstable lead: one evidence run
   more, up to MAX_EVIDENCE_RUNS.

A point never gets more than MAX_CLEAN_RUNS clean runs: a chaotic point that
has not settled by then will not settle, and the question says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.analyze.comparisons import verdicts_at
from fslab.analyze.dataset import CampaignData
from fslab.analyze.diagnose import ConfigDiagnosis, diagnose_config
from fslab.analyze.falloff import Falloff, campaign_falloffs, focus_config
from fslab.analyze.mechanisms import load_rules
from fslab.roles import PointRole, counts_for_headline, is_evidence
from fslab.store.db import Store
from fslab.vocab import PointKey, ScalarValue, format_p, point_key, point_label

MAX_CLEAN_RUNS = 12
"""Clean runs a sweep point may get from the questions."""
MAX_EVIDENCE_RUNS = 4
"""Evidence runs the bad point may get from the questions."""

Status = Literal["settled", "open", "stuck"]
"""settled: the rule answers it; open: more runs would; stuck: open, but its points
have all the runs the questions give."""


@dataclass(frozen=True)
class Want:
    """One run a question asks for."""

    config: str
    sweep: tuple[tuple[str, ScalarValue], ...]
    role: PointRole

    @property
    def label(self) -> str:
        return f"{self.config} {point_label(self.sweep)}"


@dataclass
class Question:
    kind: Literal["falloff", "remedy", "mechanism"]
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
    questions = [_falloff_question(f, counts) for f in falloffs.values()]
    focus = focus_config(falloffs)
    if focus is None or not focus.has_falloff:
        return questions
    questions += _remedy_questions(data, focus, counts)
    if not data.evidence_points(focus.config):
        return questions  # no separate evidence runs: nothing to pool or add
    diagnosis = diagnose_config(store, data, falloffs, focus.config, load_rules())
    mechanism = _mechanism_question(diagnosis, focus, counts)
    if mechanism is not None:
        questions.append(mechanism)
    return questions


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
    data: CampaignData, focus: Falloff, counts: Mapping[tuple[str, PointKey, str], int]
) -> list[Question]:
    bad = focus.worst
    questions = []
    for verdict in verdicts_at(data, focus.config, bad.key):
        row = verdict.row
        asks = f"Does {verdict.candidate} differ from {focus.config} at {bad.label}?"
        answer = (
            f"{row.verdict}: {row.change_pct:+.0f}% "
            f"(p {format_p(row.p_adjusted)}, {row.n_candidate} and {row.n_baseline} runs)"
        )
        if row.verdict != "needs more runs":
            questions.append(Question("remedy", asks, "settled", answer))
            continue
        wants = [
            *_clean(verdict.candidate, bad.key, counts),
            *_clean(focus.config, bad.key, counts),
        ]
        questions.append(Question("remedy", asks, _status(wants, False), answer, wants))
    return questions


def _mechanism_question(
    diagnosis: ConfigDiagnosis,
    focus: Falloff,
    counts: Mapping[tuple[str, PointKey, str], int],
) -> Question | None:
    if diagnosis.top is None:
        return None
    asks = (
        f"Is {diagnosis.top} first in {focus.config} at {focus.worst.label} in every evidence run?"
    )
    stability = diagnosis.stability
    if stability is not None and stability.stable:
        return Question(
            "mechanism", asks, "settled", "yes: " + stability.describe(focus.worst.label)
        )
    answer = (
        stability.describe(focus.worst.label)
        if stability is not None
        else f"{diagnosis.bad_evidence_runs} evidence run(s) at {focus.worst.label}"
    )
    done = counts.get((focus.config, focus.worst.key, "evidence"), 0)
    wants = [Want(focus.config, focus.worst.key, "evidence")] if done < MAX_EVIDENCE_RUNS else []
    return Question("mechanism", asks, _status(wants, False), answer, wants)
