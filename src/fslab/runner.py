"""Run a campaign: every point through prepare, mkfs, mount, fill, collect, workload, release.

The life cycle of a point is a stack of context managers, so the mount and the
loop device are released on success, on failure and on SIGINT/SIGTERM (both
raise KeyboardInterrupt here; later signals are held off until cleanup ends).
A failed point is stored as data and the campaign goes on. Each finished point
is committed before the next begins; `resume` continues with the pending ones.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import fslab
from fslab import faults
from fslab.collect.base import Collector, CollectorResult, PointContext
from fslab.errors import FslabError, ToolError
from fslab.hostfacts import HostFacts, collect_host_facts
from fslab.proc import CommandLog, run, run_interruptible
from fslab.spec import DdWorkload, FioWorkload, Point, Spec, expand_points, validate_spec
from fslab.store.db import PlannedPoint, PointOutcome, PointRow, Store, utc_now
from fslab.store.lock import campaign_lock
from fslab.target import fill as fill_mod
from fslab.target.fs import Mount, describe_filesystem, make_filesystem
from fslab.target.guard import check_device
from fslab.target.leftovers import find_leftovers
from fslab.target.limits import device_limits
from fslab.target.loop import LoopImage
from fslab.units import parse_size_bytes
from fslab.workload import plan


@dataclass(frozen=True)
class RunOptions:
    """Choices made on the command line rather than in the spec."""

    allow_devices: tuple[str, ...] = ()
    force: bool = False
    collect: bool = True  # False: no collectors at all, whatever the spec says


class ProgressSink(Protocol):
    def campaign_started(self, campaign_id: int, total: int, done: int) -> None: ...
    def point_started(self, point: PointRow) -> None: ...
    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None: ...
    def message(self, text: str) -> None: ...


class SilentProgress:
    def campaign_started(self, campaign_id: int, total: int, done: int) -> None:
        pass

    def point_started(self, point: PointRow) -> None:
        pass

    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None:
        pass

    def message(self, text: str) -> None:
        pass


# ------------------------------------------------------------------ signals


class _SignalGuard:
    """First SIGINT/SIGTERM raises KeyboardInterrupt; later ones wait for cleanup."""

    def __init__(self, progress: ProgressSink) -> None:
        self.progress = progress
        self.interrupted = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.interrupted:
            self.progress.message(f"{signal.Signals(signum).name} again: still cleaning up")
            return
        self.interrupted = True
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def __enter__(self) -> _SignalGuard:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


# ------------------------------------------------------------------ targets


@contextlib.contextmanager
def scratch_device(
    spec: Spec, options: RunOptions, *, formatted_before: bool, log: CommandLog
) -> Iterator[str]:
    """A fresh device for one point: a new loop image, or the allowed real device."""
    target = spec.target
    if target.kind == "device":
        assert target.path is not None
        # fslab formatted it at an earlier point of this campaign: that signature is ours
        check_device(
            target.path, allowed=options.allow_devices, force=options.force or formatted_before
        )
        yield target.path
        return
    directory = "/dev/shm" if target.kind == "ram" else str(target.path)
    with LoopImage(target.size_bytes, directory=directory, log=log) as image:
        yield image.device


# ------------------------------------------------------------------ collectors


def collector_classes(spec: Spec, options: RunOptions) -> dict[str, type[Collector]]:
    if not options.collect:
        return {}
    from fslab.collect.registry import ALL_COLLECTORS

    wanted = spec.collect.enabled()
    return {name: ALL_COLLECTORS[name] for name in wanted if name in ALL_COLLECTORS}


def make_collector(name: str, cls: type[Collector], spec: Spec) -> Collector:
    if name == "perf":
        return cls(freq_hz=spec.collect.perf_freq_hz)  # type: ignore[call-arg]
    if name == "workqueue":
        return cls(exclude_functions=spec.collect.workqueue_exclude)  # type: ignore[call-arg]
    if name == "offcpu":
        return cls(cpu_budget=spec.collect.offcpu_cpu_budget)  # type: ignore[call-arg]
    return cls()


@contextlib.contextmanager
def collecting(
    classes: dict[str, type[Collector]], spec: Spec, ctx: PointContext, results: dict[str, Any]
) -> Iterator[None]:
    """Start the collectors around the workload; a collector never fails the point."""
    running: dict[str, Collector] = {}
    for name, cls in classes.items():
        reason = cls.unavailable_reason()
        if reason is not None:
            results[name] = CollectorResult(status="unavailable", reason=reason)
            continue
        try:
            collector = make_collector(name, cls, spec)
            collector.start(ctx)
            running[name] = collector
        except Exception as exc:  # a collector's failure is data, not a crash
            results[name] = CollectorResult(status="failed", reason=f"start: {exc}")
    try:
        yield
    finally:
        for name, collector in running.items():
            try:
                results[name] = collector.stop()
            except Exception as exc:
                results[name] = CollectorResult(status="failed", reason=f"stop: {exc}")


# ------------------------------------------------------------------ one point


@dataclass
class _PointState:
    log: CommandLog = field(default_factory=CommandLog)
    facts: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    collectors: dict[str, CollectorResult] = field(default_factory=dict)


def _fill_request(spec: Spec, point: Point) -> tuple[float | None, int | None]:
    """(percent, leave_free_bytes) from the sweep axes, else from [fill]."""
    sweep = point.sweep_dict
    if "fill_percent" in sweep:
        value = float(sweep["fill_percent"])  # type: ignore[arg-type]
        return (value if value > 0 else None), None
    if "fill_leave_free" in sweep:
        text = str(sweep["fill_leave_free"])
        return None, (parse_size_bytes(text) if text not in ("", "none") else None)
    leave = spec.fill.leave_free
    return spec.fill.percent, (parse_size_bytes(leave) if leave else None)


def _watermark_facts(host: HostFacts, fs_facts: dict[str, Any], free_bytes: int) -> dict[str, Any]:
    """ext4's free-cluster watermark in bytes and whether this point starts below it."""
    cluster = int(fs_facts.get("cluster_size_bytes") or fs_facts.get("block_size_bytes") or 4096)
    watermark_bytes = host.ext4_watermark_clusters * cluster
    return {
        "ext4_watermark_clusters": host.ext4_watermark_clusters,
        "ext4_watermark_bytes": watermark_bytes,
        "below_ext4_watermark": free_bytes < watermark_bytes,
    }


def run_point(
    spec: Spec,
    point: Point,
    *,
    options: RunOptions,
    host: HostFacts,
    formatted_before: bool,
) -> PointOutcome:
    """Build, measure and release one point. Only KeyboardInterrupt escapes."""
    state = _PointState()
    started = utc_now()
    fs = point.filesystem
    try:
        with tempfile.TemporaryDirectory(prefix="fslab-point-") as artifact_dir:
            outcome = _measure(spec, point, options, host, formatted_before, state, artifact_dir)
    except ToolError as exc:
        outcome = plan.WorkloadOutcome(ok=False, error=str(exc).splitlines()[0], stderr=exc.stderr)
    except FslabError as exc:
        outcome = plan.WorkloadOutcome(ok=False, error=str(exc))
    except OSError as exc:
        outcome = plan.WorkloadOutcome(ok=False, error=f"{type(exc).__name__}: {exc}")
    state.metrics.update(outcome.metrics)
    state.artifacts.update(outcome.artifacts)
    for result in state.collectors.values():
        state.metrics.update(result.metrics)
        state.artifacts.update(result.artifacts)
    state.facts.setdefault("config", fs.label)
    return PointOutcome(
        status="ok" if outcome.ok else "failed",
        error=outcome.error,
        stderr=outcome.stderr,
        metrics=state.metrics,
        artifacts=state.artifacts,
        commands=[(r.argv, r.returncode, r.seconds) for r in state.log.records],
        collectors={n: (r.status, r.reason) for n, r in state.collectors.items()},
        facts=state.facts,
        started_at=started,
        ended_at=utc_now(),
    )


def _measure(
    spec: Spec,
    point: Point,
    options: RunOptions,
    host: HostFacts,
    formatted_before: bool,
    state: _PointState,
    artifact_dir: str,
) -> plan.WorkloadOutcome:
    fs = point.filesystem
    log = state.log
    limits = spec.target.limits.device_limits() if spec.target.limits else None
    with scratch_device(spec, options, formatted_before=formatted_before, log=log) as device:
        faults.checkpoint("prepare")
        make_filesystem(fs.type, device, fs.mkfs_options, label=None, log=log)
        faults.checkpoint("mkfs")
        state.facts["filesystem"] = _describe(fs.type, device, log)
        with Mount(device, fs.type, fs.mount_options, log=log) as mount:
            faults.checkpoint("mount")
            state.facts["mount_options_effective"] = mount.effective_options()
            _fill(spec, point, mount.mountpoint, state)
            free_bytes = fill_mod.free_bytes(mount.mountpoint)
            state.metrics["fs.free_bytes_start"] = float(free_bytes)
            if fs.type == "ext4":
                state.facts.update(_watermark_facts(host, state.facts["filesystem"], free_bytes))
            # limits cap the workload (file layout included), not mkfs and fill
            with device_limits(limits, device) as limit_facts:
                state.facts.update({"device_limits": limit_facts} if limit_facts else {})
                outcome = _run_workload(
                    spec, point, options, device, mount.mountpoint, state, artifact_dir
                )
            faults.checkpoint("umount")
        if mount.lazily_unmounted:  # a process held it: the point's figures stand, say so
            state.facts["umount"] = "lazy: the mount stayed busy; detached lazily"
        faults.checkpoint("release")
    return outcome


def _fill(spec: Spec, point: Point, mountpoint: str, state: _PointState) -> None:
    percent, leave_free = _fill_request(spec, point)
    if percent is not None or leave_free is not None:
        filled = fill_mod.fill_filesystem(mountpoint, percent=percent, leave_free_bytes=leave_free)
        state.facts["fill"] = vars(filled)
        state.metrics["fs.fill_bytes"] = float(filled.bytes_filled)
    faults.checkpoint("fill")


def _describe(fs_type: str, device: str, log: CommandLog) -> dict[str, Any]:
    try:
        return describe_filesystem(fs_type, device, log=log)
    except ToolError as exc:
        return {"error": str(exc)}


def _run_workload(
    spec: Spec,
    point: Point,
    options: RunOptions,
    device: str,
    mountpoint: str,
    state: _PointState,
    artifact_dir: str,
) -> plan.WorkloadOutcome:
    timeout_s = plan.point_timeout_s(spec, point.sweep_dict)
    runtime_s, ramp_s = plan.runtime_and_ramp_s(spec, point.sweep_dict)
    workload = spec.workload
    if isinstance(workload, FioWorkload):
        plan.check_fits(spec, point.sweep_dict, fill_mod.free_bytes(mountpoint))
        argv = plan.fio_argv_for_point(spec, point.sweep_dict, mountpoint)
        if plan.needs_separate_layout(spec, point.sweep_dict):
            layout = run_interruptible(plan.layout_argv(argv), timeout_s=timeout_s, log=state.log)
            if layout.returncode != 0 or layout.timed_out:
                return plan.WorkloadOutcome(
                    ok=False, error="fio file layout failed", stderr=layout.stderr or layout.stdout
                )
            run(["sync", "--file-system", mountpoint], log=state.log)
        comm = "fio"
    else:
        comm = "dd"
    ctx = PointContext(
        device=device,
        device_name=Path(os.path.realpath(device)).name,
        mountpoint=mountpoint,
        fs_type=point.filesystem.type,
        workload_comm=comm,
        ramp_s=ramp_s,
        runtime_s=runtime_s,
        artifact_dir=Path(artifact_dir),
    )
    faults.checkpoint("collectors_start")
    with collecting(collector_classes(spec, options), spec, ctx, state.collectors):
        faults.checkpoint("workload")
        if isinstance(workload, FioWorkload):
            outcome = plan.run_fio(argv, timeout_s=timeout_s, log=state.log)
        else:
            assert isinstance(workload, DdWorkload)
            outcome = plan.run_dd(
                plan.dd_parameters(workload, point.sweep_dict),
                mountpoint=mountpoint,
                runtime_s=spec.runtime_s,
                timeout_s=timeout_s,
                log=state.log,
            )
        faults.checkpoint("collectors_stop")
    return outcome


# ------------------------------------------------------------------ campaigns


def _planned(points: Sequence[Point]) -> list[PlannedPoint]:
    return [
        PlannedPoint(p.seq, p.filesystem.label, p.filesystem.type, p.sweep_dict, p.repeat)
        for p in points
    ]


def point_from_row(spec: Spec, row: PointRow) -> Point:
    """The Point a stored row describes, built from its own config, sweep and repeat.

    Not looked up by seq in expand_points(spec): points appended later
    (adaptive repetition) have seqs the spec never planned.
    """
    by_label = {fs.label: fs for fs in spec.filesystems}
    if row.config not in by_label:
        raise FslabError(f"point #{row.seq}: configuration {row.config!r} is not in the spec")
    return Point(row.seq, by_label[row.config], tuple(row.sweep.items()), row.repeat)


def _device_identity(spec: Spec, options: RunOptions) -> dict[str, Any]:
    """Check a real device before anything is created; describe RAM/file targets."""
    target = spec.target
    if target.kind == "device":
        assert target.path is not None
        identity = check_device(target.path, allowed=options.allow_devices, force=options.force)
        return {"kind": "device", **vars(identity)}
    directory = "/dev/shm" if target.kind == "ram" else target.path
    return {"kind": target.kind, "image_dir": directory, "size_bytes": target.size_bytes}


def start_campaign(
    store: Store,
    spec: Spec,
    spec_toml: str,
    *,
    overrides: dict[str, Any],
    options: RunOptions,
) -> int:
    """Check the target, record the campaign and plan its points (all pending)."""
    device = _device_identity(spec, options)
    points = expand_points(spec)
    return store.create_campaign(
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        spec_toml=spec_toml,
        overrides=overrides,
        host=collect_host_facts().to_dict(),
        device=device,
        fslab_version=fslab.__version__,
        points=_planned(points),
    )


def leftover_warning() -> str | None:
    leftovers = find_leftovers()
    if leftovers.empty():
        return None
    return (
        "leftovers from an earlier fslab that was killed: "
        f"{len(leftovers.mounts)} mount(s), {len(leftovers.loop_devices)} loop device(s), "
        f"{len(leftovers.images)} image(s); `fslab doctor --cleanup` releases them"
    )


def run_campaign(
    store: Store,
    campaign_id: int,
    *,
    options: RunOptions,
    progress: ProgressSink | None = None,
) -> str:
    """Run the campaign's pending points in order. Returns the final campaign status."""
    with campaign_lock(store.path, campaign_id):
        return _run_locked(store, campaign_id, options=options, sink=progress or SilentProgress())


def _run_locked(store: Store, campaign_id: int, *, options: RunOptions, sink: ProgressSink) -> str:
    campaign = store.campaign(campaign_id)
    spec = validate_spec(campaign.spec, f"campaign {campaign_id}")
    rows = store.points(campaign_id)
    host = collect_host_facts()
    done = sum(1 for r in rows if r.status != "pending")
    sink.campaign_started(campaign_id, len(rows), done)
    store.set_campaign_status(campaign_id, "running")
    formatted_before = done > 0
    with _SignalGuard(sink):
        try:
            for row in rows:
                if row.status != "pending":
                    continue
                sink.point_started(row)
                faults.begin_point(row.seq)
                outcome = run_point(
                    spec,
                    point_from_row(spec, row),
                    options=options,
                    host=host,
                    formatted_before=formatted_before,
                )
                formatted_before = True
                store.save_outcome(row.id, outcome)
                sink.point_finished(row, outcome)
        except KeyboardInterrupt:
            store.set_campaign_status(campaign_id, "interrupted")
            raise
    store.set_campaign_status(campaign_id, "complete")
    return "complete"
