"""Run a campaign on this host: plan it, then every pending point in order.

A failed point is stored as data and the campaign goes on. Each finished
point is committed before the next begins; `resume` continues with the
pending ones. A spec with [vm] runs its points in qemu guests
(fslab.guest.runner). Each point's post-processing runs in the background
during the next point's setup and is added to the stored point before the
next measured window starts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import fslab
from fslab.base import faults
from fslab.base.errors import FslabError, UsageError
from fslab.base.hostfacts import collect_host_facts, host_name
from fslab.base.roles import (
    COLLECT_MODES,
    CollectMode,
    PointRole,
    mode_of_roles,
    repetition_role,
)
from fslab.base.timing import PointTiming
from fslab.guest.leftovers import find_guest_leftovers
from fslab.guest.runner import check_guests, run_in_guests
from fslab.measure import plan
from fslab.measure.point import RunOptions, measure_point
from fslab.measure.post import PostProcessing
from fslab.measure.progress import ProgressSink, SilentProgress
from fslab.spec.model import Spec
from fslab.spec.points import Point, expand_points
from fslab.store.db import CampaignRow, PlannedPoint, PointRow, Store
from fslab.store.facts import PointFacts
from fslab.target.guard import check_device
from fslab.target.leftovers import find_leftovers
from fslab.target.loop import InterruptGuard


def _planned(points: Sequence[Point]) -> list[PlannedPoint]:
    return [
        PlannedPoint(p.seq, p.filesystem.label, p.filesystem.type, p.sweep_dict, p.repeat, p.role)
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
    return Point(row.seq, by_label[row.config], tuple(row.sweep.items()), row.repeat, row.role)


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
    """Check the workload, the target (and the guests), record the campaign and plan
    its points."""
    plan.check_workload(spec)
    device = _device_identity(spec, options)
    if spec.vm is not None:
        check_guests(spec)
    points = expand_points(spec, options.collect)
    return store.create_campaign(
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        spec_toml=spec_toml,
        overrides={**overrides, "collect": options.collect},
        host=collect_host_facts().to_dict(),
        host_name=host_name(),
        device=device,
        fslab_version=fslab.__version__,
        points=_planned(points),
    )


def leftover_warning() -> str | None:
    leftovers = find_leftovers()
    guests = find_guest_leftovers()
    if leftovers.empty() and guests.empty():
        return None
    return (
        "leftovers from an earlier fslab that was killed: "
        f"{len(leftovers.mounts)} mount(s), {len(leftovers.loop_devices)} loop device(s), "
        f"{len(leftovers.images)} image(s), {len(guests.processes)} guest process(es); "
        "`fslab doctor --cleanup` releases them"
    )


def run_campaign(
    store: Store,
    campaign_id: int,
    *,
    options: RunOptions,
    progress: ProgressSink | None = None,
) -> str:
    """Run the campaign's pending points in order. Returns the final campaign status."""
    with store.campaign_lock(campaign_id):
        return _run_locked(store, campaign_id, options=options, sink=progress or SilentProgress())


def campaign_collect_mode(campaign: CampaignRow, rows: Sequence[PointRow]) -> CollectMode:
    """The collection mode a campaign was planned with (inferred for older campaigns)."""
    stored = campaign.overrides.collect
    known = [mode for mode in COLLECT_MODES if mode == stored]
    return known[0] if known else mode_of_roles(r.role for r in rows)


def check_resume_mode(store: Store, campaign_id: int, asked: CollectMode | None) -> None:
    """A resumed campaign keeps the mode it was planned with: its points' roles are fixed."""
    if asked is None:
        return
    planned = campaign_collect_mode(store.campaign(campaign_id), store.points(campaign_id))
    if asked != planned:
        raise UsageError(
            f"--collect: campaign {campaign_id} was planned with --collect={planned}; "
            "resume it without --collect/--no-collect (the roles of its points are fixed)"
        )


def headline_role(store: Store, campaign_id: int) -> PointRole:
    """The role of repetitions added to a campaign later (--until-ci)."""
    campaign = store.campaign(campaign_id)
    return repetition_role(campaign_collect_mode(campaign, store.points(campaign_id)))


class _InFlight:
    """The previous point's post-processing, saved to its row once done."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.point_id = 0
        self.post: PostProcessing | None = None
        self.timing = PointTiming()

    def hand_over(self, point_id: int, post: PostProcessing | None, facts: PointFacts) -> None:
        self.point_id, self.post = point_id, post
        self.timing = facts.point_timing or PointTiming()

    def settle(self) -> None:
        """Wait for the post-processing (if any) and add its results to the point."""
        if self.post is None:
            return
        waited = time.monotonic()
        results = self.post.wait()
        self.timing.post_s = results.seconds
        self.timing.post_wait_s = time.monotonic() - waited
        self.store.add_results(
            self.point_id,
            metrics=results.metrics,
            artifacts=results.artifacts,
            collectors=results.collectors,
            facts=PointFacts(timing=self.timing.to_dict()),
        )
        self.post = None


def _run_locked(store: Store, campaign_id: int, *, options: RunOptions, sink: ProgressSink) -> str:
    campaign = store.campaign(campaign_id)
    spec = campaign.spec
    rows = store.points(campaign_id)
    if campaign.overrides.imported_from is not None and any(r.status == "pending" for r in rows):
        raise UsageError(
            f"campaign {campaign_id} was imported (fslab import): its pending points are not "
            "run here; an imported file is results to compare, never a workload to run"
        )
    done = sum(1 for r in rows if r.status != "pending")
    sink.campaign_started(campaign_id, len(rows), done)
    store.set_campaign_status(campaign_id, "running")
    pending = [r for r in rows if r.status == "pending"]
    with InterruptGuard(sink.message):
        try:
            if spec.vm is not None:  # every point in a qemu guest (fslab.guest.runner)
                points = [point_from_row(spec, r) for r in pending]
                run_in_guests(store, spec, pending, points, sink=sink)
            else:
                _run_on_host(store, spec, pending, options=options, sink=sink, resumed=done > 0)
        except KeyboardInterrupt:
            store.set_campaign_status(campaign_id, "interrupted")
            raise
    store.set_campaign_status(campaign_id, "complete")
    return "complete"


def _run_on_host(
    store: Store,
    spec: Spec,
    pending: Sequence[PointRow],
    *,
    options: RunOptions,
    sink: ProgressSink,
    resumed: bool,
) -> None:
    """The pending points in order on this host; each point's post-processing runs
    during the next one's setup."""
    host = collect_host_facts()
    formatted_before = resumed
    in_flight = _InFlight(store)
    try:
        for row in pending:
            sink.point_started(row)
            faults.begin_point(row.seq)
            measured = measure_point(
                spec,
                point_from_row(spec, row),
                options=options,
                host=host,
                formatted_before=formatted_before,
                before_measure=in_flight.settle,
            )
            in_flight.settle()  # the point failed before its measured window
            in_flight.hand_over(row.id, measured.post, measured.outcome.facts)
            formatted_before = True
            store.save_outcome(row.id, measured.outcome)
            sink.point_finished(row, measured.outcome)
    finally:
        in_flight.settle()  # the last measured point keeps its evidence, interrupted or not
