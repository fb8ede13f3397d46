"""Faults during real campaigns: nothing leaks, no result is lost, failures are data.

The first tests run a fixed handful of the cases bench/fault_injection.py
draws at random (the bench runs >= 50 of them); the others check that a fio
or dd that fails, hangs or prints garbage becomes a failed point with its
stderr while the campaign goes on. A warm-up (point 0 here: one configuration)
is a run like the others: a failing one is stored as a failed point, and the
configuration's measured runs still run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from bench.fault_injection import Case, run_case
from tests.conftest import requires_root
from tests.pid_leaks import owned_by

from fslab.run.campaign import RunOptions, run_campaign, start_campaign
from fslab.spec.load import validate_spec
from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

# SIGKILL of fslab itself has its own, closer test in test_resume.py
FAST_CASES = [
    Case(0, "sigterm-self", stage="workload", point_seq=1, delay_s=0.4, configs=("ext4",)),
    Case(2, "sigkill-child:fio", stage="workload", point_seq=0, delay_s=0.3, configs=("xfs",)),
    Case(3, "busy-mount", stage="umount", point_seq=0, hold_s=6.5, configs=("ext4",)),
]


@pytest.mark.parametrize("case", FAST_CASES, ids=lambda c: c.describe())
def test_fault_leaves_nothing_and_loses_nothing(case: Case, tmp_path: Path) -> None:
    result = run_case(case, tmp_path, tmp_path / "results.db")
    assert result.fired, f"the fault never fired: {result.fault_detail}"
    assert result.leaks == []
    assert result.integrity_ok
    assert result.lost == []
    assert result.anomalies == []
    assert result.final_status == "complete"
    if case.fault.endswith("-self"):
        assert result.resumed
    if case.fault == "busy-mount":
        assert result.lazy_umounts == 1


# ------------------------------------------------------------------ failures as data

FAKE_FIO = """#!{python}
# numjobs=2: fio fails; numjobs=3: fio prints garbage; otherwise the real fio
import os, sys
args = sys.argv[1:]
if "--numjobs=2" in args and "--create_only=1" not in args:
    sys.stderr.write("fio: io_u error on file x: Input/output error: write offset=0\\n")
    sys.exit(1)
if "--numjobs=3" in args and "--create_only=1" not in args:
    print("<<< not json at all >>>")
    sys.exit(0)
os.execv({real!r}, [{real!r}, *args])
"""


def _campaign(tmp_path: Path, data: dict) -> tuple[Store, int]:
    store = Store(tmp_path / "results.db")
    spec = validate_spec(data)
    options = RunOptions(collect="off")
    campaign_id = start_campaign(store, spec, "", overrides={}, options=options)
    run_campaign(store, campaign_id, options=options)
    return store, campaign_id


def test_fio_failing_garbled_or_hung_is_a_failed_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bin" / "fio"
    fake.parent.mkdir()
    real = next(
        p
        for p in (os.path.join(d, "fio") for d in os.environ["PATH"].split(":"))
        if os.access(p, os.X_OK)
    )
    fake.write_text(FAKE_FIO.format(python=sys.executable, real=real))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setenv(
        "FSLAB_FAULTS",
        # numjobs=4: the warm-up (numjobs=5, the heaviest) is point 0
        '{"stage": "workload", "action": "stop-child:fio", "point_seq": 4, "delay_s": 0.3}',
    )
    data = {
        "name": "fio-failures",
        "target": {"size": "1GiB"},
        "filesystems": [{"label": "ext4", "type": "ext4"}],
        "workload": {
            "kind": "fio",
            "options": {"rw": "randwrite", "bs": "16k", "filesize": "4m", "thread": True},
        },
        "sweep": {"numjobs": [1, 2, 3, 4, 5]},
        "run": {"runtime": "1s", "timeout_factor": 1.5, "setup_timeout": "3s"},
    }
    store, campaign_id = _campaign(tmp_path, data)
    with store:
        (warmup, *points) = store.points(campaign_id)
        assert store.campaign(campaign_id).status == "complete"
        assert (warmup.role, warmup.sweep, warmup.status) == ("warmup", {"numjobs": 5}, "ok")
        assert [p.sweep["numjobs"] for p in points] == [1, 2, 3, 4, 5]
        assert [p.status for p in points] == ["ok", "failed", "failed", "failed", "ok"]
        failing, garbled, hung = points[1:4]
        assert "fio exited 1" in (failing.error or "")
        assert "Input/output error" in (failing.stderr or "")
        assert "unparsable fio output" in (garbled.error or "")
        assert "not json at all" in (garbled.stderr or "") or store.artifact(garbled.id, "fio.json")
        assert "fio hung" in (hung.error or "") and "4 s" in (hung.error or "")
        assert store.integrity_ok()
    assert owned_by([os.getpid()]).empty()


def test_dd_failing_or_hung_is_a_failed_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the warm-up (point 0, bs=8k: the last combination) hangs, and so does bs=4k
    hang = '{"stage": "workload", "action": "stop-child:dd", "point_seq": %d, "delay_s": 0.05}'
    monkeypatch.setenv("FSLAB_FAULTS", f"[{hang % 0}, {hang % 2}]")
    data = {
        "name": "dd-failures",
        "target": {"size": "1GiB"},
        "filesystems": [{"label": "ext4", "type": "ext4"}],
        # 1000-byte O_DIRECT writes are refused (EINVAL); 4k ones work
        "workload": {"kind": "dd", "count": 5000, "oflag": "direct", "mode": "sustained"},
        "sweep": {"bs": ["1000", "4k", "8k"]},
        "run": {"runtime": "1s", "timeout_factor": 1.5, "setup_timeout": "2s"},
    }
    store, campaign_id = _campaign(tmp_path, data)
    with store:
        (warmup, *points) = store.points(campaign_id)
        assert store.campaign(campaign_id).status == "complete"
        # a failed warm-up is a failed point like any other; the measured runs go on
        assert (warmup.role, warmup.sweep, warmup.status) == ("warmup", {"bs": "8k"}, "failed")
        assert "dd hung" in (warmup.error or "")
        assert [p.sweep["bs"] for p in points] == ["1000", "4k", "8k"]
        # 5000 x 8k per dd: long enough for the injected stop (0.05 s in), short enough
        # that a slow machine's run is not "hung"
        assert [p.status for p in points] == ["failed", "failed", "ok"], [p.error for p in points]
        assert "dd exited 1" in (points[0].error or "")
        assert "Invalid argument" in (points[0].stderr or "")
        assert "dd hung" in (points[1].error or "")
    assert owned_by([os.getpid()]).empty()
