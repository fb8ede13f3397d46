"""Unit tests (no root) for fslab.target: parsers on recorded outputs, argv builders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fslab.base import proc
from fslab.base.errors import FslabError, GuardRefusal, ToolError, UsageError
from fslab.target import fs, guard, loop
from fslab.target.fill import FILL_PREFIX, target_free_bytes
from fslab.target.leftovers import Leftovers, mount_dir_owner_pid

GiB = 1 << 30
MiB = 1 << 20


def read(data_dir: Path, name: str) -> str:
    return (data_dir / name).read_text()


# --- dumpe2fs -----------------------------------------------------------------


def test_dumpe2fs_default_ext4(data_dir: Path) -> None:
    info = fs.parse_dumpe2fs(read(data_dir, "target_dumpe2fs_ext4_default_16g.txt"))
    assert info["block_size_bytes"] == 4096
    assert info["block_count"] == 4194304
    assert info["reserved_block_count"] == 209715
    assert info["free_blocks"] == 4084441
    assert info["inode_count"] == 1048576
    assert info["inode_size_bytes"] == 256
    assert info["cluster_size_bytes"] == 4096  # no bigalloc: cluster == block
    assert info["journal_size_bytes"] == 128 * MiB
    assert info["journal_blocks"] == 32768
    assert info["journal_features"] == []
    assert info["mount_options"] == "user_xattr acl"
    assert info["label"] is None
    features = info["features"]
    assert isinstance(features, list)
    assert "has_journal" in features and "metadata_csum" in features


def test_dumpe2fs_journal_size_option(data_dir: Path) -> None:
    info = fs.parse_dumpe2fs(read(data_dir, "target_dumpe2fs_ext4_journal1024_16g.txt"))
    assert info["journal_size_bytes"] == 1024 * MiB
    assert info["free_blocks"] == 3855064


def test_dumpe2fs_bigalloc_cluster_size(data_dir: Path) -> None:
    info = fs.parse_dumpe2fs(read(data_dir, "target_dumpe2fs_ext4_bigalloc_16g.txt"))
    assert info["cluster_size_bytes"] == 65536
    assert info["block_size_bytes"] == 4096
    assert "bigalloc" in info["features"]  # type: ignore[operator]


def test_dumpe2fs_after_use_has_journal_features(data_dir: Path) -> None:
    info = fs.parse_dumpe2fs(read(data_dir, "target_dumpe2fs_ext4_used_16g.txt"))
    assert info["journal_features"] == ["journal_64bit", "journal_checksum_v3"]
    fields = info["fields"]
    assert isinstance(fields, dict)
    assert fields["Last mounted on"] == "/tmp/tgtx-mnt"
    assert fields["Filesystem created"].endswith("2026")  # values keep their colons


def test_dumpe2fs_journal_size_from_text_only() -> None:
    info = fs.parse_dumpe2fs("Block size:  4096\nJournal size:  64M\n")
    assert info["journal_size_bytes"] == 64 * MiB


# --- xfs_info / btrfs ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["target_xfs_info_default_16g_device.txt", "target_xfs_info_default_16g_mounted.txt"],
)
def test_xfs_info(data_dir: Path, name: str) -> None:
    info = fs.parse_xfs_info(read(data_dir, name))
    assert info["block_size_bytes"] == 4096
    assert info["data_blocks"] == 4194304
    assert info["agcount"] == 4
    assert info["agsize_blocks"] == 1048576
    assert info["inode_size_bytes"] == 512
    assert info["log_blocks"] == 16384
    assert info["log_size_bytes"] == 16384 * 4096
    assert info["log_internal"] is True
    features = info["features"]
    assert isinstance(features, dict)
    assert features["reflink"] == "1" and features["crc"] == "1"


def test_xfs_info_sections_keep_section_values(data_dir: Path) -> None:
    sections = fs.parse_xfs_info_sections(read(data_dir, "target_xfs_info_default_16g_device.txt"))
    assert sections["meta-data"][""] == "/dev/loop1"
    assert sections["naming"][""] == "version 2"
    assert sections["log"][""] == "internal log"
    assert sections["realtime"][""] == "none"
    assert sections["log"]["sectsz"] == "512"
    assert sections["naming"]["ftype"] == "1"
    assert sections["data"]["imaxpct"] == "25"


def test_btrfs_show(data_dir: Path) -> None:
    info = fs.parse_btrfs_show(read(data_dir, "target_btrfs_show_16g.txt"))
    assert info["label"] == "fslabcap"
    assert info["uuid"] == "646263a7-02dc-4caf-a42b-67bd95538784"
    assert info["total_devices"] == 1
    assert info["bytes_used"] == 144 * 1024
    assert info["devices"] == [
        {"devid": 1, "size_bytes": 16 * GiB, "used_bytes": 536 * MiB, "path": "/dev/loop1"}
    ]


# --- mkfs / mount argv --------------------------------------------------------


def test_mkfs_argv_per_type() -> None:
    assert fs.mkfs_argv("ext4", "/dev/loop3", ["-J", "size=1024"]) == [
        "mkfs.ext4",
        "-F",
        "-q",
        "-J",
        "size=1024",
        "/dev/loop3",
    ]
    assert fs.mkfs_argv("xfs", "/dev/loop3", [], label="scratch") == [
        "mkfs.xfs",
        "-f",
        "-q",
        "-L",
        "scratch",
        "/dev/loop3",
    ]
    assert fs.mkfs_argv("btrfs", "/dev/loop3", ["-m", "single"]) == [
        "mkfs.btrfs",
        "-f",
        "-q",
        "-m",
        "single",
        "/dev/loop3",
    ]


def test_unsupported_fs_type_is_usage_error() -> None:
    with pytest.raises(UsageError, match="ext4, xfs, btrfs"):
        fs.mkfs_argv("zfs", "/dev/loop3", [])
    with pytest.raises(UsageError):
        fs.mount_argv("vfat", "/dev/loop3", [], "/mnt")
    with pytest.raises(UsageError):
        fs.describe_argv("f2fs", "/dev/loop3")


def test_mount_argv() -> None:
    assert fs.mount_argv("/dev/loop3", "ext4", ["noatime", "data=ordered"], "/run/x") == [
        "mount",
        "-t",
        "ext4",
        "-o",
        "noatime,data=ordered",
        "/dev/loop3",
        "/run/x",
    ]
    assert fs.mount_argv("/dev/loop3", "xfs", [], "/run/x") == [
        "mount",
        "-t",
        "xfs",
        "/dev/loop3",
        "/run/x",
    ]


def test_describe_argv() -> None:
    assert fs.describe_argv("ext4", "/dev/loop1") == ["dumpe2fs", "-h", "/dev/loop1"]
    assert fs.describe_argv("xfs", "/dev/loop1") == ["xfs_info", "/dev/loop1"]
    assert fs.describe_argv("btrfs", "/dev/loop1") == ["btrfs", "filesystem", "show", "/dev/loop1"]


def test_tool_complaint_drops_usage_text(data_dir: Path) -> None:
    xfs_err = read(data_dir, "target_mkfs_xfs_bad_option_stderr.txt")
    assert fs._tool_complaint(xfs_err) == (
        "Invalid value 0 for -d agcount option. Value is too small."
    )
    ext4_err = read(data_dir, "target_mkfs_ext4_bad_option_stderr.txt")
    assert fs._tool_complaint(ext4_err) == "Invalid filesystem option set: nosuchfeature"


def test_make_filesystem_error_carries_stderr(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = read(data_dir, "target_mkfs_xfs_bad_option_stderr.txt")

    def failing_run(argv: list[str], **_: object) -> None:
        raise ToolError("mkfs.xfs failed", stderr=stderr)

    monkeypatch.setattr(fs, "run", failing_run)
    with pytest.raises(ToolError, match="agcount") as caught:
        fs.make_filesystem("xfs", "/dev/loop9", ["-d", "agcount=0"])
    assert caught.value.stderr == stderr


# --- procfs parsers -----------------------------------------------------------


def test_parse_mountinfo(data_dir: Path) -> None:
    entries = guard.parse_mountinfo(read(data_dir, "target_mountinfo.txt"))
    root = next(e for e in entries if e.mount_point == "/")
    assert root.major_minor == "254:0"
    assert root.source == "/dev/vda"
    assert root.fs_type == "ext4"
    spaced = next(e for e in entries if e.fs_type == "xfs")
    assert spaced.mount_point == "/run/tgtx cap/a b"
    assert spaced.per_mount_options == "rw,noatime,nodiratime"
    assert spaced.super_options == "rw,inode64,logbufs=8,logbsize=32k,noquota"
    assert spaced.major_minor == "7:1"
    assert spaced.source == "/dev/loop1"


def test_parse_mountinfo_optional_fields() -> None:
    line = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue"
    (entry,) = guard.parse_mountinfo(line)
    assert entry.fs_type == "ext3"
    assert entry.source == "/dev/root"
    assert entry.super_options == "rw,errors=continue"


def test_parse_swaps(data_dir: Path) -> None:
    assert guard.parse_swaps(read(data_dir, "target_proc_swaps.txt")) == ["/dev/loop3"]
    assert guard.parse_swaps("Filename Type Size Used Priority\n") == []


def test_unescape_octal() -> None:
    assert guard.unescape_octal(r"/run/a\040b\011c") == "/run/a b\tc"
    assert guard.unescape_octal("/plain") == "/plain"
    assert guard.unescape_octal("\\x") == "\\x"


def test_parse_wipefs_json(data_dir: Path) -> None:
    assert guard.parse_wipefs_json(read(data_dir, "target_wipefs_dos_disk.json")) == ["dos"]
    assert guard.parse_wipefs_json(read(data_dir, "target_wipefs_ext4.json")) == ["ext4"]
    assert guard.parse_wipefs_json('{"signatures": [\n\n]}') == []
    assert guard.parse_wipefs_json("") == []


# --- guard rules that need no root --------------------------------------------


def test_guard_refuses_regular_file_not_allowed(tmp_path: Path) -> None:
    f = tmp_path / "disk.img"
    f.write_bytes(b"x" * 4096)
    with pytest.raises(GuardRefusal) as caught:
        guard.check_device(str(f), allowed=[])
    assert caught.value.rule == "not-allowed"
    assert "--allow-device" in str(caught.value)


def test_guard_refuses_char_device_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(GuardRefusal) as caught:
        guard.check_device("/dev/null", allowed=["/dev/null"])
    assert caught.value.rule == "not-block-device"
    missing = str(tmp_path / "nope")
    with pytest.raises(GuardRefusal, match="does not exist") as caught:
        guard.check_device(missing, allowed=[missing])
    assert caught.value.rule == "not-block-device"


# --- fill arithmetic ----------------------------------------------------------


def test_target_free_bytes() -> None:
    assert target_free_bytes(100 * GiB, percent=30, leave_free_bytes=None) == 70 * GiB
    assert target_free_bytes(100 * GiB, percent=0, leave_free_bytes=None) == 100 * GiB
    assert target_free_bytes(100 * GiB, percent=None, leave_free_bytes=GiB) == GiB


@pytest.mark.parametrize(
    ("percent", "leave"),
    [(None, None), (50.0, GiB), (100.0, None), (-1.0, None), (None, -1)],
)
def test_target_free_bytes_rejects(percent: float | None, leave: int | None) -> None:
    with pytest.raises(UsageError):
        target_free_bytes(GiB, percent=percent, leave_free_bytes=leave)


def test_fill_prefix() -> None:
    assert FILL_PREFIX == "fslab-fill-"


# --- names, pids, leftovers ---------------------------------------------------


def test_image_name_roundtrip() -> None:
    name = loop.image_name()
    assert name.startswith(f"fslab-{os.getpid()}-") and name.endswith(".img")
    assert loop.image_owner_pid(name) == os.getpid()
    assert loop.image_owner_pid("/dev/shm/" + loop.image_name(pid=42)) == 42
    for other in ("fslab-colltest-a.img", "fslab-12-XYZ.img", "fslab-12-0123abcd.img.bak"):
        assert loop.image_owner_pid(other) is None


def test_mount_dir_owner_pid() -> None:
    assert mount_dir_owner_pid("/run/fslab/mnt-123-0123abcd") == 123
    assert mount_dir_owner_pid("/run/fslab/mnt-x-0123abcd") is None
    assert mount_dir_owner_pid("/run/fslab/other") is None


def test_pid_alive_sees_dead_and_zombie_processes() -> None:
    assert proc.pid_alive(os.getpid())
    reaped = subprocess.Popen([sys.executable, "-c", "pass"])
    reaped.wait()
    assert not proc.pid_alive(reaped.pid)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while proc.pid_alive(zombie.pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # exits but is not reaped yet: a zombie
    assert not proc.pid_alive(zombie.pid)
    zombie.wait()


def test_leftovers_empty() -> None:
    assert Leftovers().empty()
    assert not Leftovers(images=["/dev/shm/fslab-1-0123abcd.img"]).empty()


# --- deferred interrupts ------------------------------------------------------


def test_deferred_interrupts_delivers_after_block() -> None:
    finished_inside = False
    with pytest.raises(KeyboardInterrupt), loop.deferred_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        finished_inside = True
    assert finished_inside
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_deferred_interrupts_quiet_without_signal() -> None:
    with loop.deferred_interrupts():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# --- LoopImage without root ---------------------------------------------------


def test_loop_image_size_validation() -> None:
    with pytest.raises(UsageError):
        loop.LoopImage(0)
    with pytest.raises(UsageError):
        loop.LoopImage(1000)


def test_loop_image_refuses_impossible_size(tmp_path: Path) -> None:
    with (
        pytest.raises(FslabError, match="free there"),
        loop.LoopImage(1 << 60, directory=str(tmp_path)),
    ):
        pass
    assert list(tmp_path.iterdir()) == []


def test_loop_image_removes_image_when_losetup_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_run(argv: list[str], **_: object) -> None:
        assert argv[0] == "losetup"
        raise ToolError("losetup: cannot find an unused loop device", stderr="no free loop")

    monkeypatch.setattr(loop, "run", failing_run)
    with (
        pytest.raises(ToolError, match="could not attach"),
        loop.LoopImage(16 * MiB, directory=str(tmp_path)),
    ):
        pass
    assert list(tmp_path.iterdir()) == []


# --- orphan workloads -----------------------------------------------------------


def test_a_killed_fslab_s_command_workload_is_stopped_by_its_mark(tmp_path: Path) -> None:
    """A spec command's processes have any name: the cleanup after a killed fslab stops
    the ones carrying the workload mark for this mount, and leaves an unmarked process
    working there (a user's shell) alone, as it leaves any process of another name."""
    from fslab.target.leftovers import stop_orphan_workloads

    mark = {**os.environ, proc.WORKLOAD_MARK: str(tmp_path)}
    other = {**os.environ, proc.WORKLOAD_MARK: "/run/fslab/elsewhere"}
    marked = subprocess.Popen(["sh", "-c", "sleep 60; :"], cwd=tmp_path, env=mark)
    elsewhere = subprocess.Popen(["sleep", "60"], cwd=tmp_path, env=other)
    user = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not proc.marked_workload(marked.pid, str(tmp_path)):
            time.sleep(0.01)  # until sh has exec'd with its environment
        left = stop_orphan_workloads(str(tmp_path), wait_s=5, names=())
        assert left == []
        assert marked.wait(timeout=5) == -signal.SIGKILL
        assert elsewhere.poll() is None and user.poll() is None
    finally:
        for p in (marked, elsewhere, user):
            p.kill()
            p.wait()
