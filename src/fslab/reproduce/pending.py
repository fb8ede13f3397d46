"""Spec sections a report asks for beyond this host: guests, device limits.

A report's kernel and CPU count are reproduced in a qemu guest ([vm]): the
reporter's kernel where fslab can boot its series (Debian's 5.10, 6.1, 6.12),
else the default guest kernel, and the reporter's CPU count as the guest's
possible CPUs (nr_cpu_ids, which sizes per-CPU structures such as ext4's
free-cluster watermark) with 2 vCPUs online. What a guest cannot give (a
kernel Debian does not offer, terabytes of memory) is recorded as facts this
host cannot reproduce, with a warning. A device limit (a volume provisioned at
64000 IOPS) becomes [target.limits], the blkio throttle on the point's scratch
device, on the host and in a guest alike. One small function per section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from fslab.base.format import format_bytes, format_bytes_per_s, format_iops, format_size
from fslab.base.units import parse_size_bytes
from fslab.guest.debian import OFFERED_SERIES
from fslab.reproduce.facts import DeviceFact, ReportFacts
from fslab.spec.model import LimitsSpec

DEFAULT_GUEST_KERNEL = "6.1"  # what a guest boots when the reporter's kernel is not offered
GUEST_CPUS = 2  # vCPUs a guest gets: what this kind of machine can run


def guest_fields(facts: ReportFacts) -> dict[str, str | int]:
    """What a [vm] section would ask for: the reporter's kernel, CPUs, possible CPUs, memory."""
    fields: dict[str, str | int] = {}
    if facts.kernels:
        fields["kernel"] = facts.kernels[-1].version  # the kernel the report is about: its last
    if facts.reporter_cpus is not None:
        count = facts.reporter_cpus.count
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


@dataclass(frozen=True)
class TargetLimits:
    """The spec's [target.limits] for a report, and the report lines behind it."""

    limits: LimitsSpec | None = None  # None: the report gives no limit a spec can hold
    used: list[DeviceFact] = field(default_factory=list)  # the facts `limits` came from
    refused: list[tuple[DeviceFact, str]] = field(default_factory=list)  # a limit, why not


def target_limits(facts: ReportFacts) -> TargetLimits:
    """The report's device limits as [target.limits]: a provisioned-IOPS volume caps
    reads and writes alike (read_iops = write_iops), and so does a bandwidth limit
    (read_bps = write_bps). LimitsSpec decides what a spec can express; the first
    line that sets a limit wins over a later one that says otherwise."""
    keys: dict[str, int | str] = {}
    used: list[DeviceFact] = []
    refused: list[tuple[DeviceFact, str]] = []
    for device in facts.devices:
        wanted = _limit_keys(device)
        if not wanted:
            continue
        clash = {k: v for k, v in wanted.items() if keys.get(k, v) != v}
        why = _inexpressible(wanted)
        if clash and not why:
            first = next(u for u in used if set(_limit_keys(u)) & set(clash))
            why = f"the spec sets line {first.source.number}'s limit ({first.text})"
        if why:
            refused.append((device, why))
            continue
        keys.update(wanted)
        used.append(device)
    return TargetLimits(LimitsSpec.model_validate(keys) if keys else None, used, refused)


def limit_text(device: DeviceFact) -> str:
    """How fslab reads a device's limit: '64.0K IOPS', '262.1MB/s' ('' when it has none)."""
    parts = []
    if device.iops_limit is not None:
        parts.append(format_iops(device.iops_limit))
    if device.bw_limit_bytes_s is not None:
        parts.append(format_bytes_per_s(device.bw_limit_bytes_s))
    return ", ".join(parts)


def _limit_keys(device: DeviceFact) -> dict[str, int | str]:
    keys: dict[str, int | str] = {}
    if device.iops_limit is not None:
        keys["read_iops"] = keys["write_iops"] = round(device.iops_limit)
    if device.bw_limit_bytes_s is not None:
        text = format_size(device.bw_limit_bytes_s)
        exact = parse_size_bytes(text) == device.bw_limit_bytes_s
        keys["read_bps"] = keys["write_bps"] = text if exact else round(device.bw_limit_bytes_s)
    return keys


def _inexpressible(keys: dict[str, int | str]) -> str:
    """Why LimitsSpec refuses these limits ("" when it takes them)."""
    try:
        LimitsSpec.model_validate(keys)
    except ValidationError as exc:
        error = exc.errors()[0]
        return f"target.limits.{error['loc'][0]} {error['msg'].removeprefix('Value error, ')}"
    return ""
