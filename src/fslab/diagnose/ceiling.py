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


# limit -> the counters that measure it, best first, each (metrics summed, scale to the
# limit's unit). A limit counts bios before the block layer merges them: the
# throttle's own counters say it exactly; diskstats' completions plus merges come
# close; completions alone (recordings made before the throttle counters) undercount.
_LIMIT_RATE: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = {
    "write_iops": ((("throttle.write_ios",), 1.0), (("blk.write_ios", "blk.write_merges"), 1.0)),
    "read_iops": ((("throttle.read_ios",), 1.0), (("blk.read_ios", "blk.read_merges"), 1.0)),
    "write_bps": ((("throttle.write_bytes",), 1.0), (("blk.write_sectors",), 512.0)),
    "read_bps": ((("throttle.read_bytes",), 1.0), (("blk.read_sectors",), 512.0)),
}


def device_rate(evidence: PointEvidence, limit: str) -> float | None:
    """The device's rate in the limit's unit, counted the way the limiter counts."""
    elapsed = evidence.metrics.get("sys.elapsed_s")
    if not elapsed:
        return None
    for counters, scale in _LIMIT_RATE[limit]:
        counts = [evidence.metrics.get(c) for c in counters]
        if all(c is not None for c in counts):
            return sum(c for c in counts if c is not None) * scale / elapsed
    return None


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
            f"the device's limit caps every point: {direction} at "
            f"{format_share(min(ratios))} or more of the {rate(float(value))} limit at every "
            f"point, counted as the limiter counts ({shown})"
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
