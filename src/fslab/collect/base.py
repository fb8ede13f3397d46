"""The contract every collector follows.

The runner starts each enabled collector just before the workload and stops it
just after; a collector that cannot run never fails the point, it reports
itself unavailable with the reason. Everything it measures becomes flat metrics
(`wq.ext4-rsv-conversion.queue_delay_ns_p99`, `jbd2.avg_commit_ms`, ...) and
text artifacts (folded profiles, raw snapshots) stored with the point.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

CollectorStatus = Literal["ok", "unavailable", "failed"]


@dataclass(frozen=True)
class PointContext:
    """What a collector may know about the point it observes."""

    device: str  # e.g. /dev/loop3
    device_name: str  # sysfs block name, e.g. loop3
    mountpoint: str
    fs_type: str  # ext4 | xfs | btrfs
    workload_comm: str  # process name of the workload threads: "fio" or "dd"
    ramp_s: float  # seconds after workload start before steady state
    runtime_s: float  # expected workload duration in seconds (after ramp)
    artifact_dir: Path  # scratch directory for the collector's files


@dataclass
class CollectorResult:
    """What a collector hands back at stop."""

    status: CollectorStatus = "ok"
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> text


class Collector(ABC):
    """One source of evidence about what the kernel did during a point."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def unavailable_reason(cls) -> str | None:
        """None when this machine can run the collector, else why not (for doctor)."""

    @abstractmethod
    def start(self, ctx: PointContext) -> None:
        """Begin observing; must return quickly (spawn, don't wait)."""

    @abstractmethod
    def stop(self) -> CollectorResult:
        """Stop observing, release everything started, return results."""
