"""A spec being written from a report: what its sections share.

Each section of the spec (configurations, workload, [vm], [reported]) reads
the report's facts and this host's shape, and adds to what the whole spec
tells its reader: the questions the report leaves open, the warnings about
what cannot run here, the reported point. They share one Draft, so the
header written last lists everything the sections found.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fslab.reproduce import pending
from fslab.reproduce.facts import QuestionFact, ReportFacts
from fslab.reproduce.scale import HostShape
from fslab.spec.reported import ReportedFact


@dataclass
class Draft:
    """The report's facts, this host, and what the sections collect as they are written."""

    facts: ReportFacts
    host: HostShape
    questions: list[QuestionFact]
    guests: bool
    warnings: list[str] = field(default_factory=list)
    unreproduced: list[ReportedFact] = field(default_factory=list)
    reported_point: dict[str, int | str] = field(default_factory=dict)
    limits: pending.TargetLimits = field(init=False)

    def __post_init__(self) -> None:
        self.limits = pending.target_limits(self.facts)
