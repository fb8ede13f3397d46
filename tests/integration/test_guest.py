"""Real guests: qemu under virtme-ng, booting a cached Debian kernel (TCG here).

Each test boots at most two guests; a TCG boot takes about half a minute on
two host cores. Select them with `pytest -m guest`, leave them out with
`-m 'not guest'`.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import tempfile
import time
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from tests.conftest import requires_root
from tests.guest_support import (
    GUEST_SERIES,
    boot_in_child,
    fslab_guests,
    guest_kernel,
    require_qemu,
    wait_for_guest,
)

from fslab.base.errors import UsageError
from fslab.base.hostfacts import ext4_free_clusters_watermark
from fslab.guest import probe
from fslab.guest.session import GuestError, GuestSession
from fslab.spec.load import load_spec, validate_spec
from fslab.spec.points import expand_points
from fslab.spec.vm import GuestConfig
from fslab.target.limits import GUEST_BLKIO_ROOT

pytestmark = [requires_root, pytest.mark.root, pytest.mark.guest]


def _seed_point(runtime: str = "3s"):
    """The first report's workload (ext4 default journal) at 2 jobs, on a small image."""
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            "sweep.numjobs=[2]",
            f'run.runtime="{runtime}"',
            'run.ramp="0s"',
            'target.size="512MiB"',
            "run.adaptive=false",  # the grid plan: an adaptive scan has no evidence run
        ],
    )
    # an evidence run: the collectors run in it (clean repetitions run none)
    points = expand_points(spec, "separate")
    return spec, next(
        p for p in points if p.filesystem.label == "ext4-default" and p.role == "evidence"
    )


# The second seed report on a 2-core host: 2 GiB ext4, dd bs=1M count=100 into
# an empty filesystem and one left with 400 MiB free. At nr_cpu_ids 1728 ext4's
# free-cluster watermark is 4 x 32 x 1728 clusters = 864 MiB: the near-full
# filesystem starts below it and every allocation sums the per-CPU counters.
WATERMARK_SPEC = """
name = "guest-watermark"
[target]
size = "2GiB"
[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[workload]
kind = "dd"
bs = "1M"
count = 100
[sweep]
fill_leave_free = ["", "400MiB"]
[run]
repeat = 2
"""


def _spec(text: str):
    return validate_spec(tomllib.loads(text))


def _boot(config: GuestConfig) -> None:
    with GuestSession(config):
        pass


def _workdirs(pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"fslab-guest-{pid}-*"))


@pytest.fixture
def no_guest_left(no_leaks):
    require_qemu()
    guest_kernel()
    yield
    assert not fslab_guests(os.getpid()), "a qemu fslab started is still running"
    assert not _workdirs(os.getpid()), "a guest's shared directory was left behind"


def test_a_fio_point_in_a_2_vcpu_guest_and_a_guest_that_dies_is_booted_afresh(no_guest_left):
    spec, point = _seed_point()
    kernel = guest_kernel()
    config = GuestConfig(kernel=GUEST_SERIES, cpus=2, accel="tcg")
    with GuestSession(config, target_bytes=spec.target.size_bytes) as guest:
        outcome = guest.run_point(spec, point)
        assert outcome.status == "ok", f"{outcome.error}\n{outcome.stderr[-3000:]}"
        assert outcome.metrics["fio.write.iops"] > 0
        facts = outcome.facts.guest
        assert facts is not None and facts.kernel_release == kernel.release
        assert (facts.nr_cpu_ids, facts.online_cpus, facts.accel) == (2, 2, "tcg")
        assert "virtme" in (facts.kernel_cmdline or "")
        assert (facts.kernel_config or {})["CONFIG_NR_CPUS"] == str(kernel.max_possible_cpus())
        assert outcome.facts.filesystem and outcome.facts.filesystem.block_size_bytes == 4096
        # every collector ran in the guest as on the host, or says why it could not
        assert set(outcome.collectors) == set(spec.collect.enabled())
        for name, (status, reason) in outcome.collectors.items():
            assert status == "ok" or reason, name
        for name in ("offcpu", "jbd2", "sysstat"):
            assert outcome.collectors[name][0] == "ok", (name, outcome.collectors[name])
        assert outcome.metrics["jbd2.transactions"] > 0
        # the guest dies between points: the next point boots a fresh one
        assert guest._guest is not None
        os.killpg(guest._guest.proc.pid, signal.SIGKILL)
        guest._guest.proc.wait(timeout=30)
        again = guest.run_point(spec, replace(point, role="clean"))
        assert again.status == "ok", f"{again.error}\n{again.stderr[-3000:]}"
        assert guest.boots == 2 and again.facts.guest and again.facts.guest.boot == 2


def test_possible_cpus_1728_puts_near_full_ext4_below_the_watermark_and_slows_dd(no_guest_left):
    spec = _spec(WATERMARK_SPEC)
    points = expand_points(spec)
    config = GuestConfig(kernel=GUEST_SERIES, cpus=2, possible_cpus=1728, accel="tcg")
    with GuestSession(config, target_bytes=spec.target.size_bytes) as guest:
        outcomes = [(p, guest.run_point(spec, p)) for p in points]
    bandwidth: dict[bool, list[float]] = {True: [], False: []}
    for point, outcome in outcomes:
        assert outcome.status == "ok", f"{outcome.error}\n{outcome.stderr[-3000:]}"
        guest_facts, fs_facts = outcome.facts.guest, outcome.facts.filesystem
        assert guest_facts is not None and fs_facts is not None
        assert (guest_facts.nr_cpu_ids, guest_facts.online_cpus) == (1728, 2)
        cluster = fs_facts.block_size_bytes or 0
        assert outcome.facts.ext4_watermark_bytes == (
            ext4_free_clusters_watermark(2, 1728) * cluster
        )
        near_full = point.sweep_dict["fill_leave_free"] != ""
        assert outcome.facts.below_ext4_watermark is near_full
        bandwidth[near_full].append(outcome.metrics["dd.bw_bytes_s"])
    full, empty = statistics.median(bandwidth[True]), statistics.median(bandwidth[False])
    print(f"ext4 at nr_cpu_ids 1728: near-full {full / 1e6:.1f} MB/s, empty {empty / 1e6:.1f} MB/s")
    assert full < 0.7 * empty


# target.limits in a guest: 16 KiB direct random writes (each write is one bio,
# so fio's IOPS is the device's) on a loop device the guest's blkio throttle caps.
LIMITED_IOPS = 10  # far below a loaded CI host's unlimited TCG figure (102 there)
LIMITS_SPEC = f"""
name = "guest-limits"
[target]
size = "512MiB"
limits = {{ write_iops = {LIMITED_IOPS} }}
[[filesystems]]
label = "ext4"
type = "ext4"
[workload]
kind = "fio"
options = {{ name = "w", rw = "randwrite", bs = "16k", direct = 1, filesize = "16m" }}
[run]
runtime = "3s"
ramp = "0s"
"""


def test_write_iops_limit_caps_a_guest_point_and_the_next_point_runs_free(no_guest_left):
    """One boot: the limited point runs at its limit with the host's facts; the same point
    without limits, next in the same guest, runs far above it (the limit was cleared)."""
    limited = _spec(LIMITS_SPEC)
    free = limited.model_copy(update={"target": limited.target.model_copy(update={"limits": None})})
    (point,) = [p for p in expand_points(limited) if p.role != "warmup"]
    config = GuestConfig(kernel=GUEST_SERIES, cpus=2, accel="tcg")
    with GuestSession(config, target_bytes=limited.target.size_bytes) as guest:
        outcomes = [guest.run_point(spec, point) for spec in (limited, free)]
    for outcome in outcomes:
        assert outcome.status == "ok", f"{outcome.error}\n{outcome.stderr[-3000:]}"
    capped, uncapped = (o.metrics["fio.write.iops"] for o in outcomes)
    print(f"guest write IOPS: limited to {LIMITED_IOPS}: {capped:.0f}; unlimited: {uncapped:.0f}")
    facts = outcomes[0].facts.device_limits
    assert facts is not None
    assert facts.write_iops == LIMITED_IOPS and facts.device.startswith("/dev/loop")
    assert facts.blkio_root == str(GUEST_BLKIO_ROOT)  # the agent's mount: cgroup2 is beside it
    assert outcomes[1].facts.device_limits is None
    assert 0.7 * LIMITED_IOPS < capped < 1.15 * LIMITED_IOPS
    assert uncapped > 4 * LIMITED_IOPS  # 102 to 610 on loaded CI hosts under TCG, 2270 here


def test_a_guest_that_does_not_boot_in_time_is_a_clear_error(no_guest_left):
    # 10 s: far short of a TCG boot (25 s and more), long enough for the kernel's first
    # timestamped lines even on a loaded machine (at 4 s one run had only the firmware's)
    config = GuestConfig(kernel=GUEST_SERIES, accel="tcg", boot_timeout="10s")
    with pytest.raises(GuestError) as caught, GuestSession(config):
        pass
    assert caught.value.exit_code == 2
    message = str(caught.value)
    assert "did not boot within 10 s" in message
    assert re.search(r"\[\s*\d+\.\d+\] ", message)  # the console's tail came with it


def test_bad_input_is_refused_before_anything_boots(no_guest_left):
    with pytest.raises(UsageError, match="not in fslab's kernel cache"):
        _boot(GuestConfig(kernel="4.14.0-99-amd64", accel="tcg"))
    too_many = probe.max_vcpus("tcg") + 1
    with pytest.raises(UsageError, match=f"cpus = {too_many}: TCG") as caught:
        _boot(GuestConfig(kernel=GUEST_SERIES, cpus=too_many, accel="tcg"))
    assert caught.value.exit_code == 2
    with pytest.raises(GuestError, match="does not fit this host"):
        _boot(GuestConfig(kernel=GUEST_SERIES, memory="64TiB", accel="tcg"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_boot_stops_the_guest_and_leaves_nothing(no_guest_left, signum):
    child = boot_in_child()
    try:
        wait_for_guest(child)
        time.sleep(2.0)  # qemu is booting the kernel now
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert "booted" not in stdout
    assert child.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert not fslab_guests(child.pid)
    assert not _workdirs(child.pid)
