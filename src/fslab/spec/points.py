"""A spec's points: the runs of a campaign, in the order they run.

`expand_points` turns a validated spec into its points: the warm-ups, then
every configuration at every sweep combination, once per repetition and
role, in the spec's run order; an adaptive spec starts with a coarse scan
of its first configuration instead.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fslab.base.roles import CollectMode, PointRole, repetition_roles
from fslab.spec.model import (
    Combo,
    FilesystemSpec,
    ScalarValue,
    Spec,
    SweepValues,
    sweep_combinations,
)

ADAPTIVE_SPACING = 8.0
"""An adaptive scan's first points are the sweep's values at least this factor apart."""
ADAPTIVE_SCAN_RUNS = 2
"""Runs each point of an adaptive scan starts with (at most run.repeat)."""
CONCURRENCY_AXES = ("numjobs", "iodepth", "cpus", "threads", "clients")
"""Sweep axes along which load grows, in the order one is chosen as the curve's axis
(fio's jobs and queue depth, a guest's CPUs, fs_mark's and sysbench's threads, dbench's
clients)."""


@dataclass(frozen=True)
class Point:
    """One run: a configuration, one value per sweep axis, a repetition index, a role."""

    seq: int
    filesystem: FilesystemSpec
    sweep: tuple[tuple[str, ScalarValue], ...]
    repeat: int
    role: PointRole = "clean"  # see fslab.base.roles: clean, evidence or inline

    @property
    def sweep_dict(self) -> dict[str, ScalarValue]:
        return dict(self.sweep)

    def key(self) -> tuple[str, tuple[tuple[str, ScalarValue], ...]]:
        """Identity across repetitions: configuration and sweep values."""
        return (self.filesystem.label, self.sweep)


def expand_points(spec: Spec, collect: CollectMode = "off") -> list[Point]:
    """All points in run order.

    interleaved: repetition, then sweep value, then configuration innermost, so
    neighbouring runs alternate configurations and slow drift hits all alike.
    sequential: configuration, then sweep value, then repetition.
    random: interleaved order shuffled with run.seed.
    The repetitions of a sweep point are its runs under the collection mode
    (fslab.base.roles.repetition_roles: with 'separate', one evidence run among
    the clean ones, placed in their middle).
    """
    combos = sweep_combinations(spec.sweep)
    runs = repetition_roles(spec.run.repeat, collect)
    heaviest = heaviest_combination(spec.sweep)
    if spec.run.adaptive and concurrency_axis(spec.sweep) is not None:
        return _adaptive_scan(spec, collect, heaviest)
    warmups: list[tuple[FilesystemSpec, Combo, int, PointRole]] = [
        (fs, heaviest, rep, "warmup") for fs in spec.filesystems for rep in range(spec.run.warmup)
    ]
    if spec.run.order == "sequential":
        quads = [
            quad
            for fs in spec.filesystems
            for quad in [
                *(w for w in warmups if w[0] is fs),
                *((fs, combo, rep, role) for combo in combos for role, rep in runs),
            ]
        ]
    else:
        quads = [
            (fs, combo, rep, role)
            for role, rep in runs
            for combo in combos
            for fs in spec.filesystems
        ]
        if spec.run.order == "random":
            random.Random(spec.run.seed).shuffle(quads)
        quads = warmups + quads
    return [Point(seq, fs, combo, rep, role) for seq, (fs, combo, rep, role) in enumerate(quads)]


def concurrency_axis(sweep: Mapping[str, SweepValues]) -> str | None:
    """The sweep's axis along which load grows (CONCURRENCY_AXES), if it has one."""
    return next((a for a in CONCURRENCY_AXES if a in sweep), None)


def coarse_values(values: Sequence[ScalarValue]) -> list[ScalarValue]:
    """An adaptive scan's first values of a concurrency axis: the smallest, then each next
    one at least ADAPTIVE_SPACING times the last, and the largest."""
    numbers = sorted(
        float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)
    )
    if not numbers:
        return list(values)
    picked: list[float] = [numbers[0]]
    for value in numbers[1:]:
        if value >= picked[-1] * ADAPTIVE_SPACING:
            picked.append(value)
    if picked[-1] != numbers[-1]:
        picked.append(numbers[-1])
    return [int(v) if v.is_integer() else v for v in picked]


def _adaptive_scan(spec: Spec, collect: CollectMode, heaviest: Combo) -> list[Point]:
    """Warm-ups for every configuration, then the first configuration's coarse curve: its
    clean runs only (the questions add evidence runs where the answer is read)."""
    axis = concurrency_axis(spec.sweep)
    assert axis is not None
    sweep = {k: coarse_values(v) if k == axis else v for k, v in spec.sweep.items()}
    scan_mode: CollectMode = "off" if collect == "separate" else collect
    runs = repetition_roles(min(spec.run.repeat, ADAPTIVE_SCAN_RUNS), scan_mode)
    first = spec.filesystems[0]
    quads: list[tuple[FilesystemSpec, Combo, int, PointRole]] = [
        (fs, heaviest, rep, "warmup") for fs in spec.filesystems for rep in range(spec.run.warmup)
    ]
    quads += [
        (first, combo, rep, role) for role, rep in runs for combo in sweep_combinations(sweep)
    ]
    return [Point(seq, fs, combo, rep, role) for seq, (fs, combo, rep, role) in enumerate(quads)]


def heaviest_combination(sweep: Mapping[str, SweepValues]) -> Combo:
    """The sweep point a warm-up runs at: the largest value of the concurrency axis (the
    most threads, files and memory), the other axes at their last value; without one,
    the last combination."""
    combos = sweep_combinations(sweep)
    axis = concurrency_axis(sweep)
    if axis is None:
        return combos[-1]

    def load(combo: Combo) -> float:
        value = dict(combo)[axis]
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    return max(reversed(combos), key=load)
