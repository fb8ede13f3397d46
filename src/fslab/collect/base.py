"""The contract every collector follows.

The runner starts each enabled collector just before the workload and stops it
just after; a collector that cannot run never fails the point, it reports
itself unavailable with the reason. Everything it measures becomes flat metrics
(`wq.ext4-rsv-conversion.queue_delay_ns_p99`, `jbd2.avg_commit_ms`, ...) and
text artifacts (folded profiles, raw snapshots) stored with the point.

A collector declares what the rest of fslab needs to know about it, so that
adding one touches its own module and the registry only:

- `Options`, a pydantic model of its settings: the spec's `[collect]` table
  offers `<name> = true|false` and `<name>_<option>` for each of them
  (spec.CollectSpec is built from the registry);
- `catalog`, the metric families it writes with their units and directions
  (analyze.campaign.metrics_catalog gathers them);
- `no_data`, what a report says when it ran but stored none of its metrics.

The base class owns the life cycle's failure states: `start()` runs
`begin()`, and a collector that raises `Unavailable` there (not ext4, no such
tracepoint) or fails is reported as such at stop, without its `end()` being
called; a stop without a start is a failure too.

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

from pydantic import BaseModel, ConfigDict

from fslab.base.vocab import CatalogEntry

CollectorStatus = Literal["ok", "unavailable", "failed"]


@dataclass(frozen=True)
class PointContext:
    """What a collector may know about the point it observes."""

    device: str  # e.g. /dev/loop3
    device_name: str  # sysfs block name, e.g. loop3
    mountpoint: str
    fs_type: str  # ext4 | xfs | btrfs
    workload_comm: str  # process name of the workload threads ("fio"); "": any, by mountpoint
    ramp_s: float  # seconds after workload start before steady state
    runtime_s: float  # expected workload duration in seconds (after ramp)
    artifact_dir: Path  # scratch directory for the collector's files
    throttle_root: str = ""  # the blkio hierarchy when target.limits throttles the device


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


class CollectorOptions(BaseModel):
    """A collector's own settings (none by default); `[collect] <name>_<field>` in a spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Unavailable(Exception):
    """Raised by begin(): this point cannot be observed, and why (not a failure)."""


class StartFailed(Exception):
    """Raised by begin(): the collector could not start, in its own words."""


class Collector(ABC):
    """One source of evidence about what the kernel did during a point."""

    name: ClassVar[str]
    Options: ClassVar[type[CollectorOptions]] = CollectorOptions
    catalog: ClassVar[tuple[CatalogEntry, ...]] = ()
    no_data: ClassVar[str] = "the collector ran but stored none of its metrics"

    _start_outcome: CollectorResult | None = None  # why there is nothing to end
    _started: bool = False

    @classmethod
    def from_options(cls, options: CollectorOptions) -> Collector:
        """The collector as a spec configures it: its options are its keyword arguments."""
        return cls(**options.model_dump())

    @classmethod
    def families(cls) -> frozenset[str]:
        """The first segments of its metric names ("wq", "sys", "blk", ...)."""
        return frozenset(pattern.split(".", 1)[0] for pattern, _ in cls.catalog)

    @classmethod
    @abstractmethod
    def unavailable_reason(cls) -> str | None:
        """None when this machine can run the collector, else why not (for doctor)."""

    def start(self, ctx: PointContext) -> None:
        """Begin observing; returns quickly and never raises (stop says what went wrong)."""
        self._started, self._start_outcome = True, None
        try:
            self.begin(ctx)
        except Unavailable as exc:
            self._start_outcome = CollectorResult(status="unavailable", reason=str(exc))
        except StartFailed as exc:
            self._start_outcome = CollectorResult(status="failed", reason=str(exc))
        except Exception as exc:
            reason = f"start: {type(exc).__name__}: {exc}"
            self._start_outcome = CollectorResult(status="failed", reason=reason)

    def stop_observing(self) -> PendingResult:
        """Stop observing and release everything now; leave the heavy part for later."""
        if not self._started:
            return PendingResult.ready(
                CollectorResult(status="failed", reason="stop() without a successful start()")
            )
        self._started = False
        if self._start_outcome is not None:
            return PendingResult.ready(self._start_outcome)
        try:
            ended = self.end()
        except Exception as exc:  # a collector never fails the point
            ended = CollectorResult(status="failed", reason=f"{type(exc).__name__}: {exc}")
        return PendingResult.ready(ended) if isinstance(ended, CollectorResult) else ended

    def stop(self) -> CollectorResult:
        """Stop observing, release everything started, return results."""
        return self.stop_observing().finish()

    @abstractmethod
    def begin(self, ctx: PointContext) -> None:
        """Start observing (spawn, don't wait); raise Unavailable or StartFailed to say why not."""

    @abstractmethod
    def end(self) -> CollectorResult | PendingResult:
        """Stop observing after a successful begin(); collectors whose results are cheap
        compute them here, the others return what is left to compute."""
