"""The first `make demo` of fresh machines (tests/data/coldstart, capture.sh made them).

On a fresh machine the first round of the main job ran at about a third of the
later rounds; the falloff rule then read "no falloff" on the founding case. The
recorded cold starts must tell the story: the falloff found, credits first.
"""

from __future__ import annotations

import json

import pytest

from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR

CASES = sorted((DATA_DIR / "coldstart").glob("coldstart-*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_a_cold_start_finds_the_falloff_and_names_credits_first(case, tmp_path):
    store = Store(tmp_path / "c.db")
    campaign_id = import_campaign(store, json.loads(case.read_text()))
    by_config = {d.config: d for d in diagnose_campaign(store, campaign_id)}
    default = by_config["ext4-default"]
    assert default.falloff is not None and default.falloff.shown, default.falloff
    assert default.top == "jbd2-reserved-credits"


def test_there_is_a_recorded_cold_start():
    assert CASES, "tests/data/coldstart holds no case"


def test_show_lists_points_by_value_and_cuts_no_name_when_piped(tmp_path):
    """The warm-ups ran at 1024 jobs first; the table still reads 256 then 1024, and
    piped (80 columns, as into a mail) it keeps "ext4-journal1g" and every range whole."""
    from typer.testing import CliRunner

    from fslab.cli import app

    case = next(c for c in CASES if "20261204" in c.name)
    db = tmp_path / "c.db"
    import_campaign(Store(db), json.loads(case.read_text()))
    shown = CliRunner().invoke(app, ["show", "--db", str(db)], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    rows = [line for line in shown.output.splitlines() if line.startswith("│ ext4-")]
    assert [r.split("│")[1].strip() for r in rows] == [
        "ext4-default",
        "ext4-default",
        "ext4-journal1g",
        "ext4-journal1g",
    ]
    assert [r.split("│")[2].strip() for r in rows] == ["256", "1024", "256", "1024"]
    assert "…" not in shown.output
