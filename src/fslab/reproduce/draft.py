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
from fslab.reproduce.facts import Line, QuestionFact, ReportFacts
from fslab.reproduce.scale import HostShape
from fslab.reproduce.setup import device_count
from fslab.spec.model import MAX_DEVICES
from fslab.spec.reported import ReportedFact
from fslab.target.md import ArrayKind


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
    array: MdLayout | None = field(init=False)  # or the md array fslab builds for theirs

    def __post_init__(self) -> None:
        self.limits = pending.target_limits(self.facts)
        self.devices = multi_devices(self.facts)
        layout = md_layout(self.facts)
        guest = self.guests and pending.vm_section(self.facts, self.host.nr_cpu_ids) is not None
        self.array = layout if layout is not None and (guest or self.host.md) else None

    def host_cpus(self, item: str, said: str, source: Line) -> str:
        """This host's CPU count for an option the report set to the reporter's (`fio
        --numjobs=$(nproc)`, `fs_mark -t $THREADS`), asked about."""
        count = str(self.host.online_cpus)
        question = f"the report's {said} counts the reporter's CPUs"
        self.questions.append(QuestionFact(item, question, f"this host's {count}", source))
        return count


@dataclass(frozen=True)
class MdLayout:
    """The reporter's md RAID or LVM stripe, as the md array fslab builds (target.array)."""

    kind: ArrayKind
    devices: int
    said: str  # the report's words: "LVM raid0 over 4 NVMe"
    line: int


def md_layout(facts: ReportFacts) -> MdLayout | None:
    """An md RAID 0 or 1 or an LVM stripe over 2..8 devices under the reporter's filesystem
    (an LVM stripe is built as md RAID 0: fslab builds md arrays, not device-mapper)."""
    for layout in sorted(facts.layouts, key=lambda x: -x.devices):
        text = layout.layout.lower()
        if not re.search(r"\b(md|mdadm|lvm)\b", text) or not 1 < layout.devices <= MAX_DEVICES:
            continue
        if re.search(r"raid-?0\b|strip", text):
            return MdLayout("md-raid0", layout.devices, layout.layout, layout.source.number)
        if re.search(r"raid-?1\b|mirror", text):
            return MdLayout("md-raid1", layout.devices, layout.layout, layout.source.number)
    return None


def multi_devices(facts: ReportFacts) -> int:
    """The devices the spec builds under the reporter's filesystem: its own count when it
    is a btrfs over 2..8 devices (btrfs's own RAID, fslab's loop images), else 1."""
    types = facts.filesystem_types()
    count = device_count(facts.layouts)
    below = " ".join(x.layout for x in facts.layouts).lower()  # md or LVM: not btrfs's RAID
    if types[:1] != ["btrfs"] or re.search(r"\b(md|mdadm|lvm|dm)\b", below):
        return 1
    return count if 1 < count <= MAX_DEVICES else 1
