"""The store bench's paced load (bench/store_throughput.py): the arithmetic the goal
is judged on, and a writer that keeps to its schedule without drifting."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from bench.store_throughput import (
    Pacing,
    _pools,
    _recorded,
    _writer,
    code_under_test,
    paced_cadence_s,
    paced_offsets,
    random_phases,
)


def test_the_cadence_is_the_point_wall_time_compressed():
    assert paced_cadence_s(11.0, 1) == 11.0  # real time: one save per point
    assert paced_cadence_s(11.0, 25) == pytest.approx(0.44)


def test_offsets_are_fixed_in_advance_from_the_phase():
    assert paced_offsets(4, 0.5, 0.2) == pytest.approx([0.2, 0.7, 1.2, 1.7])
    assert paced_offsets(0, 0.5, 0.0) == []
    with pytest.raises(ValueError, match="outside one cadence"):
        paced_offsets(3, 0.5, 0.5)


def test_phases_spread_over_one_cadence_and_repeat_with_the_seed():
    phases = random_phases(1000, 0.44, seed=3)
    assert all(0 <= p < 0.44 for p in phases)
    assert min(phases) < 0.05 and max(phases) > 0.39  # spread, not bunched
    assert random_phases(8, 0.44, seed=3) == phases[:8]
    assert random_phases(8, 0.44, seed=4) != phases[:8]


def test_a_paced_writer_waits_for_each_offset_and_counts_overruns(tmp_path):
    """Open loop: saves start at their offsets, never earlier; a schedule already past
    is not shifted, its saves run at once and are all counted late."""
    outcomes, _ = _recorded()
    start = time.monotonic() + 1.0  # after the store is created
    seconds, late = _writer(str(tmp_path / "a.db"), 0, outcomes, Pacing(start, (0.0, 0.3, 0.6)))
    assert (len(seconds), late) == (3, 0)
    assert time.monotonic() >= start + 0.6
    past = Pacing(time.monotonic() - 60, (0.0, 0.3, 0.6))
    began = time.monotonic()
    seconds, late = _writer(str(tmp_path / "b.db"), 0, outcomes, past)
    assert (len(seconds), late) == (3, 3)
    assert time.monotonic() - began < 10  # no catching up on the missed cadence


def test_the_baseline_pool_runs_the_baseline_tree(tmp_path):
    """--baseline measures the other tree's save path, not this one's twice (a
    spawned process takes its parent's sys.path, whatever $PYTHONPATH says)."""
    this = Path(__file__).parents[1] / "src"
    other = tmp_path / "src"
    shutil.copytree(this / "fslab", other / "fslab", ignore=shutil.ignore_patterns("__pycache__"))
    with _pools(other, processes=1) as pools:
        trees = code_under_test(pools)
    assert trees == {"this": str(this), "baseline": str(other)}
