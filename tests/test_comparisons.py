"""Campaign-level analysis on real campaigns: comparisons, scaling fits, point profiles.

Data: real `fslab export`s of ext4-fsync-storm --quick runs on this host
(tests/data/campaign_*.json; see each file's "captured" note):

- campaign_fsync_quick: ext4-default and ext4-journal1g, numjobs 1..1024,
  3 repetitions, with collectors (on-CPU profiles kept for seq 2 and 8);
- campaign_fsync_dioread: the same, run just before, with dioread_lock
  added to ext4-default's mount options (ext4-journal1g unchanged);
- campaign_fsync_nocollect: numjobs 16, 256, 1024, 1 repetition, no collectors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.summary import campaign_metrics, summarize
from fslab.analyze.curve import point_profile as pp
from fslab.analyze.curve.scaling import fit_campaign
from fslab.analyze.versus import comparisons as cmps
from fslab.analyze.versus import within
from fslab.base.errors import UsageError
from fslab.store.db import PointOutcome, Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"
VERDICTS = {"better", "worse", "changed", "no change shown", "needs more runs"}


def _import(store: Store, name: str) -> int:
    return import_campaign(store, json.loads((DATA / name).read_text()))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("db") / "r.db") as s:
        yield s


@pytest.fixture(scope="module")
def quick(store) -> CampaignData:
    return load_campaign(store, _import(store, "campaign_fsync_quick.json"))


@pytest.fixture(scope="module")
def dioread(store) -> CampaignData:
    return load_campaign(store, _import(store, "campaign_fsync_dioread.json"))


@pytest.fixture(scope="module")
def nocollect(store) -> CampaignData:
    return load_campaign(store, _import(store, "campaign_fsync_nocollect.json"))


def _row(table, metric: str, config: str | None = None, **point):
    """The row of `metric` at `point` (and `config`, for two-campaign tables)."""
    wanted = ((("config", config),) if config else ()) + tuple(point.items())
    return next(r for r in table.rows if r.metric == metric and r.point == wanted)


# --- compare ------------------------------------------------------------------------


def test_default_metrics_are_headline_then_latency(quick):
    assert cmps.default_metrics(quick) == ["fio.write.iops", "fio.sync.lat_ns_p99"]


def test_one_headline_for_the_campaign_its_results_and_its_tables(quick):
    """campaign_metrics picks the headline once; the dataset, the results table and a
    comparison table (ComparisonTable.headline) carry the same one."""
    assert campaign_metrics(quick.points, quick.metrics) == (quick.headline, quick.latency)
    assert {row.headline for row in summarize(quick.points, quick.metrics)} == {quick.headline}
    table = within.compare_configs(quick)["ext4-journal1g"]
    assert table.headline == quick.headline == "fio.write.iops"
    latency_only = within.compare_configs(quick, metrics=["fio.sync.lat_ns_p99"])
    assert latency_only["ext4-journal1g"].headline is None
    (verdict, *_) = within.verdicts_at(quick, "ext4-default", (("numjobs", 1),))
    assert verdict.row.metric == table.headline


def test_configs_compared_point_by_point(quick):
    tables = within.compare_configs(quick)
    assert list(tables) == ["ext4-journal1g"]
    table = tables["ext4-journal1g"]
    assert len(table.rows) == 6 * 2 and not table.only_in_baseline
    assert {r.verdict for r in table.rows} <= VERDICTS
    assert all(r.n_baseline == r.n_candidate == 3 for r in table.rows)
    # headline first at every point
    assert [r.metric for r in table.rows[:2]] == ["fio.write.iops", "fio.sync.lat_ns_p99"]
    # the 1 GiB journal cuts fsync p99 at 1024 threads tenfold (2.20 s -> 228 ms) and
    # the interval says so, but with 3 runs a side and 12 tests BH does not agree yet
    p99 = _row(table, "fio.sync.lat_ns_p99", numjobs=1024)
    assert p99.ratio == pytest.approx(0.103, abs=0.005) and p99.ci_high < 0.2
    assert p99.p_adjusted > 0.05 and p99.verdict == "needs more runs"
    assert not table.flagged()


def test_compare_configs_refuses_what_cannot_be_compared(quick):
    with pytest.raises(UsageError, match="no configuration 'xfs'"):
        within.compare_configs(quick, baseline="xfs")
    alone = CampaignData(
        quick.campaign, [p for p in quick.points if p.config == "ext4-default"], quick.metrics
    )
    with pytest.raises(UsageError, match="one configuration"):
        within.compare_configs(alone)


def test_a_campaign_against_itself_shows_no_change(quick):
    table = cmps.compare_campaigns(quick, quick)
    assert len(table.rows) == 2 * 6 * 2
    assert all(r.ratio == 1.0 and r.p_adjusted == 1.0 for r in table.rows)
    # never flagged; where runs are noisy a gate-sized change is not ruled out either
    assert {r.verdict for r in table.rows} <= {"no change shown", "needs more runs"}
    assert not table.flagged()


def test_two_campaigns_matched_by_config_and_sweep(quick, dioread):
    table = cmps.compare_campaigns(quick, dioread)
    assert len(table.rows) == 2 * 6 * 2
    configs = {dict(r.point)["config"] for r in table.rows}
    assert configs == {"ext4-default", "ext4-journal1g"}
    assert {r.verdict for r in table.rows} <= VERDICTS
    # dioread_lock (campaign B's ext4-default) removes the fsync tail at 1024 threads
    (flagged,) = table.flagged()
    assert (flagged.metric, dict(flagged.point)) == (
        "fio.sync.lat_ns_p99",
        {"config": "ext4-default", "numjobs": 1024},
    )
    assert flagged.verdict == "better" and flagged.ratio < 0.1
    # ext4-journal1g is the same configuration in both campaigns: an A/A on real runs
    same = [r for r in table.rows if dict(r.point)["config"] == "ext4-journal1g"]
    assert same and not [r for r in same if r.verdict in ("better", "worse")]


def test_swapped_campaigns_make_a_regression(quick, dioread):
    table = cmps.compare_campaigns(dioread, quick)
    p99 = _row(table, "fio.sync.lat_ns_p99", "ext4-default", numjobs=1024)
    assert p99.verdict == "worse" and p99.worse_by_pct > 1000
    assert table.regressions(50) == [p99]
    assert table.regressions(5000) == []


def test_metric_globs_add_evidence_metrics(quick):
    names = cmps.select_metrics([quick], ["jbd2.*"])
    assert names[:2] == ["fio.write.iops", "fio.sync.lat_ns_p99"]
    assert len(names) > 2 and all(n.startswith("jbd2.") for n in names[2:])
    table = within.compare_configs(quick, metrics=names)["ext4-journal1g"]
    evidence = [r for r in table.rows if r.metric.startswith("jbd2.")]
    assert evidence and {r.verdict for r in evidence} <= {
        "changed",
        "no change shown",
        "needs more runs",
    }
    with pytest.raises(UsageError, match="matches no stored metric"):
        cmps.select_metrics([quick], ["nosuch.*"])


def test_one_repetition_is_never_judged(nocollect):
    comparisons = within.config_comparisons(nocollect)
    assert cmps.min_repetitions(comparisons) == 1
    assert {r.verdict for r in comparisons[0].table.rows} == {"needs more runs"}


def test_comparison_json_is_plain(quick):
    (comparison,) = within.config_comparisons(quick)
    data = json.loads(json.dumps(comparison.to_dict(fail_pct=50)))
    assert data["baseline"] == "ext4-default" and data["candidate"] == "ext4-journal1g"
    assert data["rows"][0]["point"] == {"numjobs": 1}
    assert data["regressions"] == []


# --- scale --------------------------------------------------------------------------


def test_scale_fits_each_config_of_a_real_sweep(quick):
    report = fit_campaign(quick, n_boot=50)
    assert report.axis == "numjobs" and report.metric == "fio.write.iops"
    assert [c.config for c in report.curves] == ["ext4-default", "ext4-journal1g"]
    for curve in report.curves:
        assert curve.fit is not None and curve.n == [1, 16, 64, 256, 512, 1024]
        assert all(len(r) == 3 for r in curve.reps)
        assert curve.fit.classification == "coherency-limited"
    default, journal = (c.fit for c in report.curves)
    # the default journal peaks earlier and falls harder than the 1 GiB one
    assert default.n_star.value < journal.n_star.value
    assert default.x_median[-1] < 0.4 * journal.x_median[-1]
    (move,) = report.moves
    assert (move.baseline, move.candidate) == ("ext4-default", "ext4-journal1g")
    assert move.lines


def test_scale_finds_the_cliff_of_the_default_journal_but_fits_no_usl_to_3_points(nocollect):
    report = fit_campaign(nocollect, config="ext4-default", n_boot=50)
    (curve,) = report.curves
    assert curve.fit is None and "at least 4" in curve.reason
    cliff = curve.measured.cliff
    assert (cliff.n_before, cliff.n_after) == (256, 1024) and cliff.drop_pct > 85
    text = "\n".join(curve.describe())
    assert "cliff between numjobs=256 and numjobs=1024" in text
    assert "observed peak" in text and "falloff beyond it" in text
    assert "N* =" not in text  # no peak is printed from a fit that does not exist


def test_scale_says_why_instead_of_failing(store, quick):
    # two numjobs values only
    cid = _import(store, "campaign_fsync_nocollect.json")
    for p in store.points(cid):
        if p.sweep["numjobs"] == 256 and p.config == "ext4-journal1g":
            store.save_outcome(p.id, PointOutcome(status="failed", error="fio exited 1"))
    report = fit_campaign(load_campaign(store, cid), n_boot=20)
    broken = next(c for c in report.curves if c.config == "ext4-journal1g")
    assert broken.fit is None and "2 numjobs value(s); the USL" in broken.reason
    assert broken.failed_n == [256.0]
    assert "1 failed point(s) left out (numjobs=256)" in broken.describe()
    assert not report.moves  # nothing fitted, nothing to compare coefficients of


def test_scale_without_a_concurrency_axis(quick):
    report = fit_campaign(quick, axis=None, n_boot=10)
    assert report.reason is None
    with pytest.raises(UsageError, match="does not sweep 'bs'"):
        fit_campaign(quick, axis="bs")
    with pytest.raises(UsageError, match="not a throughput"):
        fit_campaign(quick, metric="fio.sync.lat_ns_p99")


def test_scale_reason_when_nothing_is_swept(store):
    data = json.loads((DATA / "campaign_fsync_nocollect.json").read_text())
    for p in data["points"]:
        p["sweep"] = {}
    data["campaign"]["spec"]["sweep"] = {}  # an import's points sweep what its spec sweeps
    data["points"] = data["points"][:2]
    report = fit_campaign(load_campaign(store, import_campaign(store, data)))
    assert report.reason and "no concurrency axis" in report.reason
    assert not report.curves


# --- profiles -----------------------------------------------------------------------


def test_selectors():
    assert pp.parse_selector("12") == pp.Selector(seq=12)
    assert pp.parse_selector("ext4-default:numjobs=1024") == pp.Selector(
        config="ext4-default", sweep=(("numjobs", "1024"),)
    )
    assert pp.parse_selector("numjobs=16,bs=4k") == pp.Selector(
        sweep=(("numjobs", "16"), ("bs", "4k"))
    )
    assert pp.parse_selector("xfs") == pp.Selector(config="xfs")
    with pytest.raises(UsageError, match="is not axis=value"):
        pp.parse_selector("xfs:numjobs")
    assert pp.parse_sweep(["numjobs=16"]) == (("numjobs", "16"),)


def test_default_point_is_the_worst_of_the_first_config(store, quick):
    # worst = lowest median at or past the peak (numjobs=64), as its most typical run
    point = pp.select_point(store, quick, None, "offcpu")
    assert (point.seq, point.config, point.sweep) == (34, "ext4-default", {"numjobs": 1024})
    reps = [
        quick.metrics[p.id]["fio.write.iops"]
        for p in quick.ok_points("ext4-default")
        if p.sweep == {"numjobs": 1024}
    ]
    assert quick.metrics[point.id]["fio.write.iops"] == sorted(reps)[1]


def test_selector_prefers_a_repetition_with_the_profile(store, quick):
    point = pp.select_point(store, quick, pp.parse_selector("numjobs=16"), "oncpu")
    assert point.seq == 2  # the repetition whose on-CPU profile was kept
    with pytest.raises(UsageError, match="no point of ext4-default with numjobs=3"):
        pp.select_point(store, quick, pp.parse_selector("numjobs=3"), "oncpu")
    with pytest.raises(UsageError, match="no point #999"):
        pp.select_point(store, quick, pp.Selector(seq=999), "oncpu")


def test_real_profile_view_shows_the_journal_credit_wait(store, quick):
    point = pp.select_point(store, quick, None, "offcpu")
    profile = pp.load_profile(store, quick, point, "offcpu")
    view = pp.profile_view(profile, point, "offcpu", top=5)
    # fsync waiters: on writeback pages, and for journal credits
    assert [f.name for f in view.top_self[:2]] == ["add_transaction_credits", "folio_wait_bit"]
    assert set(view.states) == {"[D]", "[S]"} and view.states["[D]"] > 0.9
    assert not any(f.name.startswith("[") for f in view.top_inclusive + view.top_self)
    assert "add_transaction_credits" in {c.func for c in view.chains}
    incl, self_ = view.shares["add_transaction_credits"]
    assert incl >= self_ > 0.2


def test_real_profile_diff_ranks_the_journal_path_first(store, quick):
    a = pp.select_point(store, quick, pp.parse_selector("ext4-default:numjobs=16"), "oncpu")
    b = pp.select_point(store, quick, pp.parse_selector("ext4-default:numjobs=512"), "oncpu")
    pa, pb = (pp.load_profile(store, quick, p, "oncpu") for p in (a, b))
    result = pp.profile_diff(pa, pb, a, b, "oncpu", top=5)
    names = [r.name for r in result.functions]
    assert {"start_this_handle", "add_transaction_credits"} <= set(names[:3])
    assert all(r.delta > 0.35 for r in result.functions[:3])
    assert result.chains and result.comms
    deltas = [abs(r.delta) for r in result.functions]
    assert deltas == sorted(deltas, reverse=True)


def test_missing_profile_reasons(store, quick, nocollect):
    point = nocollect.points[0]
    with pytest.raises(pp.NoProfile, match="no collector ran"):
        pp.load_profile(store, nocollect, point, "oncpu")
    # a point of the quick campaign whose on-CPU profile was not kept in tests/data
    trimmed = next(p for p in quick.points if p.seq == 4)  # ext4-default numjobs=64
    assert "perf collector ran but stored no profile.oncpu.folded" in pp.missing_reason(
        store, quick, trimmed, "oncpu"
    )


def test_missing_profile_reason_names_the_collector_state(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    data = load_campaign(store, cid)
    point = data.points[0]
    metrics = data.metrics[point.id]
    store.save_outcome(
        point.id,
        PointOutcome(
            status="ok",
            metrics=metrics,
            collectors={"perf": ("unavailable", "perf not found: install linux-perf")},
        ),
    )
    reason = pp.missing_reason(store, data, point, "oncpu")
    assert "perf collector was unavailable: perf not found" in reason
    assert math.isfinite(metrics["fio.write.iops"])
