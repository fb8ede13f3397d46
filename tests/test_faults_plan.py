"""Fault plans (FSLAB_FAULTS) and the one-runner-per-campaign lock: no root needed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fslab.base import faults
from fslab.base.errors import FslabError, UsageError
from fslab.store.lock import campaign_lock


def test_plan_parsing_and_refusals() -> None:
    (fault,) = faults.parse_plan('{"stage": "workload", "action": "sigkill-child:fio"}')
    assert fault.point_seq is None and fault.delay_s == 0
    two = faults.parse_plan(json.dumps([{"stage": "mkfs", "action": "busy-mount"}] * 2))
    assert len(two) == 2
    for bad in (
        "not json",
        '{"stage": "lunch", "action": "sigint-self"}',
        '{"stage": "mkfs", "action": "explode"}',
        '{"stage": "mkfs", "action": "sigkill-child:"}',
        '{"stage": "mkfs", "action": "sigint-self", "delay_s": -1}',
        '{"stage": "mkfs", "action": "sigint-self", "when": 1}',
        "[3]",
    ):
        with pytest.raises(UsageError):
            faults.parse_plan(bad)


def test_a_fault_fires_once_at_its_point(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    log = tmp_path / "faults.jsonl"
    plan = {"stage": "mount", "action": "sigkill-child:nothing-by-this-name", "point_seq": 2}
    monkeypatch.setenv("FSLAB_FAULTS", json.dumps({**plan, "window_s": 0}))
    monkeypatch.setenv("FSLAB_FAULTS_LOG", str(log))
    for seq in range(4):
        faults.begin_point(seq)
        for stage in faults.STAGES:
            faults.checkpoint(stage)
    deadline = time.monotonic() + 5
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["seq"] == 2 and record["fired"] is False
    assert "no nothing-by-this-name process" in record["detail"]


def test_checkpoints_do_nothing_without_a_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FSLAB_FAULTS", raising=False)
    faults.begin_point(0)
    faults.checkpoint("workload")


def test_descendants_sees_grandchildren() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import subprocess; subprocess.run(['sleep', '5'])"],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            names = [comm for _pid, comm in faults.descendants(child.pid)]
            if "sleep" in names:
                break
            time.sleep(0.02)
        assert "sleep" in names
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def test_one_runner_per_campaign(tmp_path) -> None:
    db = tmp_path / "r.db"
    with campaign_lock(db, 1):
        with pytest.raises(FslabError, match="being run by another fslab"), campaign_lock(db, 1):
            pass
        with campaign_lock(db, 2):  # another campaign of the same database
            pass
    with campaign_lock(db, 1):  # released with its holder
        pass
