"""Run a campaign's points in qemu guests: the runner's side of fslab.guest.

A spec with a [vm] table (or a kernel, cpus or possible_cpus sweep axis)
runs every point in a guest. Before the campaign exists, every guest it
needs is checked without booting (kernel, modules, CPU counts, memory: exit 2
on any problem). Then the pending points are grouped into boots by
`fslab.guest.order.boot_groups` (one boot per guest per repetition, the
guests' order turning round each repetition) and run through one
`GuestSession` per group. Each outcome is stored as it comes, with the
guest's facts; a guest that cannot boot fails its group's points with the
console's tail, and later groups of the same guest fail at once rather than
wait out another boot deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fslab.base.errors import UsageError
from fslab.guest.kernels import limits_problem
from fslab.guest.order import boot_groups
from fslab.guest.session import GuestError, GuestSession, check_guest
from fslab.spec.model import Spec
from fslab.spec.points import Point, expand_points
from fslab.spec.vm import GuestConfig
from fslab.store.db import PointOutcome, PointRow, Store, utc_now

if TYPE_CHECKING:  # the runner calls this module; it never imports the runner
    from fslab.measure.progress import ProgressSink


def guests_of(spec: Spec, points: Sequence[Point]) -> list[GuestConfig]:
    """The distinct guests the points run in, in first-use order."""
    return list(dict.fromkeys(spec.guest_of(p.sweep_dict) for p in points))


def check_guests(spec: Spec) -> None:
    """Every guest the campaign needs can be had, with its device limits
    (UsageError/GuestError, exit 2)."""
    for guest in guests_of(spec, expand_points(spec)):
        kernel, _ = check_guest(guest, target_bytes=spec.target.size_bytes)
        problem = limits_problem(kernel) if spec.target.limits is not None else None
        if problem is not None:
            raise UsageError(f"target.limits: {problem}")


def _failed(error: str, console: str) -> PointOutcome:
    now = utc_now()
    return PointOutcome(status="failed", error=error, stderr=console, started_at=now, ended_at=now)


def run_in_guests(
    store: Store,
    spec: Spec,
    rows: Sequence[PointRow],
    points: Sequence[Point],
    *,
    sink: ProgressSink,
) -> None:
    """Run the pending points (rows[i] is points[i]) boot group by boot group."""
    row_of = {p.seq: row for p, row in zip(points, rows, strict=True)}
    did_not_boot: dict[GuestConfig, str] = {}
    for group in boot_groups(points, lambda p: spec.guest_of(p.sweep_dict)):
        if group.guest in did_not_boot:
            for point in group.points:
                _save(store, sink, row_of[point.seq], _failed(did_not_boot[group.guest], ""))
            continue
        saved: set[int] = set()
        try:
            with GuestSession(
                group.guest, target_bytes=spec.target.size_bytes, progress=sink.message
            ) as session:
                for point in group.points:
                    row = row_of[point.seq]
                    sink.point_started(row)
                    outcome = session.run_point(spec, point)
                    _save(store, sink, row, outcome)
                    saved.add(point.seq)
        except GuestError as exc:  # the guest did not boot: its points fail with the console
            error, _, console = str(exc).partition("\n")
            did_not_boot[group.guest] = f"{error} (an earlier boot of this guest)"
            sink.message(f"guest failed: {error}")
            for point in group.points:
                if point.seq not in saved:
                    _save(store, sink, row_of[point.seq], _failed(error, console))


def _save(store: Store, sink: ProgressSink, row: PointRow, outcome: PointOutcome) -> None:
    store.save_outcome(row.id, outcome)
    sink.point_finished(row, outcome)
