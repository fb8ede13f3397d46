"""The device guard against real decoys: loop devices over private images.

Every refusal is checked on a real block device whose SHA-256 must be the same
after the guard refused it. Decoys live in a private directory under /dev/shm
(prefix fslabtgt-) and mounts under a private directory in /run, so parallel
tests of other parts never see them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import requires_root

from fslab.base.errors import GuardRefusal
from fslab.target.guard import DeviceIdentity, check_device, read_mountinfo

pytestmark = [requires_root, pytest.mark.root]

MiB = 1 << 20
SECTOR = 512


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def sha256(path: str) -> str:
    """Hash a device (or file) through a read-only descriptor."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 * MiB):
            digest.update(chunk)
    return digest.hexdigest()


def write_mbr(image: str, partitions: list[tuple[int, int]]) -> None:
    """Write a DOS partition table: (first sector, sector count) per primary.

    The kernel here lacks the msdos partition parser and sfdisk is not
    installed, so the table is written directly and registered with `partx`.
    """
    mbr = bytearray(SECTOR)
    for i, (start, count) in enumerate(partitions):
        entry = bytes([0x00, 0xFE, 0xFF, 0xFF, 0x83, 0xFE, 0xFF, 0xFF])
        mbr[446 + 16 * i : 446 + 16 * (i + 1)] = entry + struct.pack("<II", start, count)
    mbr[440:444] = struct.pack("<I", 0x5EEDF00D)
    mbr[510:512] = b"\x55\xaa"
    with open(image, "r+b") as f:
        f.write(mbr)


class Scratch:
    """Decoy images, loops, mounts and swaps, all released at teardown."""

    def __init__(self) -> None:
        self.image_dir = tempfile.mkdtemp(prefix="fslabtgt-guard-", dir="/dev/shm")
        self.mount_dir = tempfile.mkdtemp(prefix="fslabtgt-guard-", dir="/run")
        self.loops: list[str] = []
        self.mounts: list[str] = []
        self.swaps: list[str] = []
        self._count = 0

    def image(self, size_bytes: int, *, random: bool = True, directory: str | None = None) -> str:
        self._count += 1
        path = os.path.join(directory or self.image_dir, f"fslabtgt-decoy-{self._count}.img")
        with open(path, "wb") as f:
            if random:
                f.write(os.urandom(size_bytes))
            else:
                f.truncate(size_bytes)
        return path

    def attach(self, image: str, *, partscan: bool = False) -> str:
        argv = ["losetup", "--find", "--show", *(["--partscan"] if partscan else []), image]
        device = sh(*argv).strip()
        self.loops.append(device)
        return device

    def loop(self, size_bytes: int = 16 * MiB, *, random: bool = True) -> str:
        return self.attach(self.image(size_bytes, random=random))

    def mkfs(self, device: str, fs_type: str = "ext4") -> None:
        if fs_type == "ext4":  # no lazy init: a mounted decoy must not change by itself
            sh("mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", device)
        else:
            sh(f"mkfs.{fs_type}", "-f", "-q", device)

    def mount(self, device: str, *options: str) -> str:
        self._count += 1
        mountpoint = os.path.join(self.mount_dir, f"m{self._count}")
        os.mkdir(mountpoint)
        sh("mount", *(["-o", ",".join(options)] if options else []), device, mountpoint)
        self.mounts.append(mountpoint)
        return mountpoint

    def swapon(self, device: str) -> None:
        sh("mkswap", "-q", device)
        sh("swapon", "--priority", "-2", device)
        self.swaps.append(device)

    def release(self) -> None:
        for device in reversed(self.swaps):
            subprocess.run(["swapoff", device], check=False)
        for mountpoint in reversed(self.mounts):
            if subprocess.run(["umount", mountpoint], check=False).returncode:
                subprocess.run(["umount", "--lazy", mountpoint], check=False)
        for device in reversed(self.loops):
            subprocess.run(["losetup", "--detach", device], check=False, capture_output=True)
        shutil.rmtree(self.image_dir, ignore_errors=True)
        shutil.rmtree(self.mount_dir, ignore_errors=True)


@pytest.fixture
def scratch(no_leaks: None) -> Iterator[Scratch]:
    box = Scratch()
    try:
        yield box
    finally:
        box.release()


def refused(rule: str, path: str, **kwargs: object) -> GuardRefusal:
    """check_device must refuse `path` with `rule`, leaving its bytes unchanged."""
    before = sha256(path) if os.path.exists(path) else None
    with pytest.raises(GuardRefusal) as caught:
        check_device(path, **kwargs)  # type: ignore[arg-type]
    assert caught.value.rule == rule, str(caught.value)
    assert f"'{rule}'" in str(caught.value)
    if before is not None:
        assert sha256(path) == before
    return caught.value


def wait_for(path: str, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.05)


def root_block_device() -> str:
    """/dev/NAME of the device backing '/', found from /proc/self/mountinfo."""
    for entry in read_mountinfo():
        if entry.mount_point != "/":
            continue
        uevent = Path(f"/sys/dev/block/{entry.major_minor}/uevent")
        if uevent.exists():
            for line in uevent.read_text().splitlines():
                if line.startswith("DEVNAME="):
                    return "/dev/" + line.removeprefix("DEVNAME=")
    pytest.skip("'/' is not on a block device here")


# --- accepted -----------------------------------------------------------------


def test_accepts_allowed_device_and_reports_identity(scratch: Scratch) -> None:
    device = scratch.loop(16 * MiB)
    before = sha256(device)
    identity = check_device(device, allowed=[device])
    st = os.stat(device)
    assert identity == DeviceIdentity(
        path=device,
        resolved_path=device,
        major_minor=f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}",
        size_bytes=16 * MiB,
        model=None,
        serial=None,
    )
    assert sha256(device) == before


def test_symlinks_resolved_on_both_sides(scratch: Scratch) -> None:
    device = scratch.loop()
    link_a = os.path.join(scratch.image_dir, "by-id-a")
    link_b = os.path.join(scratch.image_dir, "by-id-b")
    os.symlink(device, link_a)
    os.symlink(device, link_b)
    identity = check_device(link_a, allowed=[link_b])
    assert identity.path == link_a
    assert identity.resolved_path == device


# --- not-allowed / not-block-device ------------------------------------------


def test_not_allowed(scratch: Scratch) -> None:
    device, other = scratch.loop(), scratch.loop()
    error = refused("not-allowed", device, allowed=[])
    assert "--allow-device" in str(error)
    refused("not-allowed", device, allowed=[other])


def test_symlink_to_forbidden_device(scratch: Scratch) -> None:
    device, other = scratch.loop(), scratch.loop()
    link = os.path.join(scratch.image_dir, "innocent-name")
    os.symlink(device, link)
    error = refused("not-allowed", link, allowed=[other])
    assert device in str(error)  # the message shows what the link really names
    scratch.mkfs(device)
    scratch.mount(device, "ro")
    refused("mounted", link, allowed=[device])


def test_symlink_to_root_device(scratch: Scratch) -> None:
    root = root_block_device()
    link = os.path.join(scratch.image_dir, "scratch-disk")
    os.symlink(root, link)
    with pytest.raises(GuardRefusal) as caught:
        check_device(link, allowed=[link])
    assert caught.value.rule == "root-device"


def test_not_a_block_device(scratch: Scratch) -> None:
    image = scratch.image(4 * MiB)
    refused("not-block-device", image, allowed=[image])
    directory = scratch.image_dir
    with pytest.raises(GuardRefusal) as caught:
        check_device(directory, allowed=[directory])
    assert caught.value.rule == "not-block-device"


# --- mounted / swap -----------------------------------------------------------


def test_mounted_device(scratch: Scratch) -> None:
    device = scratch.loop(32 * MiB)
    scratch.mkfs(device)
    mountpoint = scratch.mount(device, "ro")
    error = refused("mounted", device, allowed=[device], force=True)
    assert mountpoint in str(error)


def test_mounted_btrfs_found_by_source(scratch: Scratch) -> None:
    """btrfs shows an anonymous major:minor in mountinfo; the source names the device."""
    device = scratch.loop(128 * MiB, random=False)
    scratch.mkfs(device, "btrfs")
    scratch.mount(device, "ro")
    refused("mounted", device, allowed=[device], force=True)


def test_swap_device(scratch: Scratch) -> None:
    device = scratch.loop(16 * MiB)
    scratch.swapon(device)
    error = refused("mounted", device, allowed=[device], force=True)
    assert "swap" in str(error)


def test_mounted_in_another_namespace(scratch: Scratch) -> None:
    """Invisible in our mountinfo; the kernel's exclusive claim still shows it."""
    device = scratch.loop(32 * MiB)
    scratch.mkfs(device)
    mountpoint = tempfile.mkdtemp(dir=scratch.mount_dir)
    script = f"mount -o ro {device} {mountpoint} && echo ready && exec sleep 600"
    holder = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        assert all(e.mount_point != mountpoint for e in read_mountinfo())
        error = refused("mounted", device, allowed=[device], force=True)
        assert "another mount namespace" in str(error)
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10  # the namespace, and its mount, die with the process
    while time.monotonic() < deadline:
        try:
            os.close(os.open(device, os.O_RDONLY | os.O_EXCL))
            break
        except OSError:
            time.sleep(0.05)
    assert check_device(device, allowed=[device], force=True).resolved_path == device


# --- partitions ---------------------------------------------------------------


@pytest.fixture
def partitioned(scratch: Scratch) -> tuple[str, str, str]:
    """A 64 MiB loop disk with two partitions; the first is mounted read-only."""
    image = scratch.image(64 * MiB)
    write_mbr(image, [(2048, 30720), (32768, 98304)])
    disk = scratch.attach(image, partscan=True)
    part1, part2 = f"{disk}p1", f"{disk}p2"
    if not os.path.exists(f"/sys/class/block/{os.path.basename(part1)}"):
        sh("partx", "--add", disk)
    wait_for(part1)
    wait_for(part2)
    scratch.mkfs(part1)
    scratch.mount(part1, "ro")
    return disk, part1, part2


def test_partition_of_busy_disk(scratch: Scratch, partitioned: tuple[str, str, str]) -> None:
    _disk, part1, part2 = partitioned
    error = refused("partition-of-busy-disk", part2, allowed=[part2], force=True)
    assert os.path.basename(part1) in str(error)


def test_disk_holding_mounted_partition(
    scratch: Scratch, partitioned: tuple[str, str, str]
) -> None:
    disk, part1, _ = partitioned
    error = refused("holds-mounted", disk, allowed=[disk], force=True)
    assert os.path.basename(part1) in str(error)
    refused("mounted", part1, allowed=[part1], force=True)


def test_partition_table_is_a_signature(scratch: Scratch) -> None:
    image = scratch.image(8 * MiB, random=False)
    write_mbr(image, [(2048, 8192)])
    disk = scratch.attach(image)
    error = refused("signature", disk, allowed=[disk])
    assert "dos" in str(error)


# --- signatures ---------------------------------------------------------------


@pytest.mark.parametrize(("fs_type", "size_bytes"), [("ext4", 32 * MiB), ("xfs", 320 * MiB)])
def test_signature_needs_force(scratch: Scratch, fs_type: str, size_bytes: int) -> None:
    device = scratch.loop(size_bytes, random=False)
    scratch.mkfs(device, fs_type)
    error = refused("signature", device, allowed=[device])
    assert f"pass --force to overwrite the existing {fs_type} signature" in str(error)
    before = sha256(device)
    identity = check_device(device, allowed=[device], force=True)
    assert identity.size_bytes == size_bytes
    assert sha256(device) == before


# --- root ---------------------------------------------------------------------


def read_head(path: str) -> bytes | None:
    """The first KiB (the boot area no filesystem writes), if this sandbox lets us read it."""
    try:
        with open(path, "rb") as f:
            return f.read(1024)
    except PermissionError:
        return None


def test_root_device() -> None:
    root = root_block_device()
    head = read_head(root)
    with pytest.raises(GuardRefusal) as caught:
        check_device(root, allowed=[root], force=True)
    assert caught.value.rule == "root-device"
    assert "'/'" in str(caught.value)
    assert read_head(root) == head


# --- backing file on a filesystem about to be formatted -----------------------


def test_backing_file_on_target(scratch: Scratch) -> None:
    outer = scratch.loop(64 * MiB, random=False)
    scratch.mkfs(outer)
    outer_mount = scratch.mount(outer)
    inner_image = scratch.image(8 * MiB, directory=outer_mount)
    inner = scratch.attach(inner_image)
    error = refused("backing-file-on-target", inner, allowed=[inner], about_to_format=[outer])
    assert outer in str(error) and inner_image in str(error)
    link = os.path.join(scratch.image_dir, "outer-link")
    os.symlink(outer, link)
    refused("backing-file-on-target", inner, allowed=[inner], about_to_format=[link, inner])
    # formatting something else, or nothing, leaves the inner device acceptable
    unrelated = scratch.loop()
    assert check_device(inner, allowed=[inner], about_to_format=[unrelated]).major_minor
    assert check_device(inner, allowed=[inner]).resolved_path == inner


# --- /dev/disk/by-* style links, and the command line --------------------------


def by_id_link(scratch: Scratch, device: str, name: str) -> str:
    """A relative link like udev's /dev/disk/by-id/NAME -> ../../loopN (no udev here)."""
    directory = os.path.join(scratch.image_dir, "disk", "by-id")
    os.makedirs(directory, exist_ok=True)
    link = os.path.join(directory, name)
    os.symlink(os.path.relpath(device, directory), link)
    assert os.path.realpath(link) == os.path.realpath(device)
    return link


def test_by_id_links_to_forbidden_devices(
    scratch: Scratch, partitioned: tuple[str, str, str]
) -> None:
    disk, part1, part2 = partitioned
    refused("mounted", by_id_link(scratch, part1, "usb-decoy-part1"), allowed=[part1], force=True)
    link = by_id_link(scratch, part2, "usb-decoy-part2")
    refused("partition-of-busy-disk", link, allowed=[link], force=True)
    link = by_id_link(scratch, disk, "usb-decoy")
    refused("holds-mounted", link, allowed=[link], force=True)
    formatted = scratch.loop(32 * MiB, random=False)
    scratch.mkfs(formatted)
    link = by_id_link(scratch, formatted, "ata-formatted")
    refused("signature", link, allowed=[formatted])
    refused("not-allowed", link, allowed=[part2])
    root = root_block_device()
    with pytest.raises(GuardRefusal) as caught:
        check_device(by_id_link(scratch, root, "nvme-root"), allowed=[root], force=True)
    assert caught.value.rule == "root-device"


TINY_DEVICE_SPEC = """
name = "device"
[[filesystems]]
label = "e"
type = "ext4"
[workload]
kind = "fio"
options = { rw = "write", bs = "64k", filesize = "4m" }
[run]
runtime = "1s"
"""


def run_cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from fslab import cli

    spec = tmp_path / "device.toml"
    spec.write_text(TINY_DEVICE_SPEC)
    db = str(tmp_path / "r.db")
    result = CliRunner().invoke(cli.app, ["run", str(spec), "--db", db, "--no-collect", *args])
    return result.exit_code, result.output


def campaigns_in(tmp_path: Path) -> list:
    from fslab.store.db import Store

    with Store(tmp_path / "r.db") as store:
        return store.campaigns()


def test_cli_refuses_before_writing(scratch: Scratch, tmp_path: Path) -> None:
    """`fslab run --device X`: refused with exit 3 and the rule, the device untouched,
    no campaign recorded (preflight tries the options on a sparse stand-in, not on X)."""
    device = scratch.loop(64 * MiB, random=False)
    scratch.mkfs(device)
    link = by_id_link(scratch, device, "scsi-decoy")
    before = sha256(device)
    code, output = run_cli(tmp_path, "--device", link)
    assert code == 3 and "'not-allowed'" in output, output
    code, output = run_cli(tmp_path, "--device", link, "--allow-device", device)
    assert code == 3 and "'signature'" in output and "--force" in output, output
    assert sha256(device) == before
    assert campaigns_in(tmp_path) == []


def test_cli_records_the_device_identity(scratch: Scratch, tmp_path: Path) -> None:
    device = scratch.loop(128 * MiB, random=False)
    link = by_id_link(scratch, device, "wwn-blank")
    code, output = run_cli(tmp_path, "--device", link, "--allow-device", device)
    assert code == 0, output
    (campaign,) = campaigns_in(tmp_path)
    st = os.stat(device)
    assert campaign.status == "complete"
    stored = campaign.device
    assert stored is not None and stored.kind == "device"
    assert stored.path == link and stored.resolved_path == device
    assert stored.major_minor == f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    assert stored.size_bytes == 128 * MiB
