"""`fslab run --until-ci`: real points appended after the plan and run by the runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests import cli
from tests.conftest import requires_root

from fslab.store.db import Store

# one configuration, one point, 1 s of fio: the smallest real campaign
TINY_SPEC = """
name = "tiny-adaptive"

[target]
kind = "ram"
size = "512MiB"

[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]

[workload]
kind = "fio"
command_line = '''fio --name=w --rw=randwrite --ioengine=sync --buffered=1 --bs=16k
  --filesize=4m --fsync=1 --thread --time_based --runtime=60 --group_reporting'''

[sweep]
numjobs = [2]

[run]
runtime = "1s"
"""


@requires_root
def test_until_ci_appends_and_runs_repetitions_up_to_the_cap(tmp_path: Path, no_leaks) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY_SPEC)
    db = tmp_path / "r.db"
    # +-0.01% is out of reach for fio on a loop device: the loop stops at the cap
    proc = cli.run(
        [
            sys.executable, "-m", "fslab", "run", str(spec), "--db", str(db),
            "--no-collect", "--no-preflight", "--until-ci", "0.01", "--max-repeat", "4",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "until-ci round 1" in proc.stderr
    (row,) = json.loads(proc.stdout)["results"]
    assert row["n_ok"] == 4 and len(row["values"]) == 4
    with Store(db) as store:
        (campaign,) = store.campaigns()
        points = store.points(campaign.id)
        assert campaign.status == "complete"
    (warmup, *measured) = points
    assert warmup.role == "warmup" and warmup.status == "ok"
    assert [(p.seq, p.repeat, p.status) for p in measured] == [(i + 1, i, "ok") for i in range(4)]


@requires_root
def test_run_asks_its_questions_within_the_budget(tmp_path: Path, no_leaks) -> None:
    spec = tmp_path / "tiny.toml"
    spec.write_text(
        TINY_SPEC.replace("numjobs = [2]", "numjobs = [1, 8]").replace(
            'runtime = "1s"', 'runtime = "1s"\nrepeat = 2'
        )
    )
    db = tmp_path / "r.db"
    proc = cli.run(
        [
            sys.executable, "-m", "fslab", "run", str(spec), "--db", str(db),
            "--no-collect", "--no-preflight", "--budget", "45s",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "questions: " in proc.stderr and "Does ext4 fall off?" in proc.stderr
    with Store(db) as store:
        (campaign,) = store.campaigns()
        points = store.points(campaign.id)
    assert campaign.status == "complete" and all(p.status == "ok" for p in points)
    spent = sum(1 for p in points if p.role != "warmup")
    assert spent >= 4  # the planned runs always run; the questions add within 45 s
