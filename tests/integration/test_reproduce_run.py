"""`fslab reproduce REPORT --run`: each founding case's generated spec, end to end.

Real loop devices, mkfs, mount, fio and dd; short runs through --quick and
--set overrides, so the test checks the path, not the figures. The fsync storm
runs on this host (--host); the cached-write report runs where its CPU count
puts it, in a qemu guest with possible_cpus 1728.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.guest_support import guest_kernel, require_qemu

from fslab.guest.leftovers import find_guest_leftovers
from fslab.store.db import Store

REPORTS = Path(__file__).parent.parent / "data" / "reports"


def reproduce_run(
    report: str, db: Path, *overrides: str, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    sets = [arg for value in overrides for arg in ("--set", value)]
    return cli.run(
        [
            sys.executable,
            "-m",
            "fslab",
            "reproduce",
            str(REPORTS / report),
            "--run",
            "--quick",
            "--no-collect",
            "--db",
            str(db),
            *flags,
            *sets,
        ],
        capture_output=True,
        text=True,
        # a 1728-CPU guest under TCG, its warm-up and the quick form's questions
        # (255 s of runs at most): 458 s on a quiet 2-CPU machine, past 600 s on a busy one
        timeout=1200,
        check=False,
    )


@requires_root
def test_fsync_storm_report_runs_end_to_end(tmp_path, no_leaks):
    db = tmp_path / "r.db"
    proc = reproduce_run(
        "ext4-fsync-storm.txt",
        db,
        "sweep.numjobs=[4,16]",
        "run.runtime=2s",
        "run.ramp=0s",
        "run.repeat=1",
        flags=("--host",),
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: not reproducible here: line 5: kernel 5.10" in proc.stderr
    with Store(db) as store:
        (campaign,) = store.campaigns()
        assert campaign.status == "complete"
        points = store.points(campaign.id)
        assert {(p.config, p.sweep["numjobs"]) for p in points} == {
            ("ext4-reported", 4),
            ("ext4-reported", 16),
            ("ext4-journal1g", 4),
            ("ext4-journal1g", 16),
        }
        assert all(p.status == "ok" for p in points)
        # the report's 64000 IOPS volume, applied with the blkio throttle at every point
        limits = [p.facts.device_limits for p in points]
        assert all(lim and (lim.read_iops, lim.write_iops) == (64000, 64000) for lim in limits)
        metrics = store.metrics(campaign.id)
        assert all(metrics[p.id]["fio.write.iops"] > 0 for p in points)
        journal = next(
            p for p in points if (p.config, p.sweep["numjobs"]) == ("ext4-journal1g", 16)
        )
        mkfs = next(argv for argv in store.commands(journal.id) if argv[0] == "mkfs.ext4")
        assert "size=1024" in mkfs
        fio = next(
            argv
            for argv in store.commands(journal.id)
            if argv[0] == "fio" and "--create_only=1" not in argv
        )
        assert "--filesize=4m" in fio and "--fsync=1" in fio and "--numjobs=16" in fio
        reported = campaign.spec.reported
        assert reported is not None
        assert [f.text for f in reported.expected] == ["22K", "less than 1K"]
        assert reported.hypotheses[0].names[1].name == "rsv_conversion_wq"


@requires_root
@pytest.mark.guest
def test_cached_write_report_runs_end_to_end_in_a_1728_cpu_guest(tmp_path, no_leaks):
    require_qemu()
    guest_kernel()
    db = tmp_path / "r.db"
    proc = reproduce_run("ext4-cached-write-1728.txt", db, "run.runtime=1s", "run.repeat=1")
    assert proc.returncode == 0, proc.stderr
    assert not find_guest_leftovers().processes
    with Store(db) as store:
        (campaign,) = store.campaigns()
        assert campaign.status == "complete"
        points = store.points(campaign.id)
        assert {(p.config, p.sweep["fill_leave_free"]) for p in points} == {
            ("ext4", ""),
            ("ext4", "64MiB"),
            ("xfs", ""),
            ("xfs", "64MiB"),
        }
        assert all(p.status == "ok" for p in points)
        # the report names no device limit, so no point is throttled
        assert all(p.facts.device_limits is None for p in points)
        metrics = store.metrics(campaign.id)
        assert all(metrics[p.id]["dd.bw_bytes_s"] > 0 for p in points)
        ext4 = next(p for p in points if p.config == "ext4")
        dd = next(argv for argv in store.commands(ext4.id) if argv[0] == "dd")
        assert "bs=1M" in dd and "count=10" in dd
        reported = campaign.spec.reported
        assert reported is not None
        assert {f.config for f in reported.expected if f.metric == "dd.bw_bytes_s"} == {
            "ext4",
            "xfs",
        }
        assert {u.fact for u in reported.unreproduced} == {"kernel", "memory"}
        for point in points:  # the reporter's CPU count as the guest's possible CPUs
            guest = point.facts.guest
            assert guest is not None and (guest.nr_cpu_ids, guest.online_cpus) == (1728, 2)
            if point.config == "ext4":  # watermark 864 MiB: 64 MiB free is below it
                below = point.sweep["fill_leave_free"] == "64MiB"
                assert point.facts.below_ext4_watermark is below
