"""Setup steps in a real point: fslab makes the file and sets the setting itself, the
workload sees them, and the setting is back afterwards; the recipe repeats them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from tests import cli
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
options = {{ name = "w", rw = "randwrite", bs = "4k", filename = "file1", size = "8m" }}
[[setup]]
kind = "mkdir"
path = "data"
[[setup]]
kind = "file"
path = "file1"
size = "4GiB"
note = "the reporter's truncate -s 4G"
[[setup]]
kind = "sysctl"
name = "vm.vfs_cache_pressure"
value = {pressure}
[[setup]]
kind = "drop_caches"
[[setup]]
kind = "queue"
name = "wbt_lat_usec"
value = "0"
[run]
repeat = 1
warmup = 0
runtime = "1s"
"""


def _run(tmp_path: Path, spec_text: str) -> Path:
    """`fslab run` on the spec without collectors, as a user runs it; the database."""
    spec = tmp_path / "spec.toml"
    spec.write_text(spec_text)
    db = tmp_path / "r.db"
    done = cli.run(
        [sys.executable, "-m", "fslab", "run", str(spec), "--db", str(db), "--no-collect"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return db


def test_setup_steps_run_and_settings_come_back(tmp_path, no_leaks):
    before = PRESSURE.read_text().strip()
    pressure = 137 if before != "137" else 138
    db = _run(tmp_path, SPEC.format(pressure=pressure))
    assert PRESSURE.read_text().strip() == before  # put back
    with Store(db) as store:
        (point,) = store.points(store.latest_campaign_id())
        assert point.status == "ok", point.error
        lines = [" ".join(argv) for argv in store.commands(point.id)]
    made = [line for line in lines if line.startswith(("mkdir", "truncate", "sysctl"))]
    assert made[0].startswith("mkdir -p ") and made[0].endswith("/data")
    assert made[1].startswith("truncate -s 4294967296 ") and made[1].endswith("/file1")
    assert f"sysctl -w vm.vfs_cache_pressure={pressure}" in made
    assert "sysctl -w vm.drop_caches=3" in made
    assert made[-1] == f"sysctl -w vm.vfs_cache_pressure={before}"  # after the workload
    fio = next(i for i, line in enumerate(lines) if line.startswith("fio"))
    assert lines.index(made[1]) < fio < lines.index(made[-1])
    # the queue setting went to the point's own loop device, and was put back after fio
    queue = [i for i, line in enumerate(lines) if line.endswith("/queue/wbt_lat_usec")]
    assert len(queue) == 2 and queue[0] < fio < queue[1]
    assert re.fullmatch(
        r"sh -c echo 0 > /sys/class/block/loop\d+/queue/wbt_lat_usec", lines[queue[0]]
    )
    assert not lines[queue[1]].startswith("sh -c echo 0 ")


DEVICES_SPEC = """
name = "btrfs-raid0"
[target]
kind = "ram"
size = "512MiB"
devices = 3
[[filesystems]]
label = "btrfs-raid0"
type = "btrfs"
mkfs_options = ["-d", "raid0", "-m", "raid1"]
[[filesystems]]
label = "ext4"
type = "ext4"
[workload]
kind = "dd"
bs = "1M"
count = 64
conv = "fsync"
[run]
repeat = 1
warmup = 0
runtime = "1s"
"""


def test_a_btrfs_spans_its_devices_and_all_are_released(tmp_path, no_leaks):
    """target.devices = 3: three loop images under the btrfs (raid0 data, raid1 metadata),
    the ext4 beside it on one; every loop device is gone afterwards (no_leaks)."""
    db = _run(tmp_path, DEVICES_SPEC)
    with Store(db) as store:
        points = {p.config: p for p in store.points(store.latest_campaign_id())}
        commands = {c: [" ".join(a) for a in store.commands(p.id)] for c, p in points.items()}
    btrfs, ext4 = points["btrfs-raid0"], points["ext4"]
    assert btrfs.status == ext4.status == "ok", (btrfs.error, ext4.error)
    assert btrfs.facts.filesystem.total_devices == 3
    mkfs = next(c for c in commands["btrfs-raid0"] if c.startswith("mkfs.btrfs"))
    assert mkfs.count("/dev/shm/") == 3 and "-d raid0 -m raid1" in mkfs
    mount = next(c for c in commands["btrfs-raid0"] if c.startswith("mount "))
    assert mount.count("device=/dev/loop") == 2
    assert sum(c.startswith("losetup --find") for c in commands["btrfs-raid0"]) == 3
    assert sum(c.startswith("losetup --find") for c in commands["ext4"]) == 1


CONFIG_SETUP_SPEC = """
name = "config-setup"
[target]
kind = "ram"
size = "512MiB"
[[filesystems]]
label = "sparse"
type = "ext4"
[[filesystems]]
label = "overwrite"
type = "ext4"
setup = [{ kind = "file", path = "file1", size = "16MiB", how = "write" }]
[workload]
kind = "fio"
options = { name = "w", rw = "randwrite", bs = "4k", filename = "file1", size = "16m", direct = 1 }
[[setup]]
kind = "file"
path = "file1"
size = "16MiB"
[run]
repeat = 1
warmup = 0
runtime = "1s"
"""


def test_a_configuration_s_own_steps_run_after_the_spec_s_and_only_for_it(tmp_path, no_leaks):
    """The overwrite counterfactual: one configuration writes the sparse file in full
    before the workload; the other leaves it sparse."""
    db = _run(tmp_path, CONFIG_SETUP_SPEC)
    with Store(db) as store:
        points = {p.config: p for p in store.points(store.latest_campaign_id())}
        commands = {c: [" ".join(a) for a in store.commands(p.id)] for c, p in points.items()}
    assert all(p.status == "ok" for p in points.values())
    made = {
        c: [x.split()[0] for x in lines if x.startswith(("truncate", "dd "))]
        for c, lines in commands.items()
    }
    assert made == {"sparse": ["truncate"], "overwrite": ["truncate", "dd"]}
