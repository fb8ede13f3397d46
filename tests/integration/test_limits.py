"""Device limits on a real loop device: the blkio throttle is set, it bites, it is cleared.

The throttle is written at the root blkio cgroup of this host, for a loop
device this test creates on /dev/shm, and the test checks the kernel's own
files afterwards: no limit may outlive the block, whatever ended it.
"""

from __future__ import annotations

import mmap
import os
import sys
import tempfile
import time

import pytest
from tests import cli
from tests.conftest import requires_root

from fslab.base.errors import FslabError
from fslab.store.db import Store
from fslab.target.limits import (
    BLKIO_ROOT,
    DeviceLimits,
    current_limits,
    device_limits,
    unavailable_reason,
)
from fslab.target.loop import LoopImage

pytestmark = [
    requires_root,
    pytest.mark.root,
    pytest.mark.skipif(
        unavailable_reason(DeviceLimits(write_iops=1)) is not None, reason="no blkio throttle"
    ),
]


@pytest.fixture
def loop_device(no_leaks):
    with (
        tempfile.TemporaryDirectory(prefix="fslablim-", dir="/dev/shm") as directory,
        LoopImage(64 << 20, directory=directory) as image,
    ):
        yield image.device


def _direct_writes_per_s(device: str, count: int) -> float:
    """O_DIRECT 4 KiB writes to the raw device, one at a time: the IOPS it allows."""
    aligned = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
    try:
        start = time.monotonic()
        for i in range(count):
            os.pwrite(fd, aligned, i * 4096)
        return count / (time.monotonic() - start)
    finally:
        os.close(fd)
        aligned.close()


def test_limit_is_applied_bites_and_is_cleared(loop_device):
    limits = DeviceLimits(write_iops=200, write_bps=8 << 20)
    with device_limits(limits, loop_device) as facts:
        assert current_limits(loop_device) == {"write_iops": 200, "write_bps": 8 << 20}
        assert facts["write_iops"] == 200 and facts["devno"]
        throttled = _direct_writes_per_s(loop_device, 100)
    assert current_limits(loop_device) == {}
    free = _direct_writes_per_s(loop_device, 100)
    assert throttled < 300, f"{throttled:.0f} writes/s under a 200 IOPS limit"
    assert free > 2 * throttled


def test_limit_is_cleared_when_the_block_fails(loop_device):
    with pytest.raises(RuntimeError), device_limits(DeviceLimits(read_iops=50), loop_device):
        assert current_limits(loop_device) == {"read_iops": 50}
        raise RuntimeError("the point failed")
    assert current_limits(loop_device) == {}


def test_limit_is_cleared_on_ctrl_c(loop_device):
    with pytest.raises(KeyboardInterrupt), device_limits(DeviceLimits(write_iops=9), loop_device):
        raise KeyboardInterrupt
    assert current_limits(loop_device) == {}


def test_no_limits_touch_nothing(loop_device):
    with device_limits(None, loop_device) as facts:
        assert facts == {}
    with device_limits(DeviceLimits(), loop_device) as facts:
        assert facts == {}


def test_missing_throttle_files_are_a_clear_error(loop_device, tmp_path):
    reason = unavailable_reason(DeviceLimits(write_iops=5), root=tmp_path)
    assert reason and "blkio" in reason
    with (
        pytest.raises(FslabError, match="blkio"),
        device_limits(DeviceLimits(write_iops=5), loop_device, root=tmp_path),
    ):
        pass
    assert BLKIO_ROOT.exists()


LIMITED_SPEC = """
name = "limited"

[target]
kind = "ram"
size = "1GiB"
limits = { write_iops = 300 }

[[filesystems]]
label = "ext4"
type = "ext4"

[workload]
kind = "fio"
options = { name = "w", rw = "randwrite", direct = 1, bs = "4k", filesize = "8m" }

[run]
runtime = "2s"
"""


def test_a_campaign_point_runs_at_its_limit_and_records_it(tmp_path, no_leaks):
    """fslab run with target.limits: fio sees the cap, the facts say so, nothing stays set."""
    spec = tmp_path / "limited.toml"
    spec.write_text(LIMITED_SPEC)
    db = tmp_path / "r.db"
    run = ["run", str(spec), "--db", str(db), "--no-collect", "--budget", "0"]
    done = cli.run(
        [sys.executable, "-m", "fslab", *run],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        (warmup, point) = store.points(store.latest_campaign_id())
        assert (warmup.role, point.role) == ("warmup", "clean")
        iops = store.metrics(point.campaign_id)[point.id]["fio.write.iops"]
    limits = point.facts.device_limits
    assert limits is not None and limits.write_iops == 300 and "blkio" in limits.how
    assert limits.blkio_root == str(BLKIO_ROOT)
    assert 200 < iops < 330, iops
    # the report says so, and its recipe sets the same throttle before fio
    shown = cli.run(
        [sys.executable, "-m", "fslab", "report", "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flat = " ".join(shown.replace("\\\n", " ").split())  # unwrapped
    assert "limited to write 300 IOPS (blkio throttle at the root cgroup" in flat
    throttle = (
        f"""# sh -c 'echo "$0" > "$1"' '{limits.devno} 300' """
        f"{BLKIO_ROOT}/blkio.throttle.write_iops_device"
    )
    assert throttle in flat and flat.index(throttle) < flat.index("# fio ")
    for kind in ("write_iops", "write_bps", "read_iops", "read_bps"):
        assert ":" not in (BLKIO_ROOT / f"blkio.throttle.{kind}_device").read_text()


def test_an_evidence_run_counts_the_device_as_its_limiter_does(tmp_path, no_leaks):
    """With target.limits, sysstat reads the blkio throttle's own counters: bios before
    merging, the unit of the limit, at the limit; diskstats' completions alone are not."""
    spec = tmp_path / "limited.toml"
    spec.write_text(
        LIMITED_SPEC.replace(
            'options = { name = "w", rw = "randwrite", direct = 1, bs = "4k", filesize = "8m" }',
            'options = { name = "w", rw = "randwrite", bs = "16k", filesize = "8m", fsync = 1 }',
        )
        + "\n[collect]\n"
        + "".join(
            f"{name} = false\n" for name in ("perf", "offcpu", "workqueue", "tpcounters", "jbd2")
        )
    )
    db = tmp_path / "r.db"
    run = ["run", str(spec), "--db", str(db), "--budget", "0"]
    done = cli.run(
        [sys.executable, "-m", "fslab", *run], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        campaign = store.latest_campaign_id()
        (evidence,) = [p for p in store.points(campaign) if p.role == "evidence"]
        m = store.metrics(campaign)[evidence.id]
    per_s = m["throttle.write_ios"] / m["sys.elapsed_s"]
    assert 0.5 * 300 < per_s < 1.1 * 300, m  # one fsyncing job, near its limit
    assert m["throttle.write_ios"] >= m["blk.write_ios"], m
