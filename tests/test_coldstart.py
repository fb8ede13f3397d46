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
