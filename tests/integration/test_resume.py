"""SIGKILL of fslab mid-campaign: doctor releases the leftovers, resume loses nothing.

SIGKILL cannot be caught, so the point in flight leaves its mount, loop device
and image behind and the campaign stays 'running'. `fslab doctor --cleanup`
must release exactly those, `fslab run --resume` must finish the campaign,
every point committed before the kill must be unchanged, none missing or
duplicated, and the final tables must have the structure of an uninterrupted
campaign's.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.pid_leaks import owned_by, wait_released

from fslab.store.db import Store
from fslab.target.leftovers import find_leftovers

pytestmark = [requires_root, pytest.mark.root]

SPEC = """
name = "resume"
[target]
size = "1GiB"
[[filesystems]]
label = "ext4"
type = "ext4"
mount_options = ["noatime"]
[workload]
kind = "fio"
[workload.options]
rw = "randwrite"
ioengine = "sync"
bs = "16k"
filesize = "4m"
fsync = 1
thread = true
[sweep]
numjobs = [1, 2]
[run]
repeat = 2
runtime = "1s"
"""
PLANNED = 5  # the warm-up (seq 0, discarded) and 2 sweep points x 2 repetitions


def fslab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [sys.executable, "-m", "fslab", *args], capture_output=True, text=True, timeout=timeout
    )


def committed(db: Path, campaign_id: int) -> dict[int, tuple]:
    """seq -> (status, started, ended, metrics) of every point (read-only)."""
    if not db.exists():
        return {}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='points'").fetchone():
            return {}
        rows = conn.execute(
            "SELECT id, seq, status, started_at, ended_at FROM points WHERE campaign_id=?",
            (campaign_id,),
        ).fetchall()
        result = {}
        for point_id, seq, status, started, ended in rows:
            metrics = conn.execute(
                "SELECT name, value FROM metrics WHERE point_id=? ORDER BY name", (point_id,)
            ).fetchall()
            result[seq] = (status, started, ended, tuple(metrics))
    return result


def structure(shown: dict) -> list[tuple]:
    """What must match between the tables of two campaigns: rows, columns, run counts."""
    return sorted(
        (
            r["config"],
            json.dumps(r["sweep"], sort_keys=True),
            r["n_ok"],
            r["n_failed"],
            r["headline"],
            r["latency"],
            sorted(r),
        )
        for r in shown
    )


def test_sigkill_then_doctor_then_resume(tmp_path: Path) -> None:
    spec = tmp_path / "resume.toml"
    spec.write_text(SPEC)
    db = tmp_path / "r.db"
    # the planned runs only (--budget 0): the questions would add runs the resumed and
    # the uninterrupted campaign need not add alike
    planned_only = ["--db", str(db), "--no-collect", "--budget", "0"]
    run = [sys.executable, "-m", "fslab", "run", str(spec), *planned_only]
    proc = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # wait for one committed point and the next point's mount, then kill in its workload
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = any(row[0] != "pending" for row in committed(db, 1).values())
            if done and owned_by([proc.pid]).mounts:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the campaign never reached its second point")
        time.sleep(0.6)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    left = owned_by([proc.pid])
    assert left.mounts and left.loop_devices and left.images, "killed mid-point: leftovers"
    with Store(db) as store:
        assert store.campaign(1).status == "interrupted"  # stored running; its lock died with it
        assert store.integrity_ok()
    before = committed(db, 1)
    finished = {seq: row for seq, row in before.items() if row[0] != "pending"}
    assert finished and len(finished) < PLANNED, before
    # the point in flight was never half-saved: one transaction at its end, which never came
    assert all(row[1] is None and not row[3] for seq, row in before.items() if seq not in finished)

    found = find_leftovers()  # what `fslab doctor` lists and `fslab run` warns about
    assert set(left.mounts) <= set(found.mounts)
    assert set(left.loop_devices) <= set(found.loop_devices)
    cleanup = fslab("doctor", "--cleanup")
    assert "leftovers released" in cleanup.stdout, cleanup.stdout
    orphans = subprocess.run(
        ["pgrep", "-f", f"/run/fslab/mnt-{proc.pid}-"], capture_output=True, text=True
    ).stdout.split()
    assert not orphans, "doctor --cleanup stops the fio a killed fslab left writing"
    assert wait_released([proc.pid]).empty()

    resumed = fslab("run", "--resume", "1", *planned_only, "--json")
    assert resumed.returncode == 0, resumed.stderr
    after = committed(db, 1)
    assert sorted(after) == list(range(PLANNED))  # UNIQUE(campaign, seq): none duplicated
    assert all(after[seq] == row for seq, row in finished.items()), "a finished point changed"
    assert [row[0] for row in after.values()] == ["ok"] * PLANNED
    assert wait_released([proc.pid]).empty()

    uninterrupted = fslab("run", str(spec), *planned_only, "--json")
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    one, two = json.loads(resumed.stdout), json.loads(uninterrupted.stdout)
    assert one["campaign"]["status"] == two["campaign"]["status"] == "complete"
    assert structure(one["results"]) == structure(two["results"])
    assert one["failures"] == two["failures"] == []
    with Store(db) as store:
        assert store.integrity_ok()
