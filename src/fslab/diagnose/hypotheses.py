"""One named mechanism judged for or against (`fslab diagnose --hypothesis`, the reply).

A report blames a mechanism; the verdict on it comes from the same ranking as
the diagnosis, so the two never disagree: ranked first, behind another, too
weak to be named, or ruled out by a failed requirement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from fslab.base.errors import UsageError
from fslab.base.format import format_share
from fslab.diagnose.diagnosis import ConfigDiagnosis
from fslab.diagnose.mechanisms import Rule, load_rules
from fslab.diagnose.score import MIN_SCORE, Candidate

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
        text = f"score {c.score:.2f}, it explains {format_share(c.explained)} of the change"
    return HypothesisJudgement(d.config, mechanism, verdict, text, c, rank)


def check_mechanism(mechanism: str) -> Rule:
    """The rule named on the command line (--hypothesis), or a UsageError listing them."""
    rules = {r.id: r for r in load_rules()}
    if mechanism not in rules:
        raise UsageError(
            f"--hypothesis {mechanism!r}: no such mechanism (known: {', '.join(sorted(rules))})"
        )
    return rules[mechanism]
