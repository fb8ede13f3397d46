"""Setup steps and several devices: the spec's typed [[setup]] and target.devices, and a
report's steps and layout read into them.

The reports are the corpus's (tests/data/reports, written in the project's
words around the reporters' commands). Text never becomes a command: only
the typed steps a spec may hold are written, and a path cannot leave the
scratch filesystem.
"""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from fslab.base.errors import FslabError
from fslab.base.proc import CommandLog
from fslab.base.units import parse_size_bytes
from fslab.measure.setup import inside, restore_sysctls, setup_steps
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.setupwrite import replay_all
from fslab.reproduce.specwrite import build_spec
from fslab.spec.model import Spec
from fslab.spec.setup import QueueStep, SysctlStep
from fslab.target.md import mdadm_create_argv
from fslab.target.scratch import scratch_filesystem
from tests.conftest import requires_root

REPORTS = Path(__file__).parent / "data" / "reports"
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)
BASE = {"name": "s", "filesystems": [{"label": "a", "type": "ext4"}], "workload": {"kind": "dd"}}


def _spec(*steps: dict) -> Spec:
    return Spec.model_validate({**BASE, "setup": list(steps)})


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({"kind": "file", "path": "../../etc/passwd", "size": "1k"}, "path"),
        ({"kind": "file", "path": "/etc/passwd", "size": "1k"}, "path"),
        ({"kind": "mkdir", "path": ".hidden"}, "path"),
        ({"kind": "mkdir", "path": "a/$(reboot)"}, "path"),
        ({"kind": "sysctl", "name": "kernel.core_pattern", "value": 1}, "name"),
        ({"kind": "sysctl", "name": "vm.dirty_bytes", "value": -1}, "value"),
        ({"kind": "file", "path": "f", "size": "2PiB"}, "size"),
        ({"kind": "shell", "argv": ["rm", "-rf", "/"]}, "setup.0"),
        ({"kind": "queue", "name": "../../../dev/sda", "value": "0"}, "name"),
        ({"kind": "queue", "name": "wbt_lat_usec", "value": "0 > /etc/passwd"}, "value"),
    ],
)
def test_a_step_fslab_would_not_do_is_refused_with_its_field(step, field):
    with pytest.raises(ValidationError) as refused:
        _spec(step)
    assert field in str(refused.value)


def test_the_truncated_file_of_a_report_is_replayed_in_the_scratch_filesystem():
    """The fio-on-a-truncated-file report: `truncate -s 100G /mnt/test/file1` becomes a
    sparse file1 in the scratch filesystem, the name fio's filename= is given there,
    scaled as the job's file sizes are: the 100G truncate and the 100G job file stay
    one size on a smaller device, and a question says so."""
    name = "ext4-truncate-100g-jobfile.txt"
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST
    )
    data = tomllib.loads(reproduction.toml)
    (step,) = data["setup"]
    largest = max(parse_size_bytes(v) for v in data["sweep"]["filesize"])
    assert largest < 100 * GIB
    assert step == {
        "kind": "file",
        "path": "file1",
        "size": str(largest),
        "how": "truncate",
        "note": "line 31: truncate -s 100G /mnt/test/file1",
    }
    assert "file1" in str(data["workload"])  # fio's filename, the same name
    assert reproduction.spec.setup[0].size_bytes == largest
    (asked,) = [q for q in reproduction.questions if q.item == "setup"]
    assert "100GiB" in asked.question and "scaled in proportion" in asked.assumed


def test_listed_sysctls_keep_the_twin_in_force():
    """A report listing vm.dirty_bytes = 8589934592 and vm.dirty_ratio = 0 ran with the
    bytes in force: writing the 0 would clear them, so it is not replayed."""
    facts = extract_facts((REPORTS / "xfs-lvm-raid0-fio-6.1.txt").read_text())
    steps, skipped = replay_all(facts.setup)
    assert {(s["name"], s["value"]) for s in steps} == {
        ("vm.dirty_background_bytes", 1073741824),
        ("vm.dirty_bytes", 8589934592),
    }
    assert not skipped


def test_steps_fslab_does_not_repeat_are_listed_with_why():
    facts = extract_facts((REPORTS / "xfs-lkp-aim7-deferred-inactivation.txt").read_text())
    steps, skipped = replay_all(facts.setup)
    assert not steps
    whys = {s.kind: why for s, why in skipped}
    assert "vm.*" in whys["procfs"] and "report text" in whys["file"]


def test_steps_are_done_inside_the_mount_and_settings_put_back(tmp_path):
    """The executor against a stand-in /proc/sys: files and directories made under the
    mount point, the setting written and restored (its twin in force restored)."""
    proc_sys = tmp_path / "proc"
    (proc_sys / "vm").mkdir(parents=True)
    for name, value in (("dirty_bytes", "0"), ("dirty_ratio", "20"), ("drop_caches", "0")):
        (proc_sys / "vm" / name).write_text(f"{value}\n")
    mount = tmp_path / "mnt"
    mount.mkdir()
    spec = _spec(
        {"kind": "mkdir", "path": "d/e"},
        {"kind": "file", "path": "d/f", "size": "1MiB", "how": "write"},
        {"kind": "file", "path": "sparse", "size": "1GiB"},
        {"kind": "sysctl", "name": "vm.dirty_bytes", "value": 33554432},
    )
    log = CommandLog()
    with setup_steps(spec.setup, str(mount), log, proc_sys=proc_sys):
        assert (mount / "d" / "e").is_dir() and (mount / "d" / "f").stat().st_size == 1 << 20
        assert (mount / "sparse").stat().st_size == 1 << 30
        assert (proc_sys / "vm" / "dirty_bytes").read_text().strip() == "33554432"
    assert (proc_sys / "vm" / "dirty_ratio").read_text().strip() == "20"  # the one in force
    lines = [r.shell_line for r in log.records]
    assert lines[0] == f"mkdir -p {mount}/d/e"
    assert lines[-1] == "sysctl -w vm.dirty_ratio=20"


def test_settings_are_put_back_when_the_point_fails(tmp_path):
    proc_sys = tmp_path / "proc"
    (proc_sys / "vm").mkdir(parents=True)
    (proc_sys / "vm" / "vfs_cache_pressure").write_text("100\n")
    step = SysctlStep(kind="sysctl", name="vm.vfs_cache_pressure", value=10)
    with (
        pytest.raises(RuntimeError),
        setup_steps([step], str(tmp_path), CommandLog(), proc_sys=proc_sys),
    ):
        raise RuntimeError("the workload failed")
    assert (proc_sys / "vm" / "vfs_cache_pressure").read_text().strip() == "100"


def test_a_path_that_resolves_outside_is_refused(tmp_path):
    mount = tmp_path / "mnt"
    mount.mkdir()
    (mount / "escape").symlink_to(tmp_path)
    with pytest.raises(Exception, match="outside the scratch filesystem"):
        inside(str(mount), "escape/canary")
    assert not (tmp_path / "canary").exists()


def test_a_setting_that_cannot_be_restored_is_logged_not_raised(tmp_path):
    log = CommandLog()
    restore_sysctls({"vm.vfs_cache_pressure": "100"}, log, tmp_path / "no-such-proc")
    assert log.records[0].returncode == 1 and "cannot set" in log.records[0].stderr


def test_a_queue_setting_goes_to_the_scratch_devices_and_comes_back(tmp_path):
    """Against a stand-in /sys/class/block: the setting is made on each of the point's
    devices, the scheduler's bracketed choice is what is put back, and a partition
    (no queue of its own) is refused before anything is written."""
    sys_block = tmp_path / "block"
    for dev in ("loop7", "loop8"):
        (sys_block / dev / "queue").mkdir(parents=True)
        (sys_block / dev / "queue" / "scheduler").write_text("[none] mq-deadline kyber\n")
        (sys_block / dev / "queue" / "wbt_lat_usec").write_text("2000\n")
    (sys_block / "sda1").mkdir()
    steps = [
        QueueStep(kind="queue", name="wbt_lat_usec", value="0"),
        QueueStep(kind="queue", name="scheduler", value="mq-deadline"),
    ]
    log = CommandLog()
    devices = ("/dev/loop7", "/dev/loop8")
    with setup_steps(steps, str(tmp_path), log, devices=devices, sys_block=sys_block):
        for dev in ("loop7", "loop8"):
            assert (sys_block / dev / "queue" / "wbt_lat_usec").read_text().strip() == "0"
            assert (sys_block / dev / "queue" / "scheduler").read_text().strip() == "mq-deadline"
    for dev in ("loop7", "loop8"):
        assert (sys_block / dev / "queue" / "wbt_lat_usec").read_text().strip() == "2000"
        assert (sys_block / dev / "queue" / "scheduler").read_text().strip() == "none"
    assert log.records[0].argv == ["sh", "-c", f"echo 0 > {sys_block}/loop7/queue/wbt_lat_usec"]
    with (
        pytest.raises(FslabError, match="whole scratch devices only"),
        setup_steps(steps, str(tmp_path), CommandLog(), devices=["/dev/sda1"], sys_block=sys_block),
    ):
        pass


def test_a_report_s_queue_setting_is_replayed_on_the_scratch_device_only():
    """`echo 0 > /sys/block/nvme0n1/queue/wbt_lat_usec` keeps the setting, not the
    reporter's device; other sysfs writes stay listed with why."""
    report = (
        "mkfs.xfs -f /dev/nvme0n1\nmount /dev/nvme0n1 /mnt\n"
        "echo 0 > /sys/block/nvme0n1/queue/wbt_lat_usec\n"
        "echo 1 | sudo tee /sys/fs/ext4/nvme0n1/mb_group_prealloc\n"
        "fio --name=w --directory=/mnt --rw=randwrite --bs=4k --size=1g --fsync=1\n"
    )
    facts = extract_facts(report)
    steps, skipped = replay_all(facts.setup)
    assert [(s["kind"], s["name"], s["value"]) for s in steps] == [("queue", "wbt_lat_usec", "0")]
    assert "nvme0n1" not in str({k: v for k, v in steps[0].items() if k != "note"})
    assert [s.kind for s, _ in skipped] == ["sysfs"]
    assert "block-queue ones a spec may change" in skipped[0][1]


# --- several devices under one btrfs -------------------------------------------------------


def test_devices_are_btrfs_and_loop_images():
    ok = Spec.model_validate(
        {**BASE, "target": {"devices": 4}, "filesystems": [{"label": "b", "type": "btrfs"}]}
    )
    assert ok.target.devices == 4
    with pytest.raises(ValidationError, match="btrfs's own"):
        Spec.model_validate({**BASE, "target": {"devices": 2}})  # ext4 only
    with pytest.raises(ValidationError, match="loop images"):
        Spec.model_validate(
            {
                **BASE,
                "target": {"devices": 2, "kind": "device", "path": "/dev/sdz"},
                "filesystems": [{"label": "b", "type": "btrfs"}],
            }
        )
    with pytest.raises(ValidationError, match="devices"):
        Spec.model_validate({**BASE, "target": {"devices": 9}})


def test_a_btrfs_raid0_report_gets_its_devices_and_profile():
    """btrfs -d raid0 over four NVMe drives: four loop images, the raid0 kept; the
    report's '-m raid' (no such profile) is left out with a question."""
    name = "btrfs-raid0-fio-6.5.txt"
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST
    )
    assert reproduction.spec.target.devices == 4
    reported = reproduction.spec.filesystems[0]
    assert reported.type == "btrfs" and reported.mkfs_options == ["-d", "raid0"]
    asked = {q.item: q for q in reproduction.questions}
    assert "4 RAM-backed loop images" in asked["devices"].assumed
    assert "-m raid is not a btrfs profile" in asked["mkfs options"].question


def test_an_md_array_is_ext4_s_and_xfs_s_way_onto_several_devices():
    ok = Spec.model_validate({**BASE, "target": {"devices": 2, "array": "md-raid1"}})
    assert (ok.target.devices, ok.target.array) == (2, "md-raid1")
    with pytest.raises(ValidationError, match="'md-raid0' needs target"):
        Spec.model_validate({**BASE, "target": {"array": "md-raid0"}})
    with pytest.raises(ValidationError, match="array"):
        Spec.model_validate({**BASE, "target": {"devices": 2, "array": "md-raid5"}})
    assert mdadm_create_argv("md-raid1", "/dev/md100", ["/dev/loop3", "/dev/loop4"]) == [
        "mdadm", "--create", "/dev/md100", "--run", "--level=1", "--raid-devices=2",
        "--metadata=1.2", "--homehost=fslab", "--assume-clean", "--bitmap=none",
        "/dev/loop3", "/dev/loop4",
    ]  # fmt: skip


def test_an_lvm_stripe_in_a_guest_becomes_an_md_raid0_over_as_many_images():
    """The report runs 6.1 in a guest, whose kernel has md: four loop images under an md
    RAID 0, said to stand in for LVM's stripe."""
    name = "xfs-lvm-raid0-fio-6.1.txt"
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST
    )
    assert reproduction.spec.vm is not None
    assert (reproduction.spec.target.devices, reproduction.spec.target.array) == (4, "md-raid0")
    assert "standing in for LVM's stripe" in reproduction.toml
    asked = {q.item: q for q in reproduction.questions}
    assert "md RAID0 over 4 RAM-backed loop images" in asked["devices"].assumed


def test_an_md_layout_on_a_host_without_md_stays_one_device_and_says_where_it_builds():
    name = "xfs-lvm-raid0-fio-6.1.txt"
    facts = extract_facts((REPORTS / name).read_text())
    reproduction = build_spec(facts, source_name=name, host=HOST, guests=False)
    assert (reproduction.spec.target.devices, reproduction.spec.target.array) == (1, None)
    asked = {q.item: q for q in reproduction.questions}
    assert "in a guest" in asked["devices"].assumed
    with_md = build_spec(facts, source_name=name, host=replace(HOST, md=True), guests=False)
    assert with_md.spec.target.array == "md-raid0"


def test_a_configuration_s_steps_are_checked_and_refused_with_their_field():
    spec = {
        **BASE,
        "filesystems": [
            {
                "label": "a",
                "type": "ext4",
                "setup": [{"kind": "file", "path": "../x", "size": "1k"}],
            }
        ],
    }
    with pytest.raises(ValidationError) as refused:
        Spec.model_validate(spec)
    assert "filesystems.0.setup.0" in str(refused.value)


def test_a_report_s_touch_and_chattr_become_an_empty_no_cow_file_before_its_fill():
    """The btrfs NOCOW report: `touch`, `chattr +C`, `fallocate` in its numbered steps,
    a prefill fio that is a step, and the measured jobs differing only in ioengine."""
    name = "btrfs-nocow-fio-sync1-psync-vs-io-uring-vs-libaio-numbered-steps.txt"
    facts = extract_facts((REPORTS / name).read_text())
    steps, _ = replay_all(facts.setup)
    assert [(s["kind"], s["path"], s.get("size")) for s in steps] == [
        ("file", "file.dat", "0"),
        ("nocow", "file.dat", None),
        ("file", "file.dat", str(1 << 30)),
    ]
    assert [s.kind for s in facts.setup][-1] == "fio layout"  # "# prefill the file"
    spec = tomllib.loads(build_spec(facts, source_name=name, host=HOST).toml)
    assert spec["sweep"]["ioengine"] == ["psync", "io_uring", "libaio"]
    assert spec["workload"]["options"]["bs"] == "4k"  # the measured jobs, not the 1M prefill
    assert next(s["size"] for s in spec["setup"]) == "0"  # a touched file is not scaled up


@requires_root
@pytest.mark.root
@pytest.mark.parametrize(("fs_type", "flagged"), [("btrfs", True), ("ext4", False)])
def test_a_no_cow_step_marks_the_file_on_btrfs_and_is_logged_where_there_is_none(fs_type, flagged):
    """On a real filesystem: btrfs takes the flag (lsattr shows C, and the fill keeps it);
    ext4 has none, which the point's log says and the point goes on."""
    spec = _spec(
        {"kind": "nocow", "path": "file.dat"},
        {"kind": "file", "path": "file.dat", "size": "8MiB", "how": "fallocate"},
    )
    log = CommandLog()
    with (
        scratch_filesystem(fs_type, 512 * 1024**2) as (_, mount),
        setup_steps(spec.setup, str(mount), log),
    ):
        attrs = subprocess.run(
            ["lsattr", str(mount / "file.dat")], capture_output=True, text=True, check=True
        ).stdout.split()[0]
        assert ("C" in attrs) is flagged
        assert (mount / "file.dat").stat().st_size == 8 << 20
    chattr = log.records[0]
    assert chattr.argv[:2] == ["chattr", "+C"]
    assert (chattr.returncode == 0) is flagged
    assert flagged or "no No_COW flag" in chattr.stderr
