"""Where a point's wall time goes: setup, measuring, teardown, post-processing.

The runner stores one `PointTiming` per point (facts["timing"]); reports sum
them so users see where their hours go. Post-processing (perf script and
folding, ftrace decoding) runs in the background while the next point is set
up, so only the part the campaign had to wait for (`post_wait_s`) adds to the
wall time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from fslab.base.format import format_duration_s, format_pct


@dataclass
class PointTiming:
    """Seconds of one point, by phase."""

    setup_s: float = 0.0  # image, mkfs, mount, fill, file layout, collectors' start
    measure_s: float = 0.0  # the workload's processes, ramp included
    teardown_s: float = 0.0  # collectors' stop, umount, loop detach
    post_s: float = 0.0  # post-processing of the collectors' raw data (in the background)
    post_wait_s: float = 0.0  # of post_s: how long the campaign waited for it

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in asdict(self).items()}

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any]) -> PointTiming | None:
        """The timing a point stored, None for points stored without one."""
        raw = facts.get("timing")
        if not isinstance(raw, Mapping):
            return None
        names = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in raw.items() if k in names})

    @property
    def wall_s(self) -> float:
        """What the point added to the campaign's wall time."""
        return self.setup_s + self.measure_s + self.teardown_s + self.post_wait_s


@dataclass
class CampaignTiming:
    """The sum over a campaign's points."""

    points: int
    wall_s: float
    setup_s: float
    measure_s: float
    teardown_s: float
    post_s: float
    post_wait_s: float
    post_hidden_s: float  # post-processing that overlapped the next point (no wall time)

    @classmethod
    def total(cls, timings: Iterable[PointTiming]) -> CampaignTiming:
        items = list(timings)
        post_s = sum(t.post_s for t in items)
        post_wait_s = sum(t.post_wait_s for t in items)
        return cls(
            points=len(items),
            wall_s=sum(t.wall_s for t in items),
            setup_s=sum(t.setup_s for t in items),
            measure_s=sum(t.measure_s for t in items),
            teardown_s=sum(t.teardown_s for t in items),
            post_s=post_s,
            post_wait_s=post_wait_s,
            post_hidden_s=max(post_s - post_wait_s, 0.0),
        )

    def describe(self) -> str:
        """One sentence: where the wall time went."""
        wall = self.wall_s or 1.0

        def part(seconds: float) -> str:
            return f"{format_duration_s(seconds)} ({format_pct(100 * seconds / wall)})"

        return (
            f"{format_duration_s(self.wall_s)} wall over {self.points} runs: measuring "
            f"{part(self.measure_s)}, setup {part(self.setup_s)}, teardown "
            f"{part(self.teardown_s)}, waiting for post-processing {part(self.post_wait_s)}; "
            f"post-processing took {format_duration_s(self.post_s)} in all, "
            f"{format_duration_s(self.post_hidden_s)} of it during the next point's setup"
        )
