"""End to end through the real loop/mkfs/mount/fio path, as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests import cli
from tests.conftest import loop_mounts, requires_root

from fslab.store.db import Store

TINY_SPEC = """
name = "tiny"
description = "ext4 + xfs, two numjobs values"

[target]
kind = "ram"
size = "1GiB"

[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount_options = ["noatime", "nodiratime", "data=ordered"]

[[filesystems]]
label = "xfs"
type = "xfs"
mount_options = ["noatime"]

[workload]
kind = "fio"
command_line = '''fio --name=w --rw=randwrite --ioengine=sync --buffered=1 --bs=16k
  --filesize=4m --fsync=1 --thread --time_based --runtime=60 --group_reporting'''

[sweep]
numjobs = [1, 4]

[run]
runtime = "{runtime}"
"""


def fslab(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return cli.run([sys.executable, "-m", "fslab", *args], capture_output=True, text=True, **kwargs)


def write_spec(tmp_path: Path, runtime: str) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SPEC.replace("{runtime}", runtime))
    return path


def split_warmups(points: list) -> tuple[list, list]:
    """The warm-up runs (one per configuration, discarded) and the measured ones."""
    return [p for p in points if p.role == "warmup"], [p for p in points if p.role != "warmup"]


def start_and_wait_for_mount(spec: Path, db: Path) -> subprocess.Popen[str]:
    """Start `fslab run` and return once its first point has mounted a filesystem."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fslab",
            "run",
            str(spec),
            "--db",
            str(db),
            "--no-collect",
            "--budget",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def mounted() -> bool:
        return any(f"/run/fslab/mnt-{proc.pid}-" in line for line in loop_mounts())

    # Return on the first sighting: fslab unmounts between runs, so asking again
    # afterwards can land in a gap (CI failed that way).
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if mounted():
            return proc
        if proc.poll() is not None:
            _, stderr = proc.communicate()
            raise AssertionError(f"fslab run exited {proc.returncode} before mounting: {stderr}")
        time.sleep(0.05)
    proc.kill()
    _, stderr = proc.communicate()
    raise AssertionError(f"no point mounted within 120 s: {stderr}")


@requires_root
def test_tiny_campaign_stores_trustworthy_results(tmp_path, no_leaks):
    spec = write_spec(tmp_path, "2s")
    db = tmp_path / "r.db"
    proc = fslab(
        "run", str(spec), "--db", str(db), "--no-collect", "--budget", "0", "--json", timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["campaign"]["status"] == "complete"
    rows = {(r["config"], r["sweep"]["numjobs"]): r for r in result["results"]}
    assert set(rows) == {("ext4", 1), ("ext4", 4), ("xfs", 1), ("xfs", 4)}
    assert all(r["median"] > 0 for r in rows.values())
    assert result["results"][0]["headline"] == "fio.write.iops"

    with Store(db) as store:
        (campaign,) = store.campaigns()
        assert campaign.host.nr_cpu_ids >= 1 and campaign.host.fio_version.startswith("fio")
        (warmups, points) = split_warmups(store.points(campaign.id))
        assert [(w.config, w.status) for w in warmups] == [("ext4", "ok"), ("xfs", "ok")]
        assert [p.status for p in points] == ["ok"] * 4
        metrics = store.metrics(campaign.id)
        ext4 = next(p for p in points if p.config == "ext4")
        m = metrics[ext4.id]
        assert m["fio.write.iops"] > 0 and m["fio.sync.lat_ns_p99"] > 0
        assert m["fio.write.clat_ns_p50"] <= m["fio.write.clat_ns_p99"]
        commands = [argv[0] for argv in store.commands(ext4.id)]
        assert "mkfs.ext4" in commands and "mount" in commands and "fio" in commands
        assert ext4.facts.mount_options_effective and ext4.facts.filesystem
        assert "noatime" in ext4.facts.mount_options_effective
        assert "data=ordered" in ext4.facts.mount_options_effective
        assert (ext4.facts.filesystem.journal_size_bytes or 0) > 0
        # the host's CPU while each run's workload ran: what steal drift is judged on
        for point in points:
            cpu = point.facts.host_cpu
            assert cpu and cpu.steal_pct is not None and cpu.idle_pct is not None
            assert 0 <= cpu.steal_pct <= 100 and 0 <= cpu.idle_pct <= 100
            # and the CPU's own speed beside it (collect.cpuspeed), with what it cost
            assert cpu.speed_probe_us and cpu.speed_probe_us > 0
            assert (cpu.speed_probe_samples or 0) >= 5
            assert cpu.speed_probe_cpu_pct is not None and cpu.speed_probe_cpu_pct < 5
            # and what other processes took (collect.others): fio is fslab's, not theirs
            assert cpu.others_cpu_pct is not None and 0 <= cpu.others_cpu_pct <= 100
        assert json.loads(store.artifact(ext4.id, "fio.json"))["jobs"]
        xfs = next(p for p in points if p.config == "xfs")
        assert xfs.facts.filesystem and xfs.facts.filesystem.log_size_bytes

    listed = json.loads(fslab("list", "--db", str(db), "--json").stdout)
    assert listed[0]["points"] == {"ok": 6}  # the two warm-ups are runs too
    shown = fslab("show", str(campaign.id), "--db", str(db))
    assert shown.returncode == 0 and "ext4" in shown.stdout and "xfs" in shown.stdout


@requires_root
def test_sigint_mid_run_releases_everything_and_resume_completes(tmp_path, no_leaks):
    db = tmp_path / "r.db"
    proc = start_and_wait_for_mount(write_spec(tmp_path, "4s"), db)
    time.sleep(1.5)  # inside the workload
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "resume" in stderr
    with Store(db) as store:
        (campaign,) = store.campaigns()
        assert campaign.status == "interrupted"
        pending_before = sum(p.status == "pending" for p in store.points(campaign.id))
    assert pending_before >= 1
    # the leak check runs again at teardown; resume finishes what was left
    done = fslab(
        "run",
        "--resume",
        str(campaign.id),
        "--db",
        str(db),
        "--no-collect",
        "--budget",
        "0",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        (warmups, points) = split_warmups(store.points(campaign.id))
        assert [p.status for p in points] == ["ok"] * 4 and len(warmups) == 2
        assert store.campaign(campaign.id).status == "complete"


@requires_root
def test_sigterm_releases_everything(tmp_path, no_leaks):
    proc = start_and_wait_for_mount(write_spec(tmp_path, "4s"), tmp_path / "r.db")
    proc.send_signal(signal.SIGTERM)  # possibly during mkfs, mount or layout
    proc.communicate(timeout=120)
    assert proc.returncode == 130
