"""A configured device limit that caps every point at once.

A device at its configured limit caps the good point as much as the bad one,
so no change between them can show it: each point's device rate is compared
with the limit recorded in its facts, and a limit every point runs at is
reported even when the falloff is small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.curve.falloff import Falloff
from fslab.base.format import format_bytes_per_s, format_iops, format_share
from fslab.diagnose.evidence import PointEvidence, load_evidence
from fslab.diagnose.mechanisms import Rule
from fslab.store.db import Store

CEILING_UTILISATION = 0.90  # a device at >= 90% of its configured limit is at it


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
        rate = format_iops if limit.endswith("iops") else format_bytes_per_s
        direction = limit.split("_")[0] + "s"
        shown = ", ".join(
            f"{rate(r)} at {p.label}" for p, r in zip(points, rates, strict=True) if r
        )
        text = (
            f"the device limits every point: {direction} {shown}, against its limit of "
            f"{rate(float(value))} ({format_share(min(ratios))} of it or more)"
        )
        if found is None or min(ratios) > found.utilisation:
            found = Ceiling(text, min(ratios))
    return found


def config_ceiling(
    store: Store, data: CampaignData, found: Falloff, rules: list[Rule]
) -> Ceiling | None:
    """The ceiling every point of one configuration ran at, if a rule asks for it."""
    if not any(r.ceiling == "device_limits" for r in rules):
        return None
    points = [load_evidence(store, data, found.config, p.key, p.median) for p in found.points]
    return device_ceiling([p for p in points if p.row is not None])
