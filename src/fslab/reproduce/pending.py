"""Spec sections a report asks for beyond this host: guests, device limits.

A report's kernel and CPU count are reproduced in a qemu guest ([vm]): the
reporter's kernel where fslab can boot its series (Debian's 5.10, 6.1, 6.12),
else the default guest kernel, and the reporter's CPU count as the guest's
possible CPUs (nr_cpu_ids, which sizes per-CPU structures such as ext4's
free-cluster watermark) with 2 vCPUs online. What a guest cannot give (a
kernel Debian does not offer, terabytes of memory) and device limits are
recorded as facts this host cannot reproduce, with a warning. One small
function per section, so switching one on is one change.
"""

from __future__ import annotations

from fslab.guest.debian import OFFERED_SERIES
from fslab.reproduce.facts import ReportFacts
from fslab.units import format_bytes

DEFAULT_GUEST_KERNEL = "6.1"  # what a guest boots when the reporter's kernel is not offered
GUEST_CPUS = 2  # vCPUs a guest gets: what this kind of machine can run


def guest_fields(facts: ReportFacts) -> dict[str, str | int]:
    """What a [vm] section would ask for: the reporter's kernel, CPUs, possible CPUs, memory."""
    fields: dict[str, str | int] = {}
    if facts.kernels:
        fields["kernel"] = facts.kernels[-1].version  # the kernel the report is about: its last
    if facts.cpus:
        count = max(cpu.count for cpu in facts.cpus)
        fields["cpus"] = GUEST_CPUS  # what this machine can run; the count acts as possible_cpus
        fields["possible_cpus"] = count
    if facts.memory:
        fields["memory"] = format_bytes(min(m.size_bytes for m in facts.memory))
    return fields


def kernel_series(version: str) -> str:
    """'5.10' of '5.10.0-43-amd64' or '5.10.42'."""
    return ".".join(version.split("-")[0].split(".")[:2])


def bootable_kernel(facts: ReportFacts) -> str | None:
    """The newest series among the report's kernels that fslab can boot (a regression
    report's newer kernel is the one that shows it); None when it can boot none."""
    offered = [kernel_series(k.version) for k in facts.kernels]
    offered = [series for series in offered if series in OFFERED_SERIES]
    return max(offered, key=lambda v: tuple(int(x) for x in v.split(".")), default=None)


def vm_section(facts: ReportFacts, host_nr_cpu_ids: int) -> dict[str, str | int] | None:
    """The spec's [vm] table for this report: a guest when the report's kernel can be
    booted or its CPU count is more than this host's; None when a guest adds nothing."""
    fields = guest_fields(facts)
    kernel = bootable_kernel(facts)
    possible = int(fields.get("possible_cpus", 0))
    if kernel is None and possible <= host_nr_cpu_ids:
        return None
    section: dict[str, str | int] = {"kernel": kernel or DEFAULT_GUEST_KERNEL, "cpus": GUEST_CPUS}
    if possible > GUEST_CPUS:
        section["possible_cpus"] = possible
    return section


def target_limits(facts: ReportFacts) -> dict[str, float] | None:
    """The spec's device limits (IOPS, bandwidth) for this report; None until specs have them."""
    del facts  # {"iops": d.iops_limit, ...} from facts.devices once target limits exist
    return None
