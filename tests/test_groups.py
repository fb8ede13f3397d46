"""Comparing groups of campaigns (`fslab compare 12,14,16 13,15,17`) on real spaced campaigns.

Data: the recordings of tests/test_noise.py (bench/spaced/data, made by
bench/spaced/record.sh and exported by bench/spaced/export.py): the `spaced`
family (6 base campaigns of 5 runs at 8 and 64 jobs, 2 with 1 KiB blocks,
about -20%) and `spaced64` (5 base campaigns of 16 runs at 64 jobs, 5 with
dioread_lock), and `spaced8` (14 base campaigns of 5 runs at 8 jobs, 9 on a device
capped at 54000 write IOPS, 5 at 60000), recorded while the machine's level fell. The
figures asserted here are those bench/stats_calibration.py prints for groups of M
campaigns a side.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import datetime
from itertools import combinations, product
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.campaign.verdicts import FLAGGED
from fslab.analyze.history.baselines import (
    baseline_campaigns,
    campaign_model,
    compare_with_noise,
    compare_with_noise_groups,
    fit_model,
    group_model,
    level_check,
    noise_model,
)
from fslab.analyze.history.series import build_series
from fslab.analyze.noise.model import TEST_NAME, fit_point_noise
from fslab.base.errors import UsageError
from fslab.cli import app
from fslab.store.db import CampaignRow, Store
from fslab.store.exchange import import_campaign

SPACED = Path(__file__).parent.parent / "bench" / "spaced" / "data"
HEADLINE = "fio.write.iops"


def _exports() -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(SPACED.glob("**/campaign-*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            out.append((path, json.load(handle)))
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("groups") / "spaced.db") as s:
        for _, data in _exports():
            import_campaign(s, data)
        yield s


def _named(store: Store, name: str) -> list[CampaignRow]:
    return [c for c in store.campaigns() if c.name == name]


def _minutes(a: CampaignRow, b: CampaignRow) -> float:
    gap = datetime.fromisoformat(b.started_at) - datetime.fromisoformat(a.started_at)
    return abs(gap.total_seconds()) / 60


def _splits(campaigns: list[CampaignRow], m: int) -> list[tuple[list[int], list[int]]]:
    """Two disjoint groups of m, no campaign within 5 minutes of one on the other side
    (not from the same hold of the machine lock); the earliest campaign's group first."""
    out = []
    for chosen in combinations(campaigns, 2 * m):
        for rest in combinations(chosen[1:], m - 1):
            a = [chosen[0], *rest]
            b = [c for c in chosen if c not in a]
            if all(_minutes(x, y) >= 5 for x in a for y in b):
                out.append(([c.id for c in a], [c.id for c in b]))
    return out


def _flagged(comparisons) -> bool:
    return any(row.verdict in FLAGGED for c in comparisons for row in c.table.rows)


def _found(comparisons) -> bool:
    head = [row for c in comparisons for row in c.table.rows if row.metric == HEADLINE]
    return any(r.verdict == "worse" for r in head) and not any(r.verdict == "better" for r in head)


def test_blocks_measure_each_campaign_around_its_own_block_mean() -> None:
    """A second spec 2x the first with the same spread: pooled with a block each, the
    drift is the first spec's alone; in one block the 2x would count as drift."""
    first = {1: [10.0, 10.2], 2: [12.0, 12.1], 3: [9.0, 9.1]}
    second = {cid + 3: [2 * v for v in runs] for cid, runs in first.items()}
    alone = fit_point_noise(first)
    pooled = fit_point_noise(
        {**first, **second}, {**dict.fromkeys(first, "a"), **dict.fromkeys(second, "b")}
    )
    mixed = fit_point_noise({**first, **second})
    assert alone is not None and pooled is not None and mixed is not None
    assert pooled.blocks == 2 and pooled.campaigns == 6
    assert pooled.between_var == pytest.approx(alone.between_var, rel=0.05)
    assert mixed.between_var > 5 * pooled.between_var
    # two blocks of one campaign each leave no degrees of freedom for the drift
    assert (
        fit_point_noise({1: [1.0, 1.1], 2: [2.0, 2.1], 3: [3.0, 3.3]}, {1: "a", 2: "b", 3: "b"})
        is None
    )


def test_grouped_aa_flags_at_most_one_set_in_twenty(store) -> None:
    """Both families, 2 and 3 campaigns a side: 38 + 2 sets, none flagged when measured."""
    sets = [
        split
        for name in ("spaced-base", "spaced64-base")
        for m in (2, 3)
        for split in _splits(_named(store, name), m)
    ]
    assert len(sets) >= 30
    flagged = sum(_flagged(compare_with_noise_groups(store, a, b)) for a, b in sets)
    assert flagged <= len(sets) / 20, f"{flagged} of {len(sets)} grouped A/A sets flagged"


def test_grouped_aa_without_the_drift_flags_often(store) -> None:
    """The same splits at 64 jobs with between_var set to 0 (runs only, as if campaigns
    did not drift): many flag, so the A/A figure above is the model's doing."""
    sets = _splits(_named(store, "spaced64-base"), 2)
    flagged = 0
    for a, b in sets:
        model = group_model(store, a, b)
        for key, noise in model.noise.points.items():
            model.noise.points[key] = replace(noise, between_var=0.0)
        flagged += _flagged(model.comparisons())
    assert flagged >= len(sets) / 2, f"only {flagged} of {len(sets)} flagged without the drift"


def test_grouped_power_grows_with_campaigns_a_side(store) -> None:
    """1 KiB blocks (about -20%): found in 10 of 12 sets with one campaign a side and in
    15 of 15 with two (bench/stats_calibration.py prints both)."""
    base, cost = _named(store, "spaced-base"), _named(store, "spaced-cost1k")

    def power(m: int) -> float:
        pairs = list(product(combinations(base, m), combinations(cost, m)))
        found = sum(
            _found(compare_with_noise_groups(store, [c.id for c in a], [c.id for c in b]))
            for a, b in pairs
        )
        return found / len(pairs)

    one, two = power(1), power(2)
    assert two >= 0.9 and two > one, (one, two)


def test_groups_with_too_few_campaigns_are_provisional(tmp_path) -> None:
    """Two base campaigns against one of another spec, nothing else stored: campaigns
    minus specs leaves 1 degree of freedom for the drift, so the verdict is provisional."""
    exports = [d for _, d in _exports()]
    picked = [d for d in exports if d["campaign"]["name"] == "spaced-base"][:2]
    picked.append(next(d for d in exports if d["campaign"]["name"] == "spaced-cost1k"))
    with Store(tmp_path / "three.db") as s:
        a, b, c = (import_campaign(s, d) for d in picked)
        (comparison,) = compare_with_noise_groups(s, [a, b], [c])
    assert comparison.provisional
    assert all(row.test != TEST_NAME for row in comparison.table.rows)
    assert any(
        "fslab calibrate" in note and "give more campaigns a side" in note
        for note in comparison.notes
    )


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory) -> tuple[str, dict[str, list[int]]]:
    """A store built with `fslab import` from the exported JSON: 3 spaced64 base campaigns,
    3 with dioread_lock, and one of the other family (another spec)."""
    tmp = tmp_path_factory.mktemp("cli")
    db = str(tmp / "cli.db")
    wanted = {"spaced64-base": 3, "spaced64-cost-dioread": 3, "spaced-base": 1}
    ids: dict[str, list[int]] = {name: [] for name in wanted}
    for path, data in _exports():
        name = data["campaign"]["name"]
        if name not in wanted or len(ids[name]) >= wanted[name]:
            continue
        plain = tmp / path.name.removesuffix(".gz")
        plain.write_text(json.dumps(data))
        result = CliRunner().invoke(app, ["import", str(plain), "--db", db])
        assert result.exit_code == 0, result.output
        ids[name].append(int(result.output.split()[-1]))
    return db, ids


def test_cli_compare_groups(cli_db) -> None:
    db, ids = cli_db
    base, cost = (
        ",".join(map(str, ids["spaced64-base"])),
        ",".join(map(str, ids["spaced64-cost-dioread"])),
    )
    result = CliRunner().invoke(app, ["compare", base, cost, "--db", db])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "PROVISIONAL" not in text
    assert f"campaigns {cost} vs campaigns {base} (baseline)" in text
    assert "mixed model (campaign block), 3 vs 3 campaigns, between-campaign CV" in text
    assert "each side around its own mean (the sides differ in spec or host)" in text
    as_json = CliRunner().invoke(app, ["compare", base, cost, "--db", db, "--json"])
    assert as_json.exit_code == 0, as_json.output
    (comparison,) = json.loads(as_json.output)["comparisons"]
    groups = comparison["groups"]
    assert groups["baseline"] == ids["spaced64-base"]
    assert groups["candidate"] == ids["spaced64-cost-dioread"]
    assert groups["test"] == TEST_NAME and set(groups["between_cv_pct"]) == {"numjobs=64"}
    assert {row["test"] for row in comparison["rows"]} == {TEST_NAME}
    assert {row["n_baseline"] for row in comparison["rows"]} == {48}


def test_cli_compare_groups_refuses_a_side_of_two_specs(cli_db) -> None:
    db, ids = cli_db
    odd = ids["spaced-base"][0]
    side = ",".join(map(str, [*ids["spaced64-base"][:2], odd]))
    result = CliRunner().invoke(
        app, ["compare", side, ",".join(map(str, ids["spaced64-cost-dioread"])), "--db", db]
    )
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"campaign {odd} on the baseline side: spec fingerprint" in text
    assert "Traceback" not in result.output
    bad = CliRunner().invoke(app, ["compare", f"{ids['spaced64-base'][0]},x", "1", "--db", db])
    assert bad.exit_code == 2 and "'x' is not a campaign id" in " ".join(bad.output.split())


def test_cli_compare_one_campaign_a_side_keeps_its_form(cli_db) -> None:
    db, ids = cli_db
    a, b = ids["spaced64-base"][0], ids["spaced64-cost-dioread"][0]
    result = CliRunner().invoke(app, ["compare", str(a), str(b), "--db", db])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"campaign {b} vs campaign {a} (baseline)" in text
    assert "3 baseline campaigns" in text and "campaigns a side" not in text


def test_hosts_are_keyed_by_the_name_a_campaign_is_stored_under(tmp_path) -> None:
    """Fleet hosts cloned from one image record one hostname; their inventory names (kept
    by export and import) tell them apart, so their campaigns are not each other's
    baselines and may not share a side."""
    exports = [d for _, d in _exports() if d["campaign"]["name"] == "spaced-base"][:4]
    elsewhere = json.loads(json.dumps(exports[3]))
    elsewhere["campaign"]["host_name"] = "fleet-b"
    with Store(tmp_path / "fleet.db") as s:
        ids = [import_campaign(s, d) for d in [*exports[:3], elsewhere]]
        rows = {c.id: c for c in s.campaigns()}
        assert rows[ids[0]].host.fact("hostname") == rows[ids[3]].host.fact("hostname")
        assert [c.id for c in baseline_campaigns(s, rows[ids[0]])] == ids[:3]
        with pytest.raises(UsageError, match=f"campaign {ids[3]} on the candidate side: host"):
            compare_with_noise_groups(s, ids[:2], [ids[2], ids[3]])


def test_a_machine_whose_level_moved_shows_it_in_the_series_and_the_model(store) -> None:
    """spaced8 (one point at 8 jobs, 5 runs a campaign, one base campaign a hold of the
    machine lock, 2 to 90 minutes apart): the machine's level fell by a fifth half-way
    through the recording (29.5K write IOPS, then 23.6K). `fslab series` marks it, and the
    noise model, which takes the campaigns as scattered around one level, asks for far
    more than the 8 campaigns a side it would need on a steady machine; the capped
    device's cost of about 10% is found in no set of one campaign a side, whether the pair
    lies on one level (judged with a mean per level) or across the move."""
    base, cost = _named(store, "spaced8-base"), _named(store, "spaced8-cost-iops54k")
    (changes,) = build_series(store, base, "spaced8-base").changes.values()
    (change,) = changes
    assert change.p_value < 0.01 and change.mean_after < 0.85 * change.mean_before
    assert 5 <= change.index <= len(base) - 5  # half-way, not an end effect
    (noise,) = noise_model(store, base[-1], [HEADLINE]).points.values()
    assert noise.between_cv_pct > 10.0
    needed = noise.campaigns_to_find(0.10, noise.runs // noise.campaigns)
    assert needed is None or needed > 16, needed
    pairs = [(a, b) for a in base for b in cost]
    assert not any(_found(compare_with_noise(store, a.id, b.id)) for a, b in pairs)
    # a mean per level (what a comparison on one level is judged with) halves the drift,
    # but a 10% change would still take 13 campaigns a side
    series = [load_campaign(store, c.id) for c in base]
    check = level_check(series, series[-1:], series[-1:])
    assert check is not None and len(check.levels) == 2
    blocks = {d.id: check.level_of(d.campaign.started_at) for d in series}
    (per_level,) = fit_model(
        series, [HEADLINE], host="", fingerprint="", blocks=blocks
    ).points.values()
    assert per_level.between_cv_pct == pytest.approx(7.1, abs=0.1)
    assert per_level.campaigns_to_find(0.10, 5) == 13


def _level_notes(comparison) -> tuple[list[str], list[str]]:
    """(the model notes that say which level the model used, the level-move warnings)."""
    used = [n for n in comparison.notes if "spreads around its own mean" in n]
    warned = [n for n in comparison.notes if n.startswith("level moved:")]
    return used, warned


def test_a_compare_on_the_slow_level_gives_each_level_its_own_mean(store) -> None:
    """spaced8: two base campaigns after the move (the 9th and 13th). The spec's series
    moves at the 8th, as `fslab series` shows it, so the model gives each level its own
    mean: the drift around them is 7.5%, not the 14.4% of one mean, and the candidate is
    compared with the mean of the 6 other campaigns of its level."""
    base = _named(store, "spaced8-base")
    a, b = base[8], base[12]
    (comparison,) = compare_with_noise(store, a.id, b.id)
    levels = comparison.levels
    assert levels is not None and levels.by_level and levels.on == 1
    (move,) = levels.moves
    assert move.campaign_id == base[7].id
    used, warned = _level_notes(comparison)
    assert not warned
    (note,) = used
    assert (
        f"the candidate is compared with the mean of the 6 since the level moved at campaign "
        f"{base[7].id} (2026-12-01 22:35Z): write IOPS 29.5K -> 23.6K, p 0.0015" in note
    )
    assert comparison.table.settings["noise_model"]["baselines"] == [
        c.id for c in base if c.id != b.id
    ]
    model = campaign_model(
        store, load_campaign(store, a.id), load_campaign(store, b.id), [HEADLINE]
    )
    (noise,) = model.noise.points.values()
    assert noise.blocks == 2 and noise.level_k == 6 and noise.campaigns == 13
    assert noise.between_cv_pct == pytest.approx(7.5, abs=0.1)
    (one_mean,) = noise_model(store, a, [HEADLINE], exclude=[b.id]).points.values()
    assert one_mean.between_cv_pct > 14.0
    assert comparison.to_dict()["levels"]["model_by_level"] is True


def test_a_compare_across_the_move_warns_and_keeps_one_mean(store) -> None:
    """The first base campaign (fast level) against the 13th (slow): the difference spans
    the machine's move, so the model keeps one mean over every baseline and the comparison
    says where the level moved and which campaigns share the candidate's level."""
    base = _named(store, "spaced8-base")
    a, b = base[0], base[12]
    (comparison,) = compare_with_noise(store, a.id, b.id)
    used, warned = _level_notes(comparison)
    assert not used
    (warning,) = warned
    slow = ",".join(str(c.id) for c in base[7:] if c.id != b.id)
    assert warning.startswith(
        f"level moved: the baselines' level moved between campaign {a.id} and campaign "
        f"{b.id}, at campaign {base[7].id} (2026-12-01 22:35Z): write IOPS 29.5K -> 23.6K, "
        "p 0.0015; part of any difference is the machine's"
    )
    assert f"take a baseline from campaign {b.id}'s level (campaign(s) {slow})" in warning
    model = campaign_model(
        store, load_campaign(store, a.id), load_campaign(store, b.id), [HEADLINE]
    )
    (noise,) = model.noise.points.values()
    assert noise.blocks == 1 and noise.level_k == 13
    levels = comparison.to_dict()["levels"]
    assert levels["one_level"] is False and levels["crossed"][0]["campaign_id"] == base[7].id


def test_a_series_without_a_move_changes_nothing(store) -> None:
    """spaced-base has no change point: no level check, no note, no warning, no JSON key,
    for two campaigns and for groups."""
    base = _named(store, "spaced-base")
    assert not build_series(store, base, "spaced-base").changes
    (comparison,) = compare_with_noise(store, base[0].id, base[-1].id)
    (grouped,) = compare_with_noise_groups(
        store, [c.id for c in base[:2]], [c.id for c in base[3:5]]
    )
    for c in (comparison, grouped):
        assert c.levels is None and _level_notes(c) == ([], [])
        assert not any("level moved" in n for n in c.notes)
        assert "levels" not in c.to_dict()


def test_groups_on_one_level_and_across_the_move(store) -> None:
    """Groups of the slow level against the 54000 cap on it: a mean per level; the same
    candidates against fast-level base campaigns: the warning, with one cut to give."""
    base = _named(store, "spaced8-base")
    cost = _named(store, "spaced8-cost-iops54k")
    slow_cost = [c.id for c in cost if c.started_at >= base[7].started_at][:2]
    (same,) = compare_with_noise_groups(store, [base[8].id, base[9].id], slow_cost)
    assert same.levels is not None and same.levels.by_level
    used, warned = _level_notes(same)
    assert not warned and len(used) == 1
    assert "both sides lie on that of the 7 campaigns since the level moved" in used[0]
    (across,) = compare_with_noise_groups(store, [base[0].id, base[1].id], slow_cost)
    used, warned = _level_notes(across)
    assert not used and len(warned) == 1
    assert warned[0].endswith(
        "give both sides campaigns of one level (all started before 2026-12-01 22:35Z, or "
        "all from then on)"
    )


def test_cli_compare_prints_the_level_move(tmp_path) -> None:
    exports = [d for _, d in _exports() if d["campaign"]["name"] == "spaced8-base"]
    db = tmp_path / "spaced8.db"
    with Store(db) as s:
        ids = [import_campaign(s, d) for d in exports]
    result = CliRunner().invoke(app, ["compare", str(ids[0]), str(ids[12]), "--db", str(db)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"level moved: the baselines' level moved between campaign {ids[0]} and" in text
    as_json = CliRunner().invoke(
        app, ["compare", str(ids[8]), str(ids[12]), "--db", str(db), "--json"]
    )
    (comparison,) = json.loads(as_json.output)["comparisons"]
    assert comparison["levels"]["model_by_level"] is True
    assert comparison["levels"]["moves"][0]["campaign_id"] == ids[7]
