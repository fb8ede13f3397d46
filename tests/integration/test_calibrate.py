"""`fslab calibrate`: campaigns of one spec, spaced, then the noise model they give.

Real loop devices, mkfs, mount and fio; three tiny campaigns (one point,
two runs of 1 s) a second apart, so the test checks the path, not figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests import cli
from tests.conftest import requires_root

from fslab.store.db import Store

SPEC = Path(__file__).parent.parent.parent / "bench" / "spaced" / "base.toml"


@requires_root
def test_calibrate_runs_spaced_campaigns_and_prints_the_model(tmp_path, no_leaks):
    db = tmp_path / "c.db"
    proc = cli.run(
        [
            sys.executable, "-m", "fslab", "calibrate", str(SPEC), "--times", "3",
            "--spacing", "1s", "--no-collect", "--db", str(db),
            "--set", "sweep.numjobs=[4]", "--set", "run.repeat=2",
            "--set", "run.runtime=1s", "--set", "run.ramp=0s",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with Store(db) as store:
        campaigns = store.campaigns()
    assert [c.status for c in campaigns] == ["complete"] * 3
    assert "idle 1s before campaign 2/3" in proc.stderr
    assert "3 baseline campaigns of spec" in proc.stdout
    (row,) = [line for line in proc.stdout.splitlines() if "numjobs=4" in line and "IOPS" in line]
    assert row.split()[:5] == ["config=ext4", "numjobs=4", "write", "IOPS", "3"]
