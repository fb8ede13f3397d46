"""One point's life cycle: prepare, mkfs, mount, fill, collect, workload, release.

The life cycle of a point is a stack of context managers, so the mount and the
loop device are released on success, on failure and on SIGINT/SIGTERM (both
raise KeyboardInterrupt here; later signals are held off until cleanup ends).
A failed point is returned as data. The same code runs on the host and, in a
qemu guest, under fslab.guest.agent.

A point's role (fslab.base.roles) says whether its collectors run: clean
repetitions run none, evidence and inline runs run them. Their
post-processing is left running, for the campaign loop to wait for. The
probes (collect.probe) run around every workload, whatever its role.

What the runner learns about a point is built as its typed facts
(store.facts.PointFacts), which take no key they do not name.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fslab.base import faults
from fslab.base.errors import FslabError, ToolError
from fslab.base.hostfacts import HostFacts
from fslab.base.proc import CommandLog, run
from fslab.base.roles import (
    CollectMode,
    instrumented,
    is_warmup,
)
from fslab.base.timing import PointTiming
from fslab.collect.base import Collector, CollectorResult, PendingResult, PointContext
from fslab.collect.probe import Probe
from fslab.collect.registry import ALL_COLLECTORS, ALL_PROBES
from fslab.measure import plan
from fslab.measure.post import PostProcessing
from fslab.measure.setup import setup_steps
from fslab.spec.model import FilesystemSpec, Spec
from fslab.spec.points import Point
from fslab.store.db import PointOutcome, utc_now
from fslab.store.facts import (
    DeviceLimitFacts,
    FilesystemFacts,
    FillFacts,
    HostCpuFacts,
    PointFacts,
)
from fslab.target import fill as fill_mod
from fslab.target.fs import Mount, describe_filesystem, make_filesystem
from fslab.target.guard import check_device
from fslab.target.limits import blkio_root, device_limits
from fslab.target.loop import LoopImage
from fslab.target.md import MdArray


@dataclass(frozen=True)
class RunOptions:
    """Choices made on the command line rather than in the spec."""

    allow_devices: tuple[str, ...] = ()
    force: bool = False
    # how a new campaign is planned (fslab.base.roles): clean repetitions + one evidence
    # run per sweep point, every repetition instrumented, or no collector at all
    collect: CollectMode = "separate"


# ------------------------------------------------------------------ targets


@contextlib.contextmanager
def formatted_device(
    spec: Spec, point: Point, options: RunOptions, *, formatted_before: bool, state: _PointState
) -> Iterator[tuple[str, ...]]:
    """A fresh filesystem for one point: on the allowed real device, or on new loop
    images (target.devices of them), made with mkfs on the sparse files before they are
    attached (on a file mkfs takes a fiftieth of the time it takes through the loop
    device), or on an md array over them (target.array). Yields the devices, the one to
    mount first."""
    target = spec.target
    fs = point.filesystem

    def make(path: str, *more: str) -> None:
        faults.checkpoint("prepare")
        make_filesystem(fs.type, path, fs.mkfs_options, label=None, log=state.log, more=more)
        if not more:  # several: described once attached, where btrfs finds them all
            describe(path)
        faults.checkpoint("mkfs")

    def describe(path: str) -> None:
        state.facts = state.facts.updated(filesystem=_describe(fs.type, path, state.log))

    if target.kind == "device":
        assert target.path is not None
        # fslab formatted it at an earlier point of this campaign: that signature is ours
        check_device(
            target.path, allowed=options.allow_devices, force=options.force or formatted_before
        )
        make(target.path)
        yield (target.path,)
        return
    directory = "/dev/shm" if target.kind == "ram" else str(target.path)
    if target.array is not None:
        with contextlib.ExitStack() as held:
            members = [
                held.enter_context(
                    LoopImage(target.size_bytes, directory=directory, log=state.log)
                ).device
                for _ in range(target.devices)
            ]
            array = held.enter_context(MdArray(target.array, members, log=state.log))
            make(array.device)
            state.facts = state.facts.updated(array=array.describe())
            yield (array.device,)
        return
    count = target.devices if fs.type == "btrfs" else 1
    if count == 1:
        with LoopImage(
            target.size_bytes, directory=directory, log=state.log, prepare=make
        ) as image:
            yield (image.device,)
        return
    with contextlib.ExitStack() as images:
        files = [
            images.enter_context(
                LoopImage(target.size_bytes, directory=directory, log=state.log, attach=False)
            )
            for _ in range(count)
        ]
        make(*(f.image_path for f in files))
        devices = tuple(f.attach_now() for f in files)
        run(["btrfs", "device", "scan", *devices], log=state.log)  # only fslab's own
        describe(devices[0])
        yield devices


def mount_options(fs: FilesystemSpec, devices: tuple[str, ...]) -> list[str]:
    """The configuration's mount options; a btrfs over several devices names the others
    (device=), so mount finds them without a scan of every block device."""
    return [*fs.mount_options, *(f"device={d}" for d in devices[1:])]


# ------------------------------------------------------------------ collectors


def collector_classes(spec: Spec, point: Point) -> dict[str, type[Collector]]:
    """The spec's collectors if the point's role is instrumented, else none."""
    if not instrumented(point.role):
        return {}
    return {name: ALL_COLLECTORS[name] for name in spec.collect.enabled()}


@contextlib.contextmanager
def collecting(
    classes: dict[str, type[Collector]],
    spec: Spec,
    ctx: PointContext,
    pending: dict[str, PendingResult],
    seconds: dict[str, dict[str, float]] | None = None,
) -> Iterator[None]:
    """Start the collectors around the workload; a collector never fails the point.

    At the end each one stops observing at once; what it still has to compute
    is left in `pending`. `seconds` gets each collector's wall time to start
    (its availability check included) and to stop observing: the part of a
    point's setup and teardown the instruments cost.
    """
    running: dict[str, Collector] = {}
    spent = seconds if seconds is not None else {}
    # perf last: its window (from when it is recording, fslab.collect.perf) starts
    # as the workload does, not while the other collectors are still starting, which
    # takes seconds on an emulated CPU
    for name, cls in sorted(classes.items(), key=lambda item: item[0] == "perf"):
        started = time.monotonic()
        reason = cls.unavailable_reason()
        if reason is not None:
            pending[name] = PendingResult.ready(
                CollectorResult(status="unavailable", reason=reason)
            )
            spent[name] = {"start_s": round(time.monotonic() - started, 4)}
            continue
        try:
            collector = cls.from_options(spec.collect.options_for(name))
            collector.start(ctx)  # never raises: a failed start is reported at stop
            running[name] = collector
        except Exception as exc:  # a collector's failure is data, not a crash
            pending[name] = PendingResult.ready(
                CollectorResult(status="failed", reason=f"start: {exc}")
            )
        spent[name] = {"start_s": round(time.monotonic() - started, 4)}
    try:
        yield
    finally:
        for name, collector in running.items():
            started = time.monotonic()
            try:
                pending[name] = collector.stop_observing()
            except Exception as exc:
                pending[name] = PendingResult.ready(
                    CollectorResult(status="failed", reason=f"stop: {exc}")
                )
            spent[name]["stop_s"] = round(time.monotonic() - started, 4)


# ------------------------------------------------------------------ probes


@contextlib.contextmanager
def probing(probes: Mapping[str, type[Probe]] = ALL_PROBES) -> Iterator[dict[str, float]]:
    """Every probe around the block (collect.probe), whatever the point's role.

    They begin in order just before the block and end in the reverse order
    just after it, also when it fails; what they found fills the dict yielded,
    once the block has ended (the point's `host_cpu`). A probe that raises is
    left out; the point goes on.
    """
    running: list[Probe] = []
    for cls in probes.values():
        try:
            probe = cls()
            probe.begin()
        except Exception:  # a probe never fails the point
            continue
        running.append(probe)
    found: dict[str, float] = {}
    try:
        yield found
    finally:
        ended = []
        for probe in reversed(running):
            try:
                probe.end()
            except Exception:
                continue
            ended.append(probe)
        for probe in reversed(ended):  # the facts in the probes' order
            try:
                found.update(probe.facts())
            except Exception:
                continue


# ------------------------------------------------------------------ one point


@dataclass
class _PointState:
    log: CommandLog = field(default_factory=CommandLog)
    facts: PointFacts = field(default_factory=PointFacts)
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    pending: dict[str, PendingResult] = field(default_factory=dict)
    timing: PointTiming = field(default_factory=PointTiming)
    clock: float = field(default_factory=time.monotonic)  # start of the phase under way

    def lap(self) -> float:
        """Seconds since the last lap (the phase that just ended)."""
        now = time.monotonic()
        seconds, self.clock = now - self.clock, now
        return seconds


@dataclass
class MeasuredPoint:
    """A point as measured: its outcome, and its collectors' post-processing
    (already running in the background) if it had collectors."""

    outcome: PointOutcome
    post: PostProcessing | None


def _with_watermark(
    facts: PointFacts, host: HostFacts, fs_facts: FilesystemFacts | None, free_bytes: int
) -> PointFacts:
    """ext4's free-cluster watermark in bytes and whether this point starts below it."""
    fs = fs_facts or FilesystemFacts()
    cluster = int(fs.cluster_size_bytes or fs.block_size_bytes or 4096)
    watermark_bytes = host.ext4_watermark_clusters * cluster
    return facts.updated(
        ext4_watermark_clusters=host.ext4_watermark_clusters,
        ext4_watermark_bytes=watermark_bytes,
        below_ext4_watermark=free_bytes < watermark_bytes,
    )


def run_point(
    spec: Spec,
    point: Point,
    *,
    options: RunOptions,
    host: HostFacts,
    formatted_before: bool,
) -> PointOutcome:
    """Build, measure and release one point, post-processing included.

    Only KeyboardInterrupt escapes.
    """
    measured = measure_point(
        spec, point, options=options, host=host, formatted_before=formatted_before
    )
    outcome = measured.outcome
    if measured.post is not None:
        results = measured.post.wait()
        outcome.metrics.update(results.metrics)
        outcome.artifacts.update(results.artifacts)
        outcome.collectors = results.collectors
        timing = outcome.facts.point_timing or PointTiming()
        timing.post_s = timing.post_wait_s = results.seconds
        outcome.facts = outcome.facts.updated(timing=timing.to_dict())
    return outcome


def measure_point(
    spec: Spec,
    point: Point,
    *,
    options: RunOptions,
    host: HostFacts,
    formatted_before: bool,
    before_measure: Callable[[], None] | None = None,
) -> MeasuredPoint:
    """Build, measure and release one point; post-processing is left running.

    `before_measure` is called once the point is set up, just before its
    measured window (the campaign loop waits there for the previous point's
    post-processing). Only KeyboardInterrupt escapes.
    """
    if is_warmup(point.role):
        spec = spec.warmup_form()
    state = _PointState()
    started = utc_now()
    fs = point.filesystem
    artifact_dir = tempfile.mkdtemp(prefix="fslab-point-")
    post: PostProcessing | None = None
    try:
        try:
            outcome = _measure(
                spec, point, options, host, formatted_before, state, artifact_dir, before_measure
            )
        except ToolError as exc:
            outcome = plan.WorkloadOutcome(
                ok=False, error=str(exc).splitlines()[0], stderr=exc.stderr
            )
        except FslabError as exc:
            outcome = plan.WorkloadOutcome(ok=False, error=str(exc))
        except OSError as exc:
            outcome = plan.WorkloadOutcome(ok=False, error=f"{type(exc).__name__}: {exc}")
        if state.timing.measure_s > 0:
            state.timing.teardown_s += state.lap()
        else:  # it failed before its window: all of it was setting up
            state.timing.setup_s += state.lap()
        if state.pending:
            post = PostProcessing(state.pending, artifact_dir).start()
    except BaseException:
        if post is None:  # interrupted after the collectors stopped: let them release
            for pending in state.pending.values():
                pending.finish()
        raise
    finally:
        if post is None:
            shutil.rmtree(artifact_dir, ignore_errors=True)
    state.metrics.update(outcome.metrics)
    state.artifacts.update(outcome.artifacts)
    if state.facts.config is None:
        state.facts = state.facts.updated(config=fs.label)
    state.facts = state.facts.updated(timing=state.timing.to_dict())
    result = PointOutcome(
        status="ok" if outcome.ok else "failed",
        error=outcome.error,
        stderr=outcome.stderr,
        metrics=state.metrics,
        artifacts=state.artifacts,
        commands=[(r.argv, r.returncode, r.seconds) for r in state.log.records],
        collectors=post.placeholder() if post is not None else {},
        facts=state.facts,
        started_at=started,
        ended_at=utc_now(),
    )
    return MeasuredPoint(result, post)


def _measure(
    spec: Spec,
    point: Point,
    options: RunOptions,
    host: HostFacts,
    formatted_before: bool,
    state: _PointState,
    artifact_dir: str,
    before_measure: Callable[[], None] | None,
) -> plan.WorkloadOutcome:
    fs = point.filesystem
    log = state.log
    limits = spec.target.limits.device_limits() if spec.target.limits else None
    with formatted_device(
        spec, point, options, formatted_before=formatted_before, state=state
    ) as devices:
        device = devices[0]  # several (target.devices): btrfs filesystem show lists them
        with Mount(device, fs.type, mount_options(fs, devices), log=log) as mount:
            faults.checkpoint("mount")
            state.facts = state.facts.updated(mount_options_effective=mount.effective_options())
            _fill(spec, point, mount.mountpoint, state)
            free_bytes = fill_mod.free_bytes(mount.mountpoint)
            state.metrics["fs.free_bytes_start"] = float(free_bytes)
            if fs.type == "ext4":
                state.facts = _with_watermark(state.facts, host, state.facts.filesystem, free_bytes)
            # limits cap the workload (file layout included), not mkfs, fill and setup
            with (
                setup_steps([*spec.setup, *fs.setup], mount.mountpoint, log, devices=devices),
                device_limits(limits, device) as limit_facts,
            ):
                if limit_facts:
                    limited = DeviceLimitFacts.model_validate(limit_facts)
                    state.facts = state.facts.updated(device_limits=limited)
                outcome = _run_workload(
                    spec, point, device, mount.mountpoint, state, artifact_dir, before_measure
                )
            faults.checkpoint("umount")
        if mount.lazily_unmounted:  # a process held it: the point's figures stand, say so
            state.facts = state.facts.updated(umount="lazy: the mount stayed busy; detached lazily")
        faults.checkpoint("release")
    return outcome


def _fill(spec: Spec, point: Point, mountpoint: str, state: _PointState) -> None:
    request = plan.fill_request(spec, point.sweep_dict)
    if request.fills:
        filled = fill_mod.fill_filesystem(
            mountpoint, percent=request.percent, leave_free_bytes=request.leave_free_bytes
        )
        state.facts = state.facts.updated(fill=FillFacts.model_validate(vars(filled)))
        state.metrics["fs.fill_bytes"] = float(filled.bytes_filled)
    faults.checkpoint("fill")


def _describe(fs_type: str, device: str, log: CommandLog) -> FilesystemFacts:
    try:
        return FilesystemFacts.model_validate(describe_filesystem(fs_type, device, log=log))
    except ToolError as exc:
        return FilesystemFacts(error=str(exc))


def _run_workload(
    spec: Spec,
    point: Point,
    device: str,
    mountpoint: str,
    state: _PointState,
    artifact_dir: str,
    before_measure: Callable[[], None] | None,
) -> plan.WorkloadOutcome:
    timeout_s = plan.point_timeout_s(spec, point.sweep_dict)
    runtime_s, ramp_s = plan.runtime_and_ramp_s(spec, point.sweep_dict)
    bench = plan.benchmark(spec)
    free = fill_mod.free_bytes(mountpoint) + plan.reused_bytes(spec, point.sweep_dict, mountpoint)
    plan.check_fits(spec, point.sweep_dict, free)
    commands = plan.workload_plan(spec, point.sweep_dict, mountpoint)
    failed = plan.run_prepare(commands, timeout_s=timeout_s, log=state.log)
    if failed is not None:
        return failed
    ctx = PointContext(
        device=device,
        device_name=Path(os.path.realpath(device)).name,
        mountpoint=mountpoint,
        fs_type=point.filesystem.type,
        workload_comm=bench.worker_comm,
        ramp_s=ramp_s,
        runtime_s=runtime_s,
        artifact_dir=Path(artifact_dir),
        throttle_root=str(blkio_root()) if state.facts.device_limits is not None else "",
    )
    state.timing.setup_s += state.lap()
    if before_measure is not None:
        before_measure()  # time waited here belongs to the previous point
        state.lap()
    faults.checkpoint("collectors_start")
    classes = collector_classes(spec, point)
    seconds: dict[str, dict[str, float]] = {}
    try:
        with collecting(classes, spec, ctx, state.pending, seconds):
            state.timing.setup_s += state.lap()
            faults.checkpoint("workload")
            with probing() as host_cpu:
                try:
                    outcome = plan.run_measured(
                        bench,
                        commands,
                        runtime_s=spec.runtime_s,
                        timeout_s=timeout_s,
                        log=state.log,
                    )
                finally:
                    state.timing.measure_s += state.lap()
            if host_cpu:
                state.facts = state.facts.updated(host_cpu=HostCpuFacts.model_validate(host_cpu))
            faults.checkpoint("collectors_stop")
    finally:
        if classes:  # what each instrument added to setup and teardown
            state.facts = state.facts.updated(collector_seconds=seconds)
    return outcome
