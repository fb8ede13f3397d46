"""Spec sections a report asks for that fslab cannot run yet: guests, device limits.

Until guests (another kernel, many possible CPUs) and device limits are wired
into specs, the reporter's kernel, CPU count, memory and device limits are
recorded as facts this host cannot reproduce, with a warning. The code that
fills the sections lives here, one small function each, so switching one on is
one change: return the table instead of None.
"""

from __future__ import annotations

from fslab.reproduce.facts import ReportFacts
from fslab.units import format_bytes


def guest_fields(facts: ReportFacts) -> dict[str, str | int]:
    """What a [vm] section would ask for: the reporter's kernel, CPUs, possible CPUs, memory."""
    fields: dict[str, str | int] = {}
    if facts.kernels:
        fields["kernel"] = facts.kernels[-1].version  # the kernel the report is about: its last
    if facts.cpus:
        count = max(cpu.count for cpu in facts.cpus)
        fields["cpus"] = 2  # what this machine can run; the count matters through possible_cpus
        fields["possible_cpus"] = count
    if facts.memory:
        fields["memory"] = format_bytes(min(m.size_bytes for m in facts.memory))
    return fields


def vm_section(facts: ReportFacts) -> dict[str, str | int] | None:
    """The spec's [vm] table for this report; None while guests are not wired into specs."""
    del facts  # guest_fields(facts) once the spec has [vm]
    return None


def target_limits(facts: ReportFacts) -> dict[str, float] | None:
    """The spec's device limits (IOPS, bandwidth) for this report; None until specs have them."""
    del facts  # {"iops": d.iops_limit, ...} from facts.devices once target limits exist
    return None
