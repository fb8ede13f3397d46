"""target.array: ext4, XFS or btrfs on an md array over fslab's loop images, made and
stopped at every point, in a real guest (Debian's kernels have md) and refused before
anything is made on a host whose kernel has none."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.guest_support import GUEST_SERIES, guest_kernel, require_qemu

from fslab.guest.leftovers import find_guest_leftovers
from fslab.store.db import Store
from fslab.target.md import md_problem

pytestmark = [requires_root, pytest.mark.root]

SPEC = """
name = "md-array"
[target]
size = "512MiB"
devices = 2
array = "{array}"
[[filesystems]]
label = "xfs"
type = "xfs"
[[filesystems]]
label = "ext4"
type = "ext4"
[workload]
kind = "dd"
bs = "1M"
count = 8
[run]
repeat = 1
"""


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "fslab", *args]
    return cli.run(argv, capture_output=True, text=True, check=False)


def _points(db) -> list:
    with Store(db) as store:
        return [p for p in store.points(1) if p.role != "warmup"]


def test_an_md_array_on_this_host_is_built_or_refused_before_anything_is_made(tmp_path, no_leaks):
    spec = tmp_path / "md.toml"
    spec.write_text(SPEC.format(array="md-raid0"))
    db = tmp_path / "h.db"
    run = fslab("run", str(spec), "--no-collect", "--budget", "0", "--db", str(db))
    if md_problem("md-raid0") is not None:  # this machine's kernel: no md
        assert run.returncode == 2, run.stderr
        said = " ".join(run.stderr.split())
        assert "target.array" in said and "run the campaign in a guest" in said
        assert "Traceback" not in run.stderr
        return
    assert run.returncode == 0, run.stderr[-2000:]
    for point in _points(db):
        assert point.facts.array is not None and point.facts.array.level == "raid0"


@pytest.mark.guest
def test_a_guest_builds_an_md_raid1_per_point_and_stops_it(tmp_path, no_leaks):
    """Two 512 MiB images mirrored: the filesystem sees one image's size, both members
    are recorded, and the guest's array is gone with the guest."""
    require_qemu()
    guest_kernel()
    spec = tmp_path / "md.toml"
    spec.write_text(SPEC.format(array="md-raid1"))
    db = tmp_path / "g.db"
    argv = ["run", str(spec), "--kernel", GUEST_SERIES, "--no-collect", "--budget", "0"]
    run = fslab(*argv, "--db", str(db))
    assert run.returncode == 0, run.stderr[-3000:]
    points = _points(db)
    assert {p.config for p in points} == {"xfs", "ext4"}
    for point in points:
        assert point.status == "ok", point.error
        array = point.facts.array
        assert array is not None and array.level == "raid1" and len(array.members) == 2
        assert array.device.startswith("/dev/md")
        assert point.facts.filesystem is not None
    assert not find_guest_leftovers().processes
