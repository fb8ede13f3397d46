"""`fslab run` in real guests, end to end: the campaign, its facts, compare --by,
Ctrl-C, and `fslab doctor --cleanup` of a guest a killed fslab left running.

Each test boots at most two TCG guests (about 25 s each here).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.guest_support import (
    GUEST_SERIES,
    boot_in_child,
    fslab_guests,
    guest_kernel,
    require_qemu,
    wait_for_guest,
)

from fslab.guest.leftovers import find_guest_leftovers
from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root, pytest.mark.guest]

# Two guests (possible_cpus 2 and 64), two repetitions: four boots in the order
# 2, 64 | 64, 2; dd is short so the test is mostly boots.
SPEC = """
name = "guest-run"
[target]
size = "512MiB"
[[filesystems]]
label = "ext4"
type = "ext4"
[workload]
kind = "dd"
bs = "1M"
count = 20
[sweep]
possible_cpus = [2, 64]
[run]
repeat = 2
"""


def fslab(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [sys.executable, "-m", "fslab", *args],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,
    )


@pytest.fixture
def guest_ready(no_leaks):
    require_qemu()
    guest_kernel()
    yield
    # a qemu an fslab of this test left is an orphan now: its fslab has exited
    assert not find_guest_leftovers().processes, "a qemu fslab started is still running"


def test_fslab_run_kernel_sweeps_possible_cpus_in_guests_and_compares_by_axis(
    tmp_path, guest_ready
):
    spec = tmp_path / "guest-run.toml"
    spec.write_text(SPEC)
    db = tmp_path / "r.db"
    argv = ["run", str(spec), "--kernel", GUEST_SERIES, "--no-collect", "--budget", "0"]
    run = fslab(*argv, "--db", str(db))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "in guests: " in run.stdout and "nr_cpu_ids 64" in run.stdout
    with Store(db) as store:
        runs = sorted(store.points(1), key=lambda p: p.started_at or "")
    warmups = [p for p in runs if p.role == "warmup"]
    assert [(p.status, p.sweep["possible_cpus"]) for p in warmups] == [("ok", 64)]
    points = [p for p in runs if p.role != "warmup"]
    for point in points:
        assert point.status == "ok", point.error
        guest = point.facts.guest
        assert guest is not None
        assert (guest.nr_cpu_ids, guest.online_cpus) == (point.sweep["possible_cpus"], 2)
        assert guest.kernel_release == guest_kernel().release
        assert guest.accel in ("kvm", "tcg") and guest.boot == 1
    # one boot per guest per repetition, the guests' order turned round in the second
    assert [p.sweep["possible_cpus"] for p in points] == [2, 64, 64, 2]
    compared = fslab("compare", "1", "--by", "possible_cpus", "--db", str(db))
    assert compared.returncode == 0, compared.stderr
    assert "possible_cpus=2" in compared.stdout and "possible_cpus=64" in compared.stdout
    assert "nr_cpu_ids 64, 2 online" in compared.stdout


def test_ctrl_c_during_a_guest_campaign_leaves_no_qemu_and_the_campaign_resumable(
    tmp_path, guest_ready
):
    spec = tmp_path / "guest-run.toml"
    spec.write_text(SPEC)
    db = tmp_path / "r.db"
    argv = ["run", str(spec), "--kernel", GUEST_SERIES, "--no-collect", "--no-preflight"]
    child = subprocess.Popen(
        [sys.executable, "-m", "fslab", *argv, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_guest(child)
        time.sleep(2.0)  # booting
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, stderr[-2000:]
    said = " ".join(stderr.split())  # rich wraps at the terminal's width
    assert "guests released" in said and "fslab run --resume 1" in said
    assert not fslab_guests(child.pid)
    with Store(db) as store:
        assert store.campaign(1).status == "interrupted"


def test_doctor_cleanup_stops_a_guest_a_killed_fslab_left_running(guest_ready):
    child = boot_in_child()
    try:
        wait_for_guest(child)
        os.kill(child.pid, signal.SIGKILL)  # qemu runs in its own session: it stays
        child.communicate(timeout=30)
        assert fslab_guests(child.pid), "the orphaned guest should still run"
        found = json.loads(fslab("doctor", "--json").stdout)["guest_leftovers"]
        assert any("qemu" in line for line in found["processes"]), found
        cleaned = fslab("doctor", "--cleanup")
        assert "guest leftovers released" in cleaned.stdout, cleaned.stdout
        deadline = time.monotonic() + 15
        while fslab_guests(child.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not fslab_guests(child.pid)
        assert not list(Path("/tmp").glob(f"fslab-guest-{child.pid}-*"))
    finally:
        if child.poll() is None:
            child.kill()
        for line in fslab_guests(child.pid):
            os.kill(int(line.split()[0]), signal.SIGKILL)
