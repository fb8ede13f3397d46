"""Scratch targets end to end: loop image, mkfs, mount, describe, fill, release.

Images go to a private directory under /dev/shm and mounts under a private
directory in /run (prefix fslabtgt-), so leftover hunting here can only ever
reclaim what these tests made.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import requires_root

from fslab.base.errors import ToolError
from fslab.base.proc import CommandLog
from fslab.target.fill import fill_filesystem, free_bytes, total_bytes
from fslab.target.fs import Mount, describe_filesystem, make_filesystem
from fslab.target.guard import check_device, read_mountinfo
from fslab.target.leftovers import cleanup_leftovers, find_leftovers
from fslab.target.loop import LoopImage, image_owner_pid, loop_backing_files, loops_backed_by

pytestmark = [requires_root, pytest.mark.root]

MiB = 1 << 20
GiB = 1 << 30
REPO_SRC = str(Path(__file__).resolve().parents[2] / "src")


def mounts_under(directory: str) -> list[str]:
    return [e.mount_point for e in read_mountinfo() if e.mount_point.startswith(directory + "/")]


class Dirs:
    """Private image and mount directories, force-cleaned at teardown."""

    def __init__(self) -> None:
        self.images = tempfile.mkdtemp(prefix="fslabtgt-img-", dir="/dev/shm")
        self.mounts = tempfile.mkdtemp(prefix="fslabtgt-mnt-", dir="/run")

    def assert_clean(self) -> None:
        assert os.listdir(self.images) == [], "image left behind"
        assert os.listdir(self.mounts) == [], "mount point directory left behind"
        assert mounts_under(self.mounts) == []
        assert [d for d, b in loop_backing_files().items() if b.startswith(self.images)] == []

    def force_clean(self) -> None:
        for mountpoint in reversed(mounts_under(self.mounts)):
            subprocess.run(["umount", "--lazy", mountpoint], check=False)
        for device, backing in loop_backing_files().items():
            if backing.startswith(self.images + "/"):
                subprocess.run(["losetup", "--detach", device], check=False)
        shutil.rmtree(self.images, ignore_errors=True)
        shutil.rmtree(self.mounts, ignore_errors=True)


@pytest.fixture
def dirs(no_leaks: None) -> Iterator[Dirs]:
    box = Dirs()
    try:
        yield box
    finally:
        box.force_clean()


def released(image: LoopImage) -> bool:
    return not os.path.exists(image.image_path) and loops_backed_by(image.image_path) == []


# --- end to end ---------------------------------------------------------------

CASES = {
    "ext4": (["-J", "size=16"], "journal_size_bytes", 16 * MiB),
    "xfs": (["-l", "size=96m"], "log_size_bytes", 96 * MiB),
}


@pytest.mark.parametrize("fs_type", sorted(CASES))
def test_end_to_end(dirs: Dirs, fs_type: str) -> None:
    options, journal_key, journal_bytes = CASES[fs_type]
    log = CommandLog()
    with LoopImage(GiB, directory=dirs.images, log=log) as image:
        assert image.device.startswith("/dev/loop")
        assert image_owner_pid(image.image_path) == os.getpid()
        assert os.stat(image.image_path).st_blocks == 0  # sparse
        check_device(image.device, allowed=[image.device])  # fresh image: no signature
        make_filesystem(fs_type, image.device, options, label="fslabtgt", log=log)
        facts = describe_filesystem(fs_type, image.device, log=log)
        assert facts[journal_key] == journal_bytes
        assert facts["block_size_bytes"] == 4096
        assert facts["raw"]
        if fs_type == "ext4":  # xfs_info does not show the label
            assert facts["label"] == "fslabtgt"
        with Mount(image.device, fs_type, ["noatime"], base_dir=dirs.mounts, log=log) as mnt:
            assert os.path.dirname(mnt.mountpoint) == dirs.mounts
            assert os.path.basename(mnt.mountpoint).startswith(f"mnt-{os.getpid()}-")
            per_mount, superblock = mnt.effective_options().split(" / ")
            assert "noatime" in per_mount.split(",")
            assert superblock.startswith("rw")
            total = total_bytes(mnt.mountpoint)
            half = fill_filesystem(mnt.mountpoint, percent=60)
            used_fraction = 1 - free_bytes(mnt.mountpoint) / total
            assert 0.595 <= used_fraction <= 0.605
            assert half.bytes_filled == half.free_bytes_before - half.free_bytes_after
            leave = 100 * MiB
            rest = fill_filesystem(mnt.mountpoint, leave_free_bytes=leave)
            assert leave - MiB <= rest.free_bytes_after <= leave
            assert rest.free_bytes_after == free_bytes(mnt.mountpoint)
            names = sorted(os.listdir(mnt.mountpoint))
            assert "fslab-fill-0" in names and "fslab-fill-1" in names
    assert released(image)
    dirs.assert_clean()
    commands = [argv[0] for argv in (r.argv for r in log.records)]
    assert commands[:2] == ["losetup", f"mkfs.{fs_type}"]
    assert "mount" in commands and "umount" in commands and commands[-1] == "losetup"


def test_btrfs_mount_and_describe(dirs: Dirs) -> None:
    with LoopImage(512 * MiB, directory=dirs.images) as image:
        make_filesystem("btrfs", image.device, ["-m", "single"], label="fslabtgt")
        facts = describe_filesystem("btrfs", image.device)
        assert facts["label"] == "fslabtgt"
        assert facts["devices"][0]["size_bytes"] == 512 * MiB  # type: ignore[index]
        with Mount(image.device, "btrfs", ["noatime"], base_dir=dirs.mounts) as mnt:
            assert "noatime" in mnt.effective_options()
    dirs.assert_clean()


# --- cleanup on errors --------------------------------------------------------


def test_cleanup_after_exception(dirs: Dirs) -> None:
    with (
        pytest.raises(RuntimeError, match="workload blew up"),
        LoopImage(64 * MiB, directory=dirs.images) as image,
    ):
        make_filesystem("ext4", image.device, [])
        with Mount(image.device, "ext4", [], base_dir=dirs.mounts) as mnt:
            Path(mnt.mountpoint, "data").write_bytes(b"x" * 4096)
            raise RuntimeError("workload blew up")
    assert released(image)
    dirs.assert_clean()


def test_cleanup_after_keyboard_interrupt(dirs: Dirs) -> None:
    with pytest.raises(KeyboardInterrupt), LoopImage(64 * MiB, directory=dirs.images) as image:
        make_filesystem("ext4", image.device, [])
        with Mount(image.device, "ext4", [], base_dir=dirs.mounts):
            raise KeyboardInterrupt
    assert released(image)
    dirs.assert_clean()


def test_cleanup_after_real_sigint(dirs: Dirs) -> None:
    with pytest.raises(KeyboardInterrupt), LoopImage(64 * MiB, directory=dirs.images) as image:
        make_filesystem("ext4", image.device, [])
        with Mount(image.device, "ext4", [], base_dir=dirs.mounts):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # interrupted long before this ends
    assert released(image)
    dirs.assert_clean()


def test_mkfs_bad_option_raises_tool_error_with_stderr(dirs: Dirs) -> None:
    with LoopImage(512 * MiB, directory=dirs.images) as image:
        with pytest.raises(ToolError, match="nosuchfeature") as caught:
            make_filesystem("ext4", image.device, ["-O", "nosuchfeature"])
        assert "nosuchfeature" in caught.value.stderr
        with pytest.raises(ToolError, match="agcount") as caught:
            make_filesystem("xfs", image.device, ["-d", "agcount=0"])
        assert "Usage" not in str(caught.value)  # the complaint, not the usage dump
        assert "Usage" in caught.value.stderr
    dirs.assert_clean()


def test_mount_failure_leaves_no_mount_point(dirs: Dirs) -> None:
    with LoopImage(64 * MiB, directory=dirs.images) as image:
        with (
            pytest.raises(ToolError, match="mounting"),
            Mount(image.device, "ext4", [], base_dir=dirs.mounts),
        ):
            pass  # never reached: the image holds no filesystem
        assert os.listdir(dirs.mounts) == []
    dirs.assert_clean()


# --- busy mounts --------------------------------------------------------------

HOLDER = (
    "import sys, time\n"
    "f = open(sys.argv[1], 'w')\n"
    "print('ready', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def hold_file(path: str, seconds: float) -> subprocess.Popen[str]:
    """A process that keeps a file open for `seconds`."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path, str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holder


def test_busy_mount_released_once_holder_closes(dirs: Dirs) -> None:
    with LoopImage(64 * MiB, directory=dirs.images) as image:
        make_filesystem("ext4", image.device, [])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no lazy fallback expected
            with Mount(image.device, "ext4", [], base_dir=dirs.mounts, busy_timeout_s=10) as mnt:
                holder = hold_file(os.path.join(mnt.mountpoint, "held"), 1.0)
            holder.wait(timeout=10)
        assert not mnt.lazily_unmounted
    assert released(image)
    dirs.assert_clean()


def test_busy_mount_falls_back_to_lazy_unmount(dirs: Dirs) -> None:
    holder = None
    try:
        with (
            pytest.warns(UserWarning, match="still in use"),
            LoopImage(64 * MiB, directory=dirs.images) as image,
        ):
            make_filesystem("ext4", image.device, [])
            with (
                pytest.warns(UserWarning, match="detached it lazily") as record,
                Mount(image.device, "ext4", [], base_dir=dirs.mounts, busy_timeout_s=1) as mnt,
            ):
                holder = hold_file(os.path.join(mnt.mountpoint, "held"), 600)
            assert str(holder.pid) in str(record[0].message)
            assert mnt.lazily_unmounted
            assert mounts_under(dirs.mounts) == []
            assert not os.path.exists(mnt.mountpoint)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
    deadline = time.monotonic() + 10  # the kernel detaches once the file is closed
    while loops_backed_by(image.image_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert released(image)
    dirs.assert_clean()


# --- leftovers of a killed fslab ----------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {src!r})
    from fslab.target.fs import Mount, make_filesystem
    from fslab.target.loop import LoopImage
    image = LoopImage(64 << 20, directory={images!r}).__enter__()
    make_filesystem("ext4", image.device, [])
    mount = Mount(image.device, "ext4", [], base_dir={mounts!r}).__enter__()
    open(mount.mountpoint + "/busy", "w").write("x")
    print(image.device, image.image_path, mount.mountpoint, flush=True)
    time.sleep(600)
    """
)


def test_leftovers_of_killed_process_are_reclaimed(dirs: Dirs) -> None:
    script = CHILD.format(src=REPO_SRC, images=dirs.images, mounts=dirs.mounts)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    device, image_path, mountpoint = child.stdout.readline().split()
    child.send_signal(signal.SIGKILL)
    child.wait()

    with LoopImage(16 * MiB, directory=dirs.images) as ours:  # alive: must be left alone
        found = find_leftovers(image_dirs=[dirs.images], mount_base=dirs.mounts)
        assert found.mounts == [mountpoint]
        assert found.loop_devices == [device]
        assert found.images == [image_path]
        assert not found.empty()

        got = cleanup_leftovers(image_dirs=[dirs.images], mount_base=dirs.mounts)
        assert (got.mounts, got.loop_devices, got.images) == (
            [mountpoint],
            [device],
            [image_path],
        )
        assert find_leftovers(image_dirs=[dirs.images], mount_base=dirs.mounts).empty()
        assert not os.path.exists(mountpoint) and not os.path.exists(image_path)
        assert loops_backed_by(image_path) == []
        assert os.path.exists(ours.image_path)
        assert loops_backed_by(ours.image_path) == [ours.device]
    dirs.assert_clean()


def test_leftover_hunt_ignores_other_directories(dirs: Dirs) -> None:
    elsewhere = tempfile.mkdtemp(prefix="fslabtgt-other-", dir="/dev/shm")
    try:
        stale = os.path.join(elsewhere, "fslab-1-0123abcd.img")  # pid 1 never dies...
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        orphan = os.path.join(elsewhere, f"fslab-{dead.pid}-0123abcd.img")
        Path(stale).touch()
        Path(orphan).touch()
        assert find_leftovers(image_dirs=[dirs.images], mount_base=dirs.mounts).empty()
        found = find_leftovers(image_dirs=[elsewhere], mount_base=dirs.mounts)
        assert found.images == [orphan]  # ...so only the dead pid's image counts
    finally:
        shutil.rmtree(elsewhere)
