"""The shared store goes down in the middle of a real campaign: no point is lost.

A campaign runs into a PostgreSQL cluster of its own (tests/pgcluster.py);
once its first run (the warm-up) is stored the server is stopped. The
campaign goes on, keeping each point's write on this host, adds no run for
its questions (the stored campaign cannot be read back) and ends saying so;
when the server is back, `fslab store flush` sends them and every point is
there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.pgcluster import running_cluster
from tests.tiny_spec import tiny_spec

from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

SPEC = tiny_spec("outage", numjobs=(1, 2))

FSLAB = str(Path(sys.executable).parent / "fslab")


def _stored_ok(location: str) -> int:
    try:
        with Store(location) as store:
            return sum(1 for c in store.campaigns() for p in store.points(c.id) if p.status == "ok")
    except Exception:
        return 0


def test_a_campaign_outlives_an_outage_of_its_store(tmp_path):
    spec = tmp_path / "outage.toml"
    spec.write_text(SPEC)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    with running_cluster() as (cluster, data_dir):
        db = cluster.create_database("outage")
        run = subprocess.Popen(
            [FSLAB, "run", str(spec), "--no-collect", "--db", db],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 120
        while _stored_ok(db) < 1 and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        cluster.stop(data_dir)
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 1, stderr[-2000:]
        flat = " ".join(stderr.split())
        assert "went away" in flat and "are kept on this host" in flat, flat[-1000:]

        cluster.start(data_dir)
        flush = cli.run(
            [FSLAB, "store", "flush", "--db", db], capture_output=True, text=True, env=env
        )
        assert flush.returncode == 0, flush.stderr
        assert "nothing waiting" in flush.stdout
        with Store(db) as store:
            (campaign,) = store.campaigns()
            assert campaign.status == "complete"
            stored = store.points(campaign.id)
            # the warm-up (discarded, stored like any run) and the 4 measured runs
            assert [p.role for p in stored].count("warmup") == 1
            points = [p for p in stored if p.role != "warmup"]
            assert [p.status for p in stored] == ["ok"] * 5 and len(points) == 4
            metrics = store.metrics(campaign.id)
            assert all(metrics[p.id].get("fio.write.iops", 0) > 0 for p in points)
