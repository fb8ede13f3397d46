"""The contract every collector follows.

The runner starts each enabled collector just before the workload and stops it
just after; a collector that cannot run never fails the point, it reports
itself unavailable with the reason. Everything it measures becomes flat metrics
(`wq.ext4-rsv-conversion.queue_delay_ns_p99`, `jbd2.avg_commit_ms`, ...) and
text artifacts (folded profiles, raw snapshots) stored with the point.

Stopping has two halves. `stop_observing()` ends the observation at once
(kernel resources released, raw data kept) and hands back a `PendingResult`;
its `finish()` does the heavy part (perf script and folding, ftrace decoding),
which the runner runs in the background while the next point is set up, never
during a measured window. `stop()` is both halves in one call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
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


@dataclass
class PendingResult:
    """A collector's results still to be computed from the raw data it kept."""

    compute: Callable[[], CollectorResult]

    @classmethod
    def ready(cls, result: CollectorResult) -> PendingResult:
        return cls(lambda: result)

    def finish(self) -> CollectorResult:
        """Compute the results; a failure is a failed result, never an exception."""
        try:
            return self.compute()
        except Exception as exc:
            return CollectorResult(status="failed", reason=f"post-processing: {exc!r}")


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

    def stop_observing(self) -> PendingResult:
        """Stop observing and release everything now; leave the heavy part for later.

        Collectors whose results are cheap to compute do it all here.
        """
        return PendingResult.ready(self.stop())
