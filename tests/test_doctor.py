"""`fslab doctor`: every check the issue lists is made and explained."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from fslab import cli
from fslab.run.doctor import run_checks


def test_doctor_covers_root_tools_perf_tracefs_loop_and_ram():
    names = {c.name for c in run_checks(image_bytes=1024**3)}
    for needed in ("root", "fio", "losetup", "loop devices", "RAM for images", "tracefs"):
        assert any(needed in name for name in names), needed
    assert any(name.startswith("perf") for name in names)
    assert any(name.startswith("collector ") for name in names)
    for check in run_checks(image_bytes=1024**3):
        assert check.ok or check.fix, f"{check.name}: a failed check must say how to fix it"


def test_doctor_json():
    result = CliRunner().invoke(cli.app, ["doctor", "--json"])
    data = json.loads(result.stdout)
    assert {"checks", "leftovers"} <= set(data)
    assert result.exit_code == (
        1 if any(c["required"] and not c["ok"] for c in data["checks"]) else 0
    )
