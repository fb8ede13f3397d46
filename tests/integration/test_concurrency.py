"""Two fslab processes on one database: readers during a run, and two campaigns at once.

The store is SQLite in WAL mode with a busy timeout: `fslab show` and `fslab
list` read while a campaign commits, and two campaigns (each with its own loop
devices and mounts) commit into the same file. A second runner for a
campaign that is already running is refused (a kernel lock beside the
database), so no point can run twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import requires_root
from tests.pid_leaks import owned_by, wait_released
from typer.testing import CliRunner

from fslab import cli
from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

SPEC = """
name = "{name}"
[target]
size = "1GiB"
[[filesystems]]
label = "{fs}"
type = "{fs}"
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
runtime = "1s"
"""


def start(tmp_path: Path, db: Path, name: str, fs: str) -> subprocess.Popen[str]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(SPEC.format(name=name, fs=fs))
    # the planned runs only: the questions' rounds are not what is tested here
    fslab = [sys.executable, "-m", "fslab"]
    argv = [*fslab, "run", str(spec), "--db", str(db), "--no-collect", "--budget", "0"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_campaigns_and_readers_on_one_database(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"  # created by whichever process gets there first
    runs = [start(tmp_path, db, "one", "ext4"), start(tmp_path, db, "two", "xfs")]
    pids = [p.pid for p in runs]
    readers = CliRunner()
    reads, both_mounted, refused = 0, False, False
    try:
        while any(p.poll() is None for p in runs):
            listed = readers.invoke(cli.app, ["list", "--db", str(db), "--json"])
            assert listed.exit_code == 0, listed.output
            if json.loads(listed.stdout):
                reads += 1
                for campaign in json.loads(listed.stdout):
                    shown = readers.invoke(
                        cli.app, ["show", str(campaign["id"]), "--db", str(db), "--json"]
                    )
                    assert shown.exit_code == 0, shown.output
                    assert json.loads(shown.stdout)["campaign"]["id"] == campaign["id"]
                    if campaign["status"] == "running" and not refused:
                        resume = ["--resume", str(campaign["id"]), "--budget", "0"]
                        again = readers.invoke(cli.app, ["run", *resume, "--db", str(db)])
                        # refused while its runner lives; if it just finished, nothing to do
                        refused = "being run by another fslab" in again.output
                        assert again.exit_code in (0, 1), again.output
            mounts = owned_by(pids).mounts
            both_mounted = both_mounted or {m.split("-")[1] for m in mounts} == set(map(str, pids))
            time.sleep(0.1)
    finally:
        for proc in runs:
            if proc.poll() is None:
                proc.kill()
    for proc in runs:
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    assert reads >= 3, "the readers never overlapped the campaigns"
    assert refused, "a second runner of a running campaign was not refused"
    assert both_mounted, "the two campaigns never had their own mounts at the same time"
    with Store(db) as store:
        campaigns = store.campaigns()
        assert sorted(c.name for c in campaigns) == ["one", "two"]
        for campaign in campaigns:
            assert campaign.status == "complete"
            points = store.points(campaign.id)
            # the warm-up (discarded, first), then the 2 measured runs
            assert [(p.role, p.status) for p in points] == [
                ("warmup", "ok"),
                ("clean", "ok"),
                ("clean", "ok"),
            ]
            assert {p.fs_type for p in points} == {"ext4" if campaign.name == "one" else "xfs"}
        assert store.integrity_ok()
    assert wait_released(pids).empty()
