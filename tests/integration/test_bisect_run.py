"""`git bisect run fslab bisect-run`: a spec file's git history, bisected for real.

Six commits of one spec; the fourth switches on data=journal, which costs
fsync-heavy random writes about half their IOPS on this machine. The good
and bad references are campaigns of the first and last commit. git bisect
run then checks out commits and runs `fslab bisect-run`, which runs the
checked-out spec on real loop devices, mkfs, mount and fio and exits 0
(good), 1 (bad) or 125 (skip); the bisection must name the fourth commit.
Runs are short (one point, 4 runs of 3 s, up to 16 when the machine is
busy and a decision unclear); the test takes three to six minutes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import cli
from tests.conftest import requires_root

SPEC = """\
# {comment}
name = "bisect-me"
description = "{description}"

[target]
kind = "ram"
size = "1GiB"

[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount_options = {mount_options}

[workload]
kind = "fio"
command_line = '''
fio --name=w --rw=randwrite --ioengine=sync --buffered=1 --bs=16k --filesize=4m
    --fsync=1 --thread --time_based --runtime=3 --group_reporting
'''

[sweep]
numjobs = [8]

[run]
repeat = 4
ramp = "1s"
"""
FAST = '["noatime"]'
SLOW = '["noatime", "data=journal"]'
# (commit message, comment, description, mount options): the fourth costs throughput
HISTORY = [
    ("first spec", "a spec under version control", "one point", FAST),
    ("say what it is", "fsync-heavy random writes", "one point", FAST),
    ("describe it better", "fsync-heavy random writes", "16k random writes + fsync", FAST),
    ("journal the data too", "fsync-heavy random writes", "16k random writes + fsync", SLOW),
    ("reword", "fsync-heavy random writes on ext4", "16k random writes + fsync", SLOW),
    ("final wording", "fsync-heavy random writes on ext4", "16k writes + fsync, 8 jobs", SLOW),
]


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=600
    )
    return proc.stdout


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [sys.executable, "-m", "fslab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def make_history(repo: Path) -> list[str]:
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@fslab")
    git(repo, "config", "user.name", "fslab test")
    commits = []
    for message, comment, description, options in HISTORY:
        text = SPEC.format(comment=comment, description=description, mount_options=options)
        (repo / "spec.toml").write_text(text)
        git(repo, "add", "spec.toml")
        git(repo, "commit", "-q", "-m", message)
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    return commits


def reference(repo: Path, commit: str, db: Path) -> int:
    """Run the spec as of `commit` with 12 runs (references are measured well); its id."""
    git(repo, "checkout", "-q", commit)
    proc = fslab(
        "run", str(repo / "spec.toml"), "--no-collect", "--no-preflight", "--db", str(db),
        "--set", "run.repeat=12",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return int(proc.stderr.split("campaign ", 1)[1].split()[0])


@requires_root
def test_git_bisect_run_lands_on_the_commit_that_costs_throughput(tmp_path, no_leaks):
    repo, db = tmp_path / "specs", tmp_path / "bisect.db"
    commits = make_history(repo)
    good = reference(repo, commits[0], db)
    bad = reference(repo, commits[-1], db)
    git(repo, "checkout", "-q", commits[-1])
    git(repo, "bisect", "start", commits[-1], commits[0])
    command = [
        sys.executable, "-m", "fslab", "bisect-run", "spec.toml",
        "--good", str(good), "--bad", str(bad), "--db", str(db), "--no-collect",
        "--max-repeat", "16", "--log", str(tmp_path / "bisect.log"),
    ]  # fmt: skip
    proc = subprocess.run(
        ["git", "-C", str(repo), "bisect", "run", *command],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    log = (tmp_path / "bisect.log").read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr + log
    assert f"{commits[3]} is the first bad commit" in proc.stdout, proc.stdout + log
    # every decision was logged with its numbers
    assert "position" in log and "good campaign" in log, log
    git(repo, "bisect", "reset")
