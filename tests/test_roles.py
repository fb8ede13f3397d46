"""The run model: where the evidence run goes, and which rows are headline repetitions."""

from __future__ import annotations

from collections import Counter

import pytest

from fslab.base.roles import counts_for_headline, instrumented, mode_of_roles, repetition_roles
from fslab.spec.load import load_spec
from fslab.spec.points import expand_points


@pytest.mark.parametrize(
    ("repeat", "expected"),
    [
        (1, ["c0", "e0"]),
        (2, ["c0", "e0", "c1"]),
        (3, ["c0", "c1", "e0", "c2"]),
        (4, ["c0", "c1", "e0", "c2", "c3"]),
    ],
)
def test_the_evidence_run_sits_in_the_middle_of_the_clean_ones(repeat, expected):
    runs = repetition_roles(repeat, "separate")
    assert [f"{role[0]}{rep}" for role, rep in runs] == expected


def test_inline_and_off_have_no_evidence_run():
    assert repetition_roles(3, "inline") == [("inline", 0), ("inline", 1), ("inline", 2)]
    assert repetition_roles(2, "off") == [("clean", 0), ("clean", 1)]


def test_roles_say_what_counts_and_what_is_instrumented():
    assert [counts_for_headline(r) for r in ("clean", "evidence", "inline")] == [
        True,
        False,
        True,
    ]
    assert [instrumented(r) for r in ("clean", "evidence", "inline")] == [False, True, True]


def test_the_mode_is_recovered_from_the_roles():
    assert mode_of_roles(["clean", "evidence", "clean"]) == "separate"
    assert mode_of_roles(["inline", "inline"]) == "inline"
    assert mode_of_roles(["clean"]) == "off"
    assert mode_of_roles([]) == "off"


def _spec(order: str, repeat: int):
    spec, _ = load_spec(
        "ext4-fsync-storm",
        quick=True,
        overrides=[
            f'run.order="{order}"',
            f"run.repeat={repeat}",
            "sweep.numjobs=[16, 256, 1024]",
        ],
    )
    return spec


def test_warm_ups_come_first_one_per_configuration_at_the_heaviest_point():
    spec = _spec("interleaved", 2)
    points = expand_points(spec, "separate")
    warm = [p for p in points if p.role == "warmup"]
    assert points[: len(warm)] == warm
    assert [(p.filesystem.label, p.sweep_dict) for p in warm] == [
        ("ext4-default", {"numjobs": 1024}),
        ("ext4-journal1g", {"numjobs": 1024}),
    ]
    sequential = expand_points(_spec("sequential", 2), "separate")
    blocks = [p.role for p in sequential if p.filesystem.label == "ext4-journal1g"]
    assert blocks[0] == "warmup" and blocks.count("warmup") == 1
    none = expand_points(_spec("interleaved", 2).model_copy(update={"run": _run(0)}))
    assert "warmup" not in {p.role for p in none}


def _run(warmup: int):
    return _spec("interleaved", 2).run.model_copy(update={"warmup": warmup})


def _measured(points):
    return [p for p in points if p.role != "warmup"]


def test_interleaved_runs_the_evidence_pass_between_clean_passes():
    spec = _spec("interleaved", 3)
    points = _measured(expand_points(spec, "separate"))
    per_pass = len(spec.filesystems) * 3  # 2 configurations x 3 numjobs values
    assert len(points) == 4 * per_pass
    passes = [points[i : i + per_pass] for i in range(0, len(points), per_pass)]
    assert [{p.role for p in chunk} for chunk in passes] == [
        {"clean"},
        {"clean"},
        {"evidence"},
        {"clean"},
    ]
    assert [p.repeat for p in passes[3]] == [2] * per_pass
    assert [p.seq for p in points] == list(range(2, len(points) + 2))


def test_sequential_puts_the_evidence_run_among_each_points_repetitions():
    points = _measured(expand_points(_spec("sequential", 2), "separate"))
    first = [(p.role, p.repeat) for p in points[:3]]
    assert first == [("clean", 0), ("evidence", 0), ("clean", 1)]
    assert len({p.key() for p in points[:3]}) == 1


def test_random_shuffles_the_same_runs():
    spec = _spec("random", 2)
    shuffled = expand_points(spec, "separate")
    assert Counter(p.role for p in shuffled) == {"clean": 12, "evidence": 6, "warmup": 2}
    assert expand_points(spec, "separate") == shuffled  # run.seed fixes the order


def test_without_a_mode_every_point_is_clean():
    points = _measured(expand_points(_spec("interleaved", 2)))
    assert {p.role for p in points} == {"clean"} and len(points) == 12
