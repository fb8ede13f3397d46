"""The one falloff model: best, worst, knee and cliff, and every command agreeing on them.

Pure rules are checked on numbers; agreement between `scale`, `diagnose`,
`profile`, `compare` and the report on real recorded campaigns.
"""

from __future__ import annotations

import json
import re

import pytest
from bench.diagnosis_accuracy import CORPUS

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.curve import point_profile as pp
from fslab.analyze.curve.falloff import (
    SweepPoint,
    _judge,
    best_point,
    beyond,
    campaign_falloffs,
    config_falloff,
    find_cliff,
    knee,
    make_curve,
    peak_index,
    worst_point,
)
from fslab.analyze.curve.scaling import fit_campaign, unidentified_reason
from fslab.analyze.versus.within import config_comparisons
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.report.model import build_report
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR


def _curve(ns, reps):
    points = [
        SweepPoint((("numjobs", n),), tuple(r), sorted(r)[len(r) // 2], float(n))
        for n, r in zip(ns, reps, strict=True)
    ]
    return make_curve("c", "numjobs", (), points)


def test_knee_is_the_last_n_before_a_step_gaining_under_10_percent_per_doubling():
    assert knee([1, 2, 4, 8], [100.0, 200.0, 300.0, 310.0]) == 4.0
    assert knee([256, 512, 768], [100.0, 150.0, 157.5]) == 512.0  # +8.7% per doubling
    assert knee([256, 512, 768], [100.0, 150.0, 160.5]) is None


def test_a_cliff_is_a_threshold_not_a_steady_decline():
    reps = [[100.0, 101], [98.0, 99], [20.0, 21], [19.0, 20]]
    cliff = find_cliff([1, 2, 4, 8], reps, [100.5, 98.5, 20.5, 19.5])
    assert (cliff.n_before, cliff.n_after) == (2.0, 4.0) and cliff.drop_pct > 75
    steady = [[100.0], [50.0], [25.0], [12.5]]  # -50% at every step: no threshold
    assert find_cliff([1, 2, 4, 8], steady, [100.0, 50.0, 25.0, 12.5]) is None
    overlapping = [[100.0, 30], [50.0, 40], [45.0]]  # runs overlap across the step
    assert find_cliff([1, 2, 4], overlapping, [65.0, 45.0, 45.0]) is None
    assert find_cliff([16, 1024], [[100.0], [10.0]], [100.0, 10.0]) is None  # two points


def test_best_and_worst_are_read_past_the_peak_first_on_a_tie():
    curve = _curve([1, 4, 16, 64], [[5.0], [40.0], [40.0], [20.0]])
    assert peak_index([5.0, 40.0, 40.0, 20.0]) == 1
    assert curve.peak == best_point(curve.points) == curve.points[1]
    assert beyond(curve, curve.peak) == curve.points[1:]
    # N=1 is lower, but below the peak it is merely not loaded yet
    assert curve.low == worst_point(curve.points[1:]) == curve.points[3]
    assert worst_point(curve.points) == curve.points[0]


def test_usl_is_not_fitted_where_it_is_not_identified():
    three = _curve([1, 16, 256], [[100.0], [300.0], [200.0]])
    assert "at least 4 points" in unidentified_reason(three)
    falls_only = _curve([256, 768, 1536, 2048], [[36.0], [9.0], [12.0], [14.0]])
    assert "highest at the smallest numjobs" in unidentified_reason(falls_only)
    rises_only = _curve([1, 2, 4, 8], [[1.0], [2.0], [3.0], [3.5]])
    assert "highest at the largest numjobs" in unidentified_reason(rises_only)
    peaked = _curve([1, 4, 16, 64, 256], [[10.0], [30.0], [40.0], [35.0], [20.0]])
    assert unidentified_reason(peaked) is None


@pytest.fixture(scope="module")
def journal(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("falloff") / "f.db")
    cid = import_campaign(store, json.loads((CORPUS / "journal.json").read_text()))
    return store, cid


def test_best_worst_and_falloff_of_a_real_campaign(journal):
    store, cid = journal
    data = load_campaign(store, cid)
    default = config_falloff(data, "ext4-default")
    assert default.best.label == "numjobs=256" and default.worst.label == "numjobs=768"
    assert default.has_falloff and default.ratio == pytest.approx(9116 / 35949, rel=0.01)
    assert default.cliff.n_after == 768
    flat = json.loads((CORPUS / "flat.json").read_text())
    flat_store = Store(journal[0].path.parent / "flat.db")
    flat_data = load_campaign(flat_store, import_campaign(flat_store, flat))
    (rising,) = campaign_falloffs(flat_data).values()
    assert rising.kind == "none" and "highest at the largest numjobs" in rising.reason


def test_every_command_names_the_same_points_and_cliff(journal):
    store, cid = journal
    data = load_campaign(store, cid)
    falloff = config_falloff(data, "ext4-default")
    # scale: the same cliff, read from the same medians
    (curve,) = [c for c in fit_campaign(data, n_boot=0).curves if c.config == "ext4-default"]
    assert curve.measured.cliff == falloff.cliff
    # and the same best and worst point, which its "observed peak" lines name
    assert (curve.measured.peak, curve.measured.low) == (falloff.best, falloff.worst)
    observed = "\n".join(curve.observed())
    assert re.search(rf"observed peak .* at {falloff.best.label}\n", observed)
    assert re.search(rf"falloff beyond it: .* at {falloff.worst.label} \(x", observed)
    # diagnose: the same good and bad point
    by_config = {d.config: d for d in diagnose_campaign(store, cid)}
    diagnosis = by_config["ext4-default"]
    assert (diagnosis.good_label, diagnosis.bad_label) == (falloff.best.label, falloff.worst.label)
    # profile: its default point is the worst point's evidence run
    row = pp.select_point(store, data, None, "offcpu")
    assert row.id == data.evidence_row("ext4-default", falloff.worst.key).id
    # compare: says where each configuration falls off, from the same model
    (comparison,) = config_comparisons(data)
    assert comparison.details["ext4-default"] == falloff.reason
    # the report: the focus points are the deepest falloff's worst and best
    report = build_report(store, cid)
    assert report.profiles.worst.sweep == dict(falloff.worst.key)
    assert report.profiles.best.sweep == dict(falloff.best.key)
    assert report.contention.worst == report.profiles.worst == report.reproduce.point
    assert next(e for e in report.diagnosis.entries if e.focus).config == "ext4-default"


def test_a_small_drop_or_overlapping_runs_is_no_falloff():
    def point(label, values):
        return SweepPoint((("numjobs", label),), tuple(values), sorted(values)[1])

    best = point(1, [100.0, 101.0, 102.0])
    assert _judge(best, point(2, [90.0, 91.0, 92.0]), "fio.write.iops").kind == "none"  # -10%
    overlap = _judge(best, point(2, [60.0, 80.0, 101.5]), "fio.write.iops")
    assert overlap.kind == "open" and "runs overlap: p 0." in overlap.reason
    assert _judge(best, point(2, [60.0, 70.0, 75.0]), "fio.write.iops").kind == "falloff"


def test_one_slow_first_run_does_not_hide_a_falloff():
    """The cold start: a best point's first run at a third of the others, as a fresh
    machine's first round ran. Strict separation read "no falloff"; the test shows it,
    with and without the outlier."""
    best = SweepPoint((("numjobs", 256),), (6263.0, 19100.0, 14600.0, 14300.0), 14450.0)
    worst = SweepPoint((("numjobs", 1024),), (3287.0, 3700.0, 7106.0, 2864.0), 3493.5)
    judged = _judge(best, worst, "fio.write.iops")
    assert judged.kind == "falloff" and judged.test is not None and judged.test.outliers >= 1


def test_an_outlier_never_decides_the_falloff_alone():
    best = SweepPoint((("numjobs", 256),), (7480.0, 19000.0, 16800.0, 16600.0), 16700.0)
    worst = SweepPoint((("numjobs", 1024),), (6621.0, 9019.0, 10500.0, 11200.0), 9772.0)
    judged = _judge(best, worst, "fio.write.iops")
    assert judged.kind == "open" and "an outlier run decides it" in judged.reason


def test_a_single_run_falloff_says_it_is_untested(tmp_path):
    data = json.loads((DATA_DIR / "diagnose_fsync_quick.json").read_text())
    store = Store(tmp_path / "q.db")
    falloffs = campaign_falloffs(load_campaign(store, import_campaign(store, data)))
    default = falloffs["ext4-default"]  # 8553 -> 6695, one run each
    assert default.kind == "open" and "not tested against noise" in default.reason


def test_scale_prints_no_peak_outside_the_data_on_4_points(journal):
    """The issue's case: 4 points starting past the peak once gave N* = 0.000178."""
    store, cid = journal
    for curve in fit_campaign(load_campaign(store, cid), n_boot=0).curves:
        text = "\n".join(curve.describe())
        assert curve.fit is None and "N* =" not in text
        assert "highest at the smallest numjobs measured (256)" in text
        assert "observed peak" in text and "falloff beyond it" in text
