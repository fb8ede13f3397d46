"""The speed probe (collect.cpuspeed) as a covariate beside steal (analyze.slowdown), on a
real recording whose runs carry it: bench/spaced/data/spaced8p (made by
bench/spaced/record.sh with base8p and cost8p2k, exported by bench/spaced/export.py;
docs/statistics.md says what it shows). It slows the runs within campaigns, yet taking it
out widens the drift between campaigns, so comparisons take steal out alone."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.history.baselines import compare_with_noise, fit_model
from fslab.analyze.noise.slowdown import COVARIATES, SPEED, STEAL, fit_slowdown, take_out_slowdown
from fslab.store.db import Store
from tests.spaced_support import imported, spaced_exports

SPACED8P = Path(__file__).parent.parent / "bench" / "spaced" / "data" / "spaced8p"
HEADLINE = "fio.write.iops"


def _without_probe(exports: list[dict]) -> list[dict]:
    """The exports as a store before fslab ran the speed probe (its facts dropped)."""
    for point in (p for data in exports for p in data["points"]):
        cpu = point["facts"].get("host_cpu") or {}
        for name in ("speed_probe_us", "speed_probe_samples", "speed_probe_cpu_pct"):
            cpu.pop(name, None)
    return exports


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with imported(tmp_path_factory.mktemp("speed") / "speed.db", spaced_exports(SPACED8P)) as s:
        yield s


def _campaigns(store: Store, suffix: str = "") -> list[CampaignData]:
    return [load_campaign(store, c.id) for c in store.campaigns() if c.name.endswith(suffix)]


def test_every_run_carries_the_probe_and_what_it_cost(store) -> None:
    runs = [p.facts.host_cpu for data in _campaigns(store) for p in data.ok_points()]
    assert len(runs) == 250
    assert all(cpu and (cpu.speed_probe_us or 0) > 0 for cpu in runs)
    assert all(cpu and (cpu.speed_probe_samples or 0) >= 40 for cpu in runs)  # 4 s + 1 s ramp
    assert all(cpu and (cpu.speed_probe_cpu_pct or 1) < 0.3 for cpu in runs)  # of all CPUs


def test_a_slower_cpu_costs_write_iops_within_campaigns_beside_steal(store) -> None:
    fit = fit_slowdown(_campaigns(store), covariates=(STEAL, SPEED))
    assert fit is not None and [t.covariate for t in fit.terms] == [STEAL, SPEED]
    steal, speed = fit.terms
    assert steal.slope < 0 and steal.p_value < 1e-4
    # 0.5% to 1.5% of the write IOPS for a CPU 1% slower: about in proportion
    assert -0.015 < math.expm1(speed.slope * math.log(1.01)) < -0.005
    assert speed.p_value < 1e-4 and speed.r < -0.25
    assert speed.reference == pytest.approx(math.log(437), abs=0.02)  # the runs' median


def _spreads(base: list[CampaignData]) -> dict[str, tuple[float, float]]:
    """(between-, within-campaign CV %) of the base campaigns: raw, steal out, both out."""
    out = {}
    for name, covariates in (("raw", ()), ("steal", (STEAL,)), ("both", (STEAL, SPEED))):
        adjusted, _ = take_out_slowdown(base, covariates=covariates) if covariates else (base, None)
        ((_, model),) = fit_model(adjusted, [HEADLINE], host="", fingerprint="").points.items()
        out[name] = (model.between_cv_pct, model.within_cv_pct)
    return out


def test_taking_the_probe_out_narrows_the_runs_but_widens_the_drift(store) -> None:
    spreads = _spreads(_campaigns(store, "-base"))
    # inside a campaign each covariate takes noise out ...
    assert spreads["both"][1] < spreads["steal"][1] < spreads["raw"][1]
    # ... but between campaigns the probe adds more than it takes: steal out alone is best
    assert spreads["steal"][0] < spreads["both"][0] < spreads["raw"][0]


def test_comparisons_take_steal_out_alone_and_say_so(store) -> None:
    assert COVARIATES == (STEAL,)
    base = _campaigns(store, "-base")
    (comparison,) = compare_with_noise(store, base[0].id, base[-1].id)
    (note,) = [n for n in comparison.notes if "taken out: write IOPS" in n]
    assert note.startswith("steal taken out: write IOPS")
    assert "speed" not in note


def test_with_the_probe_asked_for_the_note_names_both(store) -> None:
    _, fit = take_out_slowdown(_campaigns(store, "-base"), covariates=(STEAL, SPEED))
    assert fit is not None
    note = fit.describe()
    assert note.startswith("steal and CPU speed taken out: write IOPS")
    assert "a 1% slower CPU (speed probe)" in note
    assert "compared at zero steal and the runs' median CPU speed (probe" in note
    assert fit.short_at() == "zero steal and one CPU speed"


def test_runs_without_the_probe_are_judged_on_steal_alone(tmp_path) -> None:
    with imported(tmp_path / "old.db", _without_probe(spaced_exports(SPACED8P))) as old:
        fit = fit_slowdown(_campaigns(old), covariates=(STEAL, SPEED))
        assert fit is not None and [t.covariate for t in fit.terms] == [STEAL]
        assert fit.describe().startswith("steal taken out: write IOPS")


def test_one_campaign_without_the_probe_leaves_the_probe_out_for_all(store, tmp_path) -> None:
    exports = spaced_exports(SPACED8P)
    _without_probe(exports[:1])
    with imported(tmp_path / "mixed.db", exports) as mixed:
        fit = fit_slowdown(_campaigns(mixed), covariates=(STEAL, SPEED))
        assert fit is not None and fit.term(SPEED) is None and fit.term(STEAL) is not None
