"""Spec validation, overrides and expansion (no root needed)."""

from __future__ import annotations

import tomllib

import pytest

from fslab.base.errors import SpecError
from fslab.drive.rounds import QUICK_BUDGET_S
from fslab.measure import plan
from fslab.spec.load import (
    apply_override,
    guest_overrides,
    load_spec,
    parse_override,
    preset_names,
    validate_spec,
)
from fslab.spec.model import sweep_combinations
from fslab.spec.points import expand_points
from fslab.store.db import Store

MINIMAL = {
    "name": "t",
    "filesystems": [{"label": "a", "type": "ext4"}, {"label": "b", "type": "xfs"}],
    "workload": {"kind": "fio", "options": {"rw": "randwrite", "bs": "4k", "size": "1m"}},
    "sweep": {"numjobs": [1, 4]},
}


def _with(**changes):
    data = {**MINIMAL, **changes}
    return validate_spec(data)


def test_presets_load_in_full_and_quick_form():
    assert {"ext4-fsync-storm", "cached-write-ext4-vs-xfs"} <= set(preset_names())
    for name in preset_names():
        full, text = load_spec(name)
        quick, _ = load_spec(name, quick=True)
        assert tomllib.loads(text)["name"] == name
        assert len(expand_points(quick)) <= len(expand_points(full))
        assert quick.runtime_s <= full.runtime_s


def test_fsync_storm_quick_form_matches_the_issue():
    spec, _ = load_spec("ext4-fsync-storm", quick=True)
    assert [fs.label for fs in spec.filesystems] == ["ext4-default", "ext4-journal1g"]
    assert spec.sweep["numjobs"] == [256, 1024] and spec.run.repeat == 2
    assert spec.run.warmup == 1
    # the planned runs (warm-ups, 2 clean and 1 evidence run a point) at about 12 s each
    # leave the questions room in the quick form's 255 s budget, so make demo stays
    # under 5 min with start-up and the report
    planned = len(expand_points(spec, "separate"))
    assert planned == 2 + (2 + 1) * 2 * 2
    assert planned * 12 <= 0.7 * QUICK_BUDGET_S
    assert "-J" in spec.filesystems[1].mkfs_options
    assert "lazy_itable_init=0,lazy_journal_init=0" in spec.filesystems[0].mkfs_options


def test_interleaved_order_alternates_configurations():
    spec = _with(run={"repeat": 2, "warmup": 0})
    points = expand_points(spec)
    assert len(points) == 2 * 2 * 2
    assert [p.filesystem.label for p in points[:4]] == ["a", "b", "a", "b"]
    assert [p.repeat for p in points[:4]] == [0, 0, 0, 0]
    assert [p.seq for p in points] == list(range(8))


def test_sequential_and_random_orders():
    seq = expand_points(_with(run={"order": "sequential", "repeat": 2}))
    assert [p.filesystem.label for p in seq[:4]] == ["a", "a", "a", "a"]
    rnd1 = expand_points(_with(run={"order": "random", "repeat": 2, "seed": 3}))
    rnd2 = expand_points(_with(run={"order": "random", "repeat": 2, "seed": 3}))
    assert [p.key() for p in rnd1] == [p.key() for p in rnd2]
    assert sorted(p.key() for p in rnd1) == sorted(p.key() for p in seq)


def test_sweep_combinations_cartesian():
    combos = sweep_combinations({"numjobs": [1, 2], "bs": ["4k", "16k"]})
    assert len(combos) == 4
    assert combos[0] == (("numjobs", 1), ("bs", "4k"))
    assert sweep_combinations({}) == [()]


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"sweep": {"numjobs": [0]}}, "sweep.numjobs"),
        ({"sweep": {"numjobs": [10**9]}}, "sweep.numjobs"),
        ({"sweep": {"directory": ["/tmp"]}}, "fslab sets 'directory'"),
        ({"sweep": {"fill_percent": [150]}}, "fill_percent"),
        ({"filesystems": [{"label": "a", "type": "zfs"}]}, "filesystems.0.type"),
        ({"filesystems": []}, "filesystems"),
        ({"filesystems": [{"label": "a", "type": "ext4"}] * 2}, "labels must be unique"),
        ({"target": {"size": "-1G"}}, "target.size"),
        ({"target": {"size": "1MiB"}}, "at least 64MiB"),
        ({"target": {"kind": "device"}}, "needs target.path"),
        ({"run": {"runtime": "0"}}, "run.runtime"),
        ({"run": {"repeat": 0}}, "run.repeat"),
        ({"bogus": 1}, "unknown field"),
        ({"workload": {"kind": "fio"}}, "exactly one of"),
        ({"workload": {"kind": "nope"}}, "workload"),
    ],
)
def test_invalid_specs_name_the_field(changes, needle):
    with pytest.raises(SpecError) as info:
        _with(**changes)
    assert needle in str(info.value)
    assert info.value.exit_code == 2


def test_override_parsing_and_application():
    path, value = parse_override("sweep.numjobs=[1,64,2048]")
    assert path == ["sweep", "numjobs"] and value == [1, 64, 2048]
    assert parse_override("run.repeat=5")[1] == 5
    assert parse_override("run.runtime=30s")[1] == "30s"  # not TOML: kept as text
    data = {"filesystems": [{"label": "a"}]}
    apply_override(data, ["filesystems", "0", "type"], "xfs")
    assert data["filesystems"][0]["type"] == "xfs"
    with pytest.raises(SpecError):
        apply_override(data, ["filesystems", "3", "type"], "xfs")
    with pytest.raises(SpecError):
        parse_override("no-equals-sign")


def test_set_overrides_are_validated_like_the_file():
    spec, _ = load_spec("ext4-fsync-storm", overrides=["sweep.numjobs=[1,64,2048]", "run.repeat=5"])
    assert spec.sweep["numjobs"] == [1, 64, 2048] and spec.run.repeat == 5
    with pytest.raises(SpecError, match=r"sweep\.numjobs"):
        load_spec("ext4-fsync-storm", overrides=["sweep.numjobs=[0]"])


def test_unknown_preset_and_missing_file():
    with pytest.raises(SpecError, match="no preset named"):
        load_spec("no-such-preset")
    with pytest.raises(SpecError, match="not found"):
        load_spec("/nonexistent/spec.toml")


def test_bad_toml_is_a_spec_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unterminated")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(str(bad))


def test_dd_workload_axes():
    spec, _ = load_spec("cached-write-ext4-vs-xfs")
    assert spec.workload.kind == "dd"
    with pytest.raises(SpecError, match="dd workload can sweep"):
        load_spec("cached-write-ext4-vs-xfs", overrides=["sweep.numjobs=[1]"])


def test_target_option_forms():
    from fslab.spec.load import target_overrides

    spec, _ = load_spec("cached-write-ext4-vs-xfs", overrides=target_overrides("file:/var/tmp"))
    assert (spec.target.kind, spec.target.path) == ("file", "/var/tmp")
    spec, _ = load_spec("cached-write-ext4-vs-xfs", overrides=target_overrides("device:/dev/sdz"))
    assert (spec.target.kind, spec.target.path) == ("device", "/dev/sdz")
    spec, _ = load_spec("cached-write-ext4-vs-xfs", overrides=target_overrides("ram"))
    assert spec.target.kind == "ram" and not spec.target.path
    for bad in ("file", "disk:/dev/sda", "ram:/x"):
        with pytest.raises(SpecError, match="expected ram, file:DIR"):
            target_overrides(bad)


def test_target_limits_are_parsed_and_checked():
    from fslab.spec.load import load_spec

    spec, _ = load_spec(
        "ext4-fsync-storm",
        quick=True,
        overrides=['target.limits={write_iops=64000, write_bps="250MiB"}'],
    )
    limits = spec.target.limits.device_limits()
    assert (limits.write_iops, limits.write_bps, limits.read_iops) == (64000, 250 << 20, None)
    assert limits.describe() == "write 64.0K IOPS, write 262.1MB/s"
    for bad, field in (
        ("{write_iops=0}", "target.limits.write_iops"),
        ('{write_bps="1k"}', "target.limits.write_bps"),
        ("{iops=5}", "target.limits.iops"),
    ):
        with pytest.raises(SpecError, match=field.replace(".", r"\.")):
            load_spec("ext4-fsync-storm", overrides=[f"target.limits={bad}"])


# --- guests: [vm], guest axes and the run flags ---------------------------------------

GUEST_BASE = {
    "name": "g",
    "filesystems": [{"label": "a", "type": "ext4"}],
    "workload": {"kind": "fio", "options": {"rw": "write", "size": "1M"}},
}


def test_guest_axes_are_not_fio_options_and_imply_a_guest():
    spec = validate_spec(
        {**GUEST_BASE, "sweep": {"kernel": ["5.10", "6.1"], "possible_cpus": [2, 1728]}}
    )
    assert spec.vm is not None
    guests = {spec.guest_of(p.sweep_dict) for p in expand_points(spec)}
    assert {(g.kernel, g.possible_cpus) for g in guests} == {
        ("5.10", 2),
        ("5.10", 1728),
        ("6.1", 2),
        ("6.1", 1728),
    }
    argv = plan.workload_plan(spec, {"kernel": "6.1", "possible_cpus": 2}, "/mnt/x").run_argv
    assert not any(a.startswith(("--kernel", "--possible_cpus")) for a in argv)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"sweep": {"possible_cpus": [2, 1728]}}, "vm.kernel"),
        (
            {"vm": {"kernel": "6.1", "cpus": 4}, "sweep": {"possible_cpus": [2]}},
            "sweep.possible_cpus",
        ),
        ({"vm": {"kernel": "6.1", "accel": "xen"}}, "vm.accel"),
        ({"vm": {"kernel": "6.1", "cpus": 0}}, "vm.cpus"),
        ({"vm": {"kernel": "6.1", "memory": "1MiB"}}, "vm.memory"),
        ({"vm": {"kernel": "6.1"}, "target": {"kind": "file", "path": "/tmp"}}, "target.kind"),
        ({"sweep": {"kernel": ["6.1"], "cpus": ["two"]}}, "sweep.cpus"),
    ],
)
def test_bad_guest_input_names_its_field(extra, field):
    with pytest.raises(SpecError) as caught:
        validate_spec({**GUEST_BASE, **extra})
    assert f"  - {field}" in str(caught.value) or f"- {field}:" in str(caught.value)
    assert caught.value.exit_code == 2


def test_guest_flags_set_vm_and_replace_a_swept_axis():
    assert guest_overrides({"kernel": "6.1", "cpus": None}, []) == ['vm.kernel="6.1"']
    assert guest_overrides({"possible_cpus": 1728}, ["possible_cpus", "conv"]) == [
        "vm.possible_cpus=1728",
        "sweep.possible_cpus=[1728]",
    ]


def test_run_with_an_unknown_kernel_is_exit_2_before_a_campaign_exists(tmp_path):
    from typer.testing import CliRunner

    from fslab.cli import app

    db = tmp_path / "r.db"
    argv = ["run", "cached-write-ext4-vs-xfs", "--no-preflight", "--db", str(db)]
    result = CliRunner().invoke(app, [*argv, "--kernel", "4.14.0-99-amd64"])
    assert result.exit_code == 2, result.output
    assert "4.14.0-99-amd64" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, [*argv, "--kernel", "6.1", "--cpus", "0"])
    assert result.exit_code == 2 and "vm.cpus" in result.output
    with Store(db) as store:
        assert store.campaigns() == []
