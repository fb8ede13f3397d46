"""The between-campaign noise model, series and bisect decisions, on real spaced campaigns.

Data: bench/spaced/data/campaign-*.json.gz, recorded by bench/spaced/record.sh
(exported by bench/spaced/export.py): campaigns of bench/spaced/base.toml
(ext4, 16k random writes + fsync, 8 and 64 jobs, 5 runs of 4 s) and of
cost.toml and cost1k.toml (the same with 2 KiB and 1 KiB blocks), each its
own campaign, minutes to an hour apart on this 2-CPU VM; the 64-job family in
bench/spaced/data/spaced64 (base64.toml, 16 runs, and cost64.toml, dioread_lock),
recorded the same way; and tests/data/series:
six campaigns of one name, the last three with data=journal.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.verdicts import FLAGGED
from fslab.analyze.history.baselines import compare_with_noise, noise_model
from fslab.analyze.history.position import ReferencesTooClose, decide
from fslab.analyze.history.series import build_series, select_campaigns
from fslab.analyze.noise.model import TEST_NAME
from fslab.analyze.versus.comparisons import campaign_comparisons
from fslab.store.db import CampaignRow, Store
from fslab.store.exchange import import_campaign
from tests.spaced_support import imported, spaced_exports

SPACED = Path(__file__).parent.parent / "bench" / "spaced" / "data"
SERIES = Path(__file__).parent / "data" / "series"
HEADLINE = "fio.write.iops"


def _exports() -> list[dict]:
    return spaced_exports(SPACED)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with imported(tmp_path_factory.mktemp("spaced") / "spaced.db", _exports()) as s:
        yield s


def _named(store: Store, name: str) -> list[CampaignRow]:
    return [c for c in store.campaigns() if c.name == name]


@pytest.fixture(scope="module")
def base(store) -> list[CampaignRow]:
    return _named(store, "spaced-base")


@pytest.fixture(scope="module")
def cost(store) -> list[CampaignRow]:
    """The 1 KiB block size campaigns: the real cost (cost.toml's 2 KiB blocks cost ~2%)."""
    return _named(store, "spaced-cost1k")


def _apart(a: CampaignRow, b: CampaignRow, minutes: float = 5.0) -> bool:
    """Run apart in time: not in the same hold of the lock (those are ~3 min apart)."""
    gap = datetime.fromisoformat(b.started_at) - datetime.fromisoformat(a.started_at)
    return abs(gap.total_seconds()) >= 60 * minutes


def _aa_pairs(campaigns: list[CampaignRow]) -> list[tuple[CampaignRow, CampaignRow]]:
    return [(a, b) for i, a in enumerate(campaigns) for b in campaigns[i + 1 :] if _apart(a, b)]


def _flagged(comparisons) -> bool:
    return any(row.verdict in FLAGGED for c in comparisons for row in c.table.rows)


def _found(comparisons) -> bool:
    head = [row for c in comparisons for row in c.table.rows if row.metric == HEADLINE]
    return any(r.verdict == "worse" for r in head) and not any(r.verdict == "better" for r in head)


def test_the_recording_has_enough_spaced_campaigns(base, cost) -> None:
    assert len(base) >= 6 and len(cost) >= 2


def test_campaigns_drift_more_than_their_runs_say(store, base) -> None:
    model = noise_model(store, base[0], [HEADLINE])
    assert model.calibrated and len(model.baseline_ids) == len(base)
    assert all(noise.campaigns == len(base) for noise in model.points.values())
    # at 8 jobs the campaigns' levels spread by ~5%, beyond what their runs explain
    # (at 64 jobs the REML fit puts the drift at 0: the 13% run noise covers it)
    assert max(noise.between_cv_pct for noise in model.points.values()) > 3.0


def test_aa_across_spaced_campaigns_flags_at_most_one_set_in_twenty(store, base) -> None:
    pairs = _aa_pairs(base)
    assert len(pairs) >= 12
    flagged = sum(_flagged(compare_with_noise(store, a.id, b.id)) for a, b in pairs)
    assert flagged <= len(pairs) / 20, f"{flagged} of {len(pairs)} A/A sets flagged"


def test_aa_at_64_jobs_needs_the_noise_model(store) -> None:
    """At 64 jobs the campaigns' levels drift by ~11% from one hold of the lock to the
    next: judged on the runs inside each campaign most A/A sets flag; with the model none."""
    base64 = _named(store, "spaced64-base")
    pairs = _aa_pairs(base64)
    assert len(pairs) >= 10
    with_model = sum(_flagged(compare_with_noise(store, a.id, b.id)) for a, b in pairs)
    data = {c.id: load_campaign(store, c.id) for c in base64}
    plain = sum(_flagged(campaign_comparisons(data[a.id], data[b.id])) for a, b in pairs)
    assert with_model <= len(pairs) / 20, f"{with_model} of {len(pairs)} A/A sets flagged"
    assert plain >= len(pairs) / 2, f"only {plain} of {len(pairs)} flagged without the model"


def test_aa_over_both_recordings_flags_at_most_one_set_in_twenty(store) -> None:
    pairs = _aa_pairs(_named(store, "spaced-base")) + _aa_pairs(_named(store, "spaced64-base"))
    assert len(pairs) >= 20
    flagged = sum(_flagged(compare_with_noise(store, a.id, b.id)) for a, b in pairs)
    assert flagged <= len(pairs) / 20, f"{flagged} of {len(pairs)} A/A sets flagged"


def test_a_real_cost_is_found_across_spaced_campaigns(store, base, cost) -> None:
    pairs = [(a, b) for a in base for b in cost]
    found = sum(_found(compare_with_noise(store, a.id, b.id)) for a, b in pairs)
    assert found >= 0.8 * len(pairs), f"found in {found} of {len(pairs)} sets"


def test_compare_says_which_model_and_how_many_baselines_back_it(store, base) -> None:
    (comparison,) = compare_with_noise(store, base[0].id, base[-1].id)
    assert not comparison.provisional
    assert all(row.test == TEST_NAME for row in comparison.table.rows)
    assert (
        f"noise model: mixed model with the campaign as a block (statsmodels MixedLM, REML), "
        f"{len(base) - 1} baseline campaigns" in comparison.notes[0]
    )


def test_without_calibration_the_verdict_is_provisional_and_says_what_to_run(
    tmp_path, base
) -> None:
    exports = [d for d in _exports() if d["campaign"]["name"] == "spaced-base"][:2]
    with Store(tmp_path / "two.db") as store:
        a, b = (import_campaign(store, d) for d in exports)
        (comparison,) = compare_with_noise(store, a, b)
    assert comparison.provisional
    assert all(row.test != TEST_NAME for row in comparison.table.rows)
    assert any("fslab calibrate" in note and "--spacing" in note for note in comparison.notes)


def test_series_of_spaced_campaigns_has_no_change_point(store, base, cost) -> None:
    assert build_series(store, base, "spaced-base").changes == {}
    # two campaigns at a new level 20% lower are not yet a significant level against
    # ~5% drift: no change is claimed (more campaigns would show it)
    assert build_series(store, [*base, *cost], "base then 1 KiB blocks").changes == {}


def test_series_marks_where_data_journal_was_switched_on(tmp_path) -> None:
    """tests/data/series: three campaigns, then three with data=journal (record.sh there)."""
    with Store(tmp_path / "series.db") as s:
        for path in sorted(SERIES.glob("campaign-*.json.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                import_campaign(s, json.load(handle))
        built = build_series(s, select_campaigns(s, name="spaced-base"), "spaced-base")
    (changes,) = built.changes.values()
    assert [cp.index for cp in changes] == [3]
    assert changes[0].change_pct < -50 and changes[0].p_value < 0.01


def _data(store: Store, row: CampaignRow) -> CampaignData:
    return load_campaign(store, row.id)


def test_bisect_is_never_wrong_and_skips_what_the_drift_hides(store, base, cost) -> None:
    """A 20% change against ~5% drift between campaigns and ~12% between runs: one
    campaign of 5 runs cannot be placed at 99%, so the candidate is a skip, never a
    wrong good or bad (the git-bisect integration test covers decisive cases)."""
    good, bad = _data(store, base[0]), _data(store, cost[0])
    noise = noise_model(store, base[0], [HEADLINE], exclude=[base[-1].id])
    like_good = decide(good, bad, _data(store, base[-1]), noise)
    like_bad = decide(good, bad, _data(store, cost[-1]), noise)
    assert like_good.decision in ("good", "undecided") and not like_good.provisional
    assert like_bad.decision in ("bad", "undecided")
    assert like_good.position < like_bad.position, (like_good.describe(), like_bad.describe())
    for verdict in (like_good, like_bad):
        if verdict.decision == "undecided":
            assert verdict.exit_code == 125 and verdict.low < 0.5 < verdict.high


def test_bisect_refuses_references_that_do_not_differ(store, base) -> None:
    noise = noise_model(store, base[0], [HEADLINE])
    with pytest.raises(ReferencesTooClose):
        decide(_data(store, base[0]), _data(store, base[1]), _data(store, base[2]), noise)


def test_plain_and_model_comparisons_of_the_same_pair_differ_only_in_test(store, base) -> None:
    a, b = _data(store, base[0]), _data(store, base[-1])
    (plain,) = campaign_comparisons(a, b)
    assert plain.provisional and all(row.test != TEST_NAME for row in plain.table.rows)


def test_cli_compare_and_series_on_the_recording(store, base, cost) -> None:
    from typer.testing import CliRunner

    from fslab.cli import app

    db = str(store.path)
    result = CliRunner().invoke(app, ["compare", str(base[0].id), str(cost[-1].id), "--db", db])
    assert result.exit_code == 0, result.output
    assert "PROVISIONAL" not in result.output
    assert f"{len(base)} baseline campaigns" in result.output
    result = CliRunner().invoke(app, ["series", "spaced-base", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [c["campaign_id"] for c in data["campaigns"]] == [c.id for c in base]
    assert data["change_points"] == []
