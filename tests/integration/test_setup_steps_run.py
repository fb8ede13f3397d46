"""Setup steps in a real point: fslab makes the file and sets the setting itself, the
workload sees them, and the setting is back afterwards; the recipe repeats them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import requires_root

from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

PRESSURE = Path("/proc/sys/vm/vfs_cache_pressure")

SPEC = """
name = "setup-steps"
[target]
kind = "ram"
size = "1GiB"
[[filesystems]]
label = "ext4"
type = "ext4"
mkfs_options = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[workload]
kind = "fio"
options = {{ name = "w", rw = "randwrite", bs = "4k", filename = "data/file1", size = "8m" }}
[[setup]]
kind = "mkdir"
path = "data"
[[setup]]
kind = "file"
path = "data/file1"
size = "4GiB"
note = "the reporter's truncate -s 4G"
[[setup]]
kind = "sysctl"
name = "vm.vfs_cache_pressure"
value = {pressure}
[[setup]]
kind = "drop_caches"
[run]
repeat = 1
warmup = 0
runtime = "1s"
"""


def test_setup_steps_run_and_settings_come_back(tmp_path, no_leaks):
    before = PRESSURE.read_text().strip()
    pressure = 137 if before != "137" else 138
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.format(pressure=pressure))
    db = tmp_path / "r.db"
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "run", str(spec), "--db", str(db), "--no-collect"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert PRESSURE.read_text().strip() == before  # put back
    with Store(db) as store:
        (point,) = store.points(store.latest_campaign_id())
        assert point.status == "ok", point.error
        lines = [" ".join(argv) for argv in store.commands(point.id)]
    made = [line for line in lines if line.startswith(("mkdir", "truncate", "sysctl"))]
    assert made[0].startswith("mkdir -p ") and made[0].endswith("/data")
    assert made[1].startswith("truncate -s 4294967296 ") and made[1].endswith("/data/file1")
    assert f"sysctl -w vm.vfs_cache_pressure={pressure}" in made
    assert "sysctl -w vm.drop_caches=3" in made
    assert made[-1] == f"sysctl -w vm.vfs_cache_pressure={before}"  # after the workload
    fio = next(i for i, line in enumerate(lines) if line.startswith("fio"))
    assert lines.index(made[1]) < fio < lines.index(made[-1])
