"""fs_mark, sysbench, dbench and command end to end: a tiny spec each, on a RAM loop
device, through `fslab run` as a user runs it (a few seconds each)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import require_tool, requires_root

from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

HEAD = """
name = "{name}"
[target]
kind = "ram"
size = "512MiB"
[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[run]
repeat = 1
warmup = 0
runtime = "{runtime}"
"""


def fslab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [sys.executable, "-m", "fslab", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=300,
    )


def run_spec(tmp_path: Path, name: str, body: str, runtime: str = "2s") -> tuple[dict, Path]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(HEAD.format(name=name, runtime=runtime) + body)
    db = tmp_path / "r.db"
    argv = ["run", str(spec), "--db", str(db), "--no-collect", "--budget", "0", "--json"]
    proc = fslab(*argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), db


def measured(db: Path) -> list[tuple[list[list[str]], dict[str, float]]]:
    """Each run's commands and metrics."""
    with Store(db) as store:
        (campaign,) = store.campaigns()
        metrics = store.metrics(campaign.id)
        points = store.points(campaign.id)
        assert [p.status for p in points] == ["ok"] * len(points)
        return [(store.commands(p.id), metrics[p.id]) for p in points]


def test_fs_mark(tmp_path, no_leaks):
    require_tool(shutil.which("fs_mark"), "fsmark")
    body = """
[workload]
kind = "fs_mark"
files = 200
size = 4096
dirs = 2
iterations = 2
[sweep]
threads = [2, 4]
"""
    result, db = run_spec(tmp_path, "fsm", body)
    assert {r["headline"] for r in result["results"]} == {"fs_mark.files_per_s"}
    for commands, metrics in measured(db):
        (argv,) = [c for c in commands if c[0] == "fs_mark"]
        threads = int(argv[argv.index("-t") + 1])
        assert metrics["fs_mark.files"] == 2 * threads * 200  # -n is per thread
        assert metrics["fs_mark.files_per_s"] > 0 and metrics["fs_mark.iterations"] == 2
    assert not list(tmp_path.glob("*.log")) and not (tmp_path / "fs_log.txt").exists()


def test_sysbench(tmp_path, no_leaks):
    require_tool(shutil.which("sysbench"), "sysbench")
    body = """
[workload]
kind = "sysbench"
file_num = 4
file_total_size = "16MiB"
fsync_freq = 1
[sweep]
threads = [1, 2]
"""
    result, db = run_spec(tmp_path, "sb", body, runtime="1s")
    assert {r["headline"] for r in result["results"]} == {"sysbench.write.ops_per_s"}
    for commands, metrics in measured(db):
        phases = [c[-1] for c in commands if "sysbench" in c]
        assert phases == ["prepare", "run", "cleanup"]
        assert metrics["sysbench.write.ops_per_s"] > 0 and metrics["sysbench.fsync.ops_per_s"] > 0
        assert "sysbench.lat_ms_p99" in metrics
    assert not list(tmp_path.glob("test_file.*"))  # in the scratch filesystem, not here
    shown = fslab("show", "--db", str(db), cwd=tmp_path)
    caption = " ".join(shown.stdout.split())
    # sysbench's percentiles are its own: the caption does not speak of fio's histograms
    assert "as the tool reports it" in caption and "histogram" not in caption, shown.stdout


def test_dbench(tmp_path, no_leaks):
    require_tool(shutil.which("dbench"), "dbench")
    body = """
[workload]
kind = "dbench"
[sweep]
clients = [1, 2]
"""
    result, db = run_spec(tmp_path, "db", body, runtime="2s")
    assert {r["headline"] for r in result["results"]} == {"dbench.bw_bytes_s"}
    for commands, metrics in measured(db):
        (argv,) = [c for c in commands if c[0] == "dbench"]
        assert argv[argv.index("-t") + 1] == "2"
        assert metrics["dbench.bw_bytes_s"] > 0 and metrics["dbench.clients"] == int(argv[-1])


COMMAND = """
[workload]
kind = "command"
argv = ["sh", "-c", 'i=0; while [ $i -lt "$N" ]; do : > f$i; i=$((i + 1)); done; ls | wc -l; pwd']
{opt_in}
[workload.figure]
name = "files"
direction = "higher"
pattern = '^\\s*(\\d+)$'
[sweep]
N = [10, 20]
"""


def test_command_needs_the_opt_in_and_runs_in_the_scratch_dir(tmp_path, no_leaks):
    spec = tmp_path / "c.toml"
    spec.write_text(HEAD.format(name="c", runtime="2s") + COMMAND.format(opt_in=""))
    db = tmp_path / "r.db"
    refused = fslab("run", str(spec), "--db", str(db), "--no-collect", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "workload.argv" in refused.stderr and "allow_commands" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not list(tmp_path.glob("f*")) and (not db.exists() or Store(db).campaigns() == [])

    body = COMMAND.format(opt_in="allow_commands = true")
    spec.write_text(HEAD.format(name="c", runtime="2s") + body)
    argv = ["run", str(spec), "--db", str(db), "--no-collect", "--budget", "0", "--json"]
    ran = fslab(*argv, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "allow_commands: the workload runs N=10 sh -c" in ran.stderr
    result = json.loads(ran.stdout)
    assert {r["headline"] for r in result["results"]} == {"command.figure_higher"}
    for commands, metrics in measured(db):
        (run,) = [c for c in commands if c[0] == "env"]
        n = int(run[4].removeprefix("N="))
        # the mark a cleanup after a killed fslab finds its processes by
        assert run[5] == f"FSLAB_WORKLOAD={run[2]}" and run[2].startswith("/run/fslab/")
        assert metrics["command.figure_higher"] >= n  # its files, and nothing else's
        assert 0 < metrics["command.seconds"] < 60
    assert not list(tmp_path.glob("f[0-9]*"))  # they went into the scratch filesystem


def test_dd_reads_a_file_it_wrote_from_a_cold_cache(tmp_path, no_leaks):
    """read = true: the file (size) is laid out and synced first, read whole at each bs,
    its pages dropped before every read (a page-cache copy cannot stand in for the
    filesystem's read path); the recorded commands are the layout, the drop and the
    read, never a shell line."""
    body = """
[workload]
kind = "dd"
read = true
size = "32MiB"
mode = "sustained"
[sweep]
bs = ["8k", "64k"]
"""
    result, db = run_spec(tmp_path, "ddread", body, runtime="1s")
    assert {r["headline"] for r in result["results"]} == {"dd.bw_bytes_s"}
    for commands, metrics in measured(db):
        dds = [argv for argv in commands if argv[0] == "dd"]
        layout, drop, read = dds[:3]
        assert layout[:2] == ["dd", "if=/dev/zero"] and "conv=fsync" in layout
        assert "iflag=nocache" in drop and drop[1] == f"if={layout[2][3:]}"
        assert read[1] == drop[1] and read[2] == "of=/dev/null"
        assert layout[3:5] == ["bs=1M", "count=32"]
        assert read[4] == ("count=4096" if read[3] == "bs=8k" else "count=512")
        assert metrics["dd.bytes"] % (32 * 1024**2) == 0 and metrics["dd.bytes"] > 0
        assert metrics["dd.bw_bytes_s"] > 0
