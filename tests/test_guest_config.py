"""The guest description, boot grouping and the host/agent messages (no boot)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from fslab.guest.order import boot_groups
from fslab.guest.protocol import (
    PointRequest,
    outcome_from_json,
    outcome_to_json,
    request_from_json,
    request_to_json,
)
from fslab.spec.load import load_spec
from fslab.spec.points import expand_points
from fslab.spec.vm import GuestConfig
from fslab.store.db import PointOutcome
from fslab.store.facts import GuestFacts, PointFacts


def test_possible_cpus_below_cpus_is_refused_naming_both() -> None:
    with pytest.raises(ValidationError, match=r"possible_cpus \(2\) must be at least cpus \(4\)"):
        GuestConfig(kernel="6.1", cpus=4, possible_cpus=2)


def test_memory_defaults_to_the_image_plus_headroom() -> None:
    config = GuestConfig(kernel="6.1")
    assert config.memory_bytes(4 * 1024**3) == 5 * 1024**3 + 2 * 1024**2
    assert config.memory_bytes(64 * 1024**2) == 2 * 1024**3  # at least 2 GiB
    # per-CPU areas of 1728 possible CPUs take their share of the guest's RAM
    wide = GuestConfig(kernel="6.1", possible_cpus=1728)
    assert wide.memory_bytes(2 * 1024**3) == 3 * 1024**3 + 1728 * 1024**2
    assert GuestConfig(kernel="6.1", memory="3GiB").memory_bytes(16 * 1024**3) == 3 * 1024**3
    with pytest.raises(ValidationError, match="at least 256MiB"):
        GuestConfig(kernel="6.1", memory="100MiB")


def test_boot_timeout_depends_on_the_accelerator_unless_set() -> None:
    assert GuestConfig(kernel="6.1").boot_timeout_s("tcg") == 300
    assert GuestConfig(kernel="6.1").boot_timeout_s("kvm") == 120
    assert GuestConfig(kernel="6.1", boot_timeout="2m").boot_timeout_s("tcg") == 120


def test_sweep_axes_override_the_guest_and_are_validated() -> None:
    base = GuestConfig(kernel="6.1", cpus=2)
    swept = base.with_axes({"kernel": "5.10", "possible_cpus": 1728, "numjobs": 4})
    assert (swept.kernel, swept.cpus, swept.possible_cpus) == ("5.10", 2, 1728)
    assert base.with_axes({"numjobs": 4}) is base
    with pytest.raises(ValidationError):
        base.with_axes({"possible_cpus": 1})  # fewer possible than online


def _points(repeat: int):
    spec, _ = load_spec(
        "cached-write-ext4-vs-xfs", overrides=[f"run.repeat={repeat}", 'sweep.conv=[""]']
    )
    return spec, expand_points(spec)


def test_one_guest_is_one_boot_for_every_point() -> None:
    _, points = _points(3)
    groups = boot_groups(points, lambda _p: GuestConfig(kernel="6.1"))
    assert len(groups) == 1 and groups[0].points == tuple(points)


def test_several_guests_boot_once_per_repetition_in_turned_round_order() -> None:
    _, points = _points(3)
    a, b = GuestConfig(kernel="5.10"), GuestConfig(kernel="6.1")

    def guest_of(point):  # ext4 points on 5.10, xfs points on 6.1, like a kernel axis
        return a if point.filesystem.label == "ext4" else b

    groups = boot_groups(points, guest_of)
    assert [(g.guest.kernel, {p.repeat for p in g.points}) for g in groups] == [
        ("5.10", {0}),
        ("6.1", {0}),
        ("6.1", {1}),
        ("5.10", {1}),
        ("5.10", {2}),
        ("6.1", {2}),
    ]
    assert sorted(p.seq for g in groups for p in g.points) == [p.seq for p in points]
    for group in groups:  # run order kept inside a boot
        assert [p.seq for p in group.points] == sorted(p.seq for p in group.points)


def test_a_warm_up_joins_its_guests_boot_and_does_not_turn_the_order() -> None:
    spec, _ = load_spec(
        "cached-write-ext4-vs-xfs",
        overrides=[
            "run.repeat=2",
            'sweep.conv=[""]',
            "sweep.possible_cpus=[2, 64]",
            'vm.kernel="6.1"',
        ],
    )
    points = [p for p in expand_points(spec) if p.filesystem.label == "ext4"]
    assert points[0].role == "warmup" and points[0].sweep_dict["possible_cpus"] == 64

    def guest_of(point):
        return GuestConfig(kernel="6.1", possible_cpus=point.sweep_dict["possible_cpus"])

    groups = boot_groups(points, guest_of)
    boots = [(g.guest.possible_cpus, {p.repeat for p in g.points}) for g in groups]
    assert boots == [(2, {0}), (64, {0}), (64, {1}), (2, {1})]  # A B, B A as without one
    (warmup_boot,) = [g for g in groups if any(p.role == "warmup" for p in g.points)]
    assert warmup_boot.guest.possible_cpus == 64 and warmup_boot.points[0].role == "warmup"


def test_a_request_carries_the_point_across_and_back() -> None:
    spec, points = _points(1)
    point = points[-1]
    request = request_from_json(request_to_json(PointRequest.for_point(spec, point)))
    spec2, point2 = request.spec_and_point()
    assert spec2 == spec and point2 == point


def test_an_outcome_survives_json_as_the_store_takes_it() -> None:
    outcome = PointOutcome(
        status="ok",
        metrics={"dd.bw_bytes_s": 1.5e8},
        commands=[(["mkfs.ext4", "/dev/loop0"], 0, 0.5)],
        collectors={"perf": ("unavailable", "no perf")},
        facts=PointFacts(guest=GuestFacts(nr_cpu_ids=1728)),
    )
    assert outcome_from_json(json.loads(json.dumps(outcome_to_json(outcome)))) == outcome


def test_the_agent_refuses_a_target_a_guest_cannot_see(tmp_path) -> None:
    from fslab.base.hostfacts import collect_host_facts
    from fslab.guest.agent import run_request

    spec, points = _points(1)
    spec = spec.model_copy(
        update={"target": spec.target.model_copy(update={"kind": "file", "path": str(tmp_path)})}
    )
    path = tmp_path / "req-000001.json"
    path.write_text(json.dumps(request_to_json(PointRequest.for_point(spec, points[0]))))
    outcome = run_request(path, collect_host_facts())
    assert outcome.status == "failed" and "RAM loop images only" in outcome.error
    path.write_text("{}")
    broken = run_request(path, collect_host_facts())
    assert broken.status == "failed" and broken.error.startswith("fslab agent: TypeError")
    assert "Traceback" in broken.stderr


def test_the_guest_axes_chose_the_guest_and_are_not_passed_to_the_workload() -> None:
    spec, _ = load_spec(
        "ext4-fsync-storm", overrides=['sweep.kernel=["5.10", "6.1"]', "sweep.numjobs=[4]"]
    )
    point = next(p for p in expand_points(spec) if p.sweep_dict["kernel"] == "6.1")
    inner_spec, inner_point = PointRequest.for_point(spec, point).spec_and_point()
    assert "kernel" not in inner_spec.sweep and inner_spec.sweep["numjobs"] == [4]
    assert inner_point.sweep_dict == {"numjobs": 4}
    assert (inner_point.seq, inner_point.repeat) == (point.seq, point.repeat)
