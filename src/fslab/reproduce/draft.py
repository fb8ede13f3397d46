"""A spec being written from a report: what its sections share.

Each section of the spec (configurations, workload, [vm], [reported]) reads
the report's facts and this host's shape, and adds to what the whole spec
tells its reader: the questions the report leaves open, the warnings about
what cannot run here, the reported point. They share one Draft, so the
header written last lists everything the sections found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fslab.reproduce import pending
from fslab.reproduce.facts import QuestionFact, ReportFacts
from fslab.reproduce.scale import HostShape
from fslab.reproduce.setup import device_count
from fslab.spec.model import MAX_DEVICES
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
    devices: int = field(init=False)  # scratch devices under the reporter's btrfs

    def __post_init__(self) -> None:
        self.limits = pending.target_limits(self.facts)
        self.devices = multi_devices(self.facts)


def multi_devices(facts: ReportFacts) -> int:
    """The devices the spec builds under the reporter's filesystem: its own count when it
    is a btrfs over 2..8 devices (btrfs's own RAID, fslab's loop images), else 1."""
    types = facts.filesystem_types()
    count = device_count(facts.layouts)
    below = " ".join(x.layout for x in facts.layouts).lower()  # md or LVM: not btrfs's RAID
    if types[:1] != ["btrfs"] or re.search(r"\b(md|mdadm|lvm|dm)\b", below):
        return 1
    return count if 1 < count <= MAX_DEVICES else 1
