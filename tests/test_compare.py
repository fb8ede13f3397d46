"""compare: verdicts, BH across the table, JSON, adaptive repetition; metrics catalog."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from fslab.analyze.campaign import verdicts as cmp
from fslab.analyze.campaign.metrics_catalog import CATALOG, metric_def
from fslab.base.vocab import point_label

POINTS = [(("fs", "ext4"), ("numjobs", n)) for n in (1, 8, 64, 512)]


def _noisy(rng, median, cv, n):
    return list(median * np.exp(rng.normal(0.0, cv, n)))


def _side(rng, scale=1.0, *, cv=0.01, n=6, metrics=("fio.write.iops",)):
    return {
        point: {m: _noisy(rng, 1000.0 * (i + 1) * scale, cv, n) for m in metrics}
        for i, point in enumerate(POINTS)
    }


# --- metrics catalog -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "direction", "unit"),
    [
        ("fio.write.iops", "higher", "IO/s"),
        ("fio.total.bw_bytes_s", "higher", "B/s"),
        ("fio.write.clat_ns_p99", "lower", "ns"),
        ("fio.sync.lat_ns_p99_9", "lower", "ns"),
        ("fio.cpu.sys_pct", "none", "%"),
        ("dd.bw_bytes_s", "higher", "B/s"),
        ("dd.seconds", "lower", "s"),
        ("wq.ext4-rsv-conversion.queue_delay_ns_p99", "none", "ns"),
        ("jbd2.avg_commit_ms", "none", "ms"),
        ("profile.inclusive.__percpu_counter_sum", "none", "share"),
        ("profile.inclusive.ext4_mb_new_blocks.isra.0", "none", "share"),
        ("offcpu.wchan.jbd2_log_wait_commit.threads_mean", "none", "threads"),
        ("blk.busy_pct", "none", "%"),
        ("blk.write_lat_ms_mean", "none", "ms"),
        ("sys.ctxt_per_s", "none", "1/s"),
        ("sys.cpu.iowait_pct", "none", "%"),
        ("tp.ext4_da_write_begin.per_s", "none", "1/s"),
        ("tp.writeback_queue.periodic.count", "none", "events"),
        ("jbd2.run.locked_ms_p99", "none", "ms"),
        ("profile.self.find_next_bit", "none", "share"),
        ("profile.samples", "none", "samples"),
    ],
)
def test_catalog_declares_direction_and_unit(name, direction, unit):
    mdef = metric_def(name)
    assert (mdef.direction, mdef.unit) == (direction, unit)
    assert mdef.description


def test_catalog_unknown_and_near_miss_names_have_no_direction():
    assert metric_def("something.iops").direction == "none"
    assert metric_def("fio.write.iops.extra").direction == "none"  # * is one segment
    assert metric_def("fio.write.clat_ns_p99").direction == "lower"


def test_catalog_is_data_with_valid_directions():
    assert all(mdef.direction in ("higher", "lower", "none") for _, mdef in CATALOG.entries)


# --- verdicts ----------------------------------------------------------------------------


def test_clear_throughput_regression_is_worse_everywhere():
    rng = np.random.default_rng(1)
    table = cmp.compare(_side(rng), _side(rng, 0.90), n_resamples=2000)
    assert [row.verdict for row in table.rows] == ["worse"] * 4
    row = table.rows[0]
    assert row.n_baseline == row.n_candidate == 6
    assert row.test == "mann-whitney"
    assert row.ci_high < 1.0 and row.ratio == pytest.approx(0.90, abs=0.02)
    assert row.gate_pct == pytest.approx(2.0)  # CV 1% -> the 2% floor
    assert len(table.regressions(5.0)) == 4
    assert table.regressions(20.0) == []


def test_latency_direction_is_reversed():
    rng = np.random.default_rng(2)
    metrics = ("fio.sync.lat_ns_p99",)
    up = cmp.compare(_side(rng, metrics=metrics), _side(rng, 1.2, metrics=metrics))
    down = cmp.compare(_side(rng, metrics=metrics), _side(rng, 0.8, metrics=metrics))
    assert {row.verdict for row in up.rows} == {"worse"}
    assert {row.verdict for row in down.rows} == {"better"}
    assert up.rows[0].worse_by_pct == pytest.approx(20.0, abs=3.0)


def test_evidence_metric_is_changed_not_better_or_worse():
    rng = np.random.default_rng(3)
    metrics = ("wq.ext4-rsv-conversion.queue_delay_ns_p99",)
    table = cmp.compare(_side(rng, metrics=metrics), _side(rng, 3.0, metrics=metrics))
    assert {row.verdict for row in table.rows} == {"changed"}
    assert table.regressions(0.0) == []
    assert math.isnan(table.rows[0].worse_by_pct)


def test_a_a_comparison_flags_nothing():
    rng = np.random.default_rng(4)
    table = cmp.compare(_side(rng, cv=0.03, n=8), _side(rng, cv=0.03, n=8))
    assert table.flagged() == []
    assert {row.verdict for row in table.rows} <= {"no change shown", "needs more runs"}


def test_too_few_repetitions_need_more_runs_and_stay_out_of_bh():
    rng = np.random.default_rng(5)
    base, cand = _side(rng), _side(rng, 0.5)
    point = POINTS[0]
    base[point]["fio.write.iops"] = base[point]["fio.write.iops"][:2]
    table = cmp.compare(base, cand)
    short = next(row for row in table.rows if row.point == point)
    assert short.verdict == "needs more runs"
    assert math.isnan(short.p_adjusted) and not math.isnan(short.p_raw)
    others = [row for row in table.rows if row.point != point]
    ref = sps.false_discovery_control([row.p_raw for row in others], method="bh")
    assert [row.p_adjusted for row in others] == pytest.approx(ref)


def test_noisy_data_with_few_reps_needs_more_runs():
    base = {POINTS[0]: {"fio.write.iops": [1000.0, 1400.0, 700.0]}}
    cand = {POINTS[0]: {"fio.write.iops": [900.0, 1300.0, 650.0]}}
    (row,) = cmp.compare(base, cand).rows
    assert row.ci_low < 1 - row.gate_pct / 100 and row.ci_high > 1 + row.gate_pct / 100
    assert row.verdict == "needs more runs"


def test_significant_but_tiny_change_is_below_the_gate():
    rng = np.random.default_rng(6)
    base = {POINTS[0]: {"fio.write.iops": _noisy(rng, 1000.0, 0.001, 12)}}
    cand = {POINTS[0]: {"fio.write.iops": _noisy(rng, 1005.0, 0.001, 12)}}
    (row,) = cmp.compare(base, cand).rows
    assert row.p_adjusted < 0.001 and row.ci_low > 1.0
    assert row.verdict == "no change shown"


def test_gate_follows_the_baseline_cv():
    rng = np.random.default_rng(7)
    base = {POINTS[0]: {"fio.write.iops": _noisy(rng, 1000.0, 0.08, 12)}}
    cand = {POINTS[0]: {"fio.write.iops": _noisy(rng, 1000.0, 0.08, 12)}}
    (row,) = cmp.compare(base, cand).rows
    assert row.gate_pct == pytest.approx(100 * row.baseline_cv)
    values = base[POINTS[0]]["fio.write.iops"]
    assert row.baseline_cv == pytest.approx(np.std(values, ddof=1) / np.mean(values))


def test_zero_medians_on_both_sides_are_no_change():
    base = {POINTS[0]: {"wq.x.queue_delay_ns_p99": [0.0, 0.0, 0.0, 0.0]}}
    cand = {POINTS[0]: {"wq.x.queue_delay_ns_p99": [0.0, 0.0, 0.0, 0.0]}}
    (row,) = cmp.compare(base, cand).rows
    assert row.ratio == 1.0 and row.verdict == "no change shown"


def test_zero_baseline_decided_by_the_test_alone():
    base = {POINTS[0]: {"wq.x.queue_delay_ns_p99": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]}}
    cand = {POINTS[0]: {"wq.x.queue_delay_ns_p99": [900.0, 1100.0, 1000.0, 950.0, 990.0, 1010]}}
    (row,) = cmp.compare(base, cand).rows
    assert math.isinf(row.ratio) and row.verdict == "changed"


# --- table -------------------------------------------------------------------------------


def test_metric_filter_accepts_globs_and_unmatched_points_are_listed():
    rng = np.random.default_rng(8)
    metrics = ("fio.write.iops", "fio.write.bw_bytes_s", "fio.cpu.sys_pct")
    base, cand = _side(rng, metrics=metrics), _side(rng, metrics=metrics)
    extra = (("fs", "xfs"), ("numjobs", 1))
    cand[extra] = {"fio.write.iops": [1.0, 2.0, 3.0]}
    table = cmp.compare(base, cand, metrics=["fio.write.*"])
    assert {row.metric for row in table.rows} == {"fio.write.iops", "fio.write.bw_bytes_s"}
    assert table.only_in_candidate == [extra] and table.only_in_baseline == []


def test_rows_are_reproducible_and_independent_of_other_rows():
    rng = np.random.default_rng(9)
    metrics = ("fio.write.iops", "fio.write.clat_ns_p99")
    base, cand = _side(rng, metrics=metrics), _side(rng, 1.01, metrics=metrics)
    all_rows = cmp.compare(base, cand, n_resamples=1000).rows
    again = cmp.compare(base, cand, n_resamples=1000).rows
    only_iops = cmp.compare(base, cand, metrics=["fio.write.iops"], n_resamples=1000).rows
    assert [(r.ci_low, r.ci_high) for r in all_rows] == [(r.ci_low, r.ci_high) for r in again]
    iops = [(r.ci_low, r.ci_high) for r in all_rows if r.metric == "fio.write.iops"]
    assert iops == [(r.ci_low, r.ci_high) for r in only_iops]


def test_to_dict_is_strict_json_and_describe_is_short():
    rng = np.random.default_rng(10)
    base, cand = _side(rng), _side(rng, 0.9)
    base[POINTS[0]]["fio.write.iops"] = [1000.0]  # n=1: NaN interval and p
    table = cmp.compare(base, cand)
    data = json.loads(json.dumps(table.to_dict(), allow_nan=False))
    assert data["rows"][0]["point"] == {"fs": "ext4", "numjobs": 1}
    assert data["rows"][0]["ci_low"] is None
    assert data["rows"][1]["verdict"] == "worse"
    assert data["settings"]["alpha"] == 0.05
    lines = table.describe()
    assert lines[-1].startswith("4 compared")
    assert all(len(line) <= 80 for line in lines)
    assert point_label(POINTS[1]) == "fs=ext4 numjobs=8"


# --- adaptive repetition -------------------------------------------------------------------


def test_ci_half_width_pct():
    values = [1000.0, 1010.0, 990.0, 1030.0, 970.0, 1005.0]
    from fslab.analyze.campaign import stats

    low, high = stats.bootstrap_median_ci(values, n_resamples=2000, rng=1)
    expected = (high - low) / 2 / np.median(values) * 100
    assert cmp.ci_half_width_pct(values, rng=1) == pytest.approx(expected)
    assert math.isinf(cmp.ci_half_width_pct([1000.0, 1001.0]))  # below MIN_REPS
    assert math.isinf(cmp.ci_half_width_pct([0.0, 0.0, 0.0]))
    assert cmp.ci_half_width_pct([5.0, 5.0, 5.0]) == 0.0


def test_ci_half_width_shrinks_with_repetitions():
    rng = np.random.default_rng(11)
    values = _noisy(rng, 1000.0, 0.03, 40)
    assert cmp.ci_half_width_pct(values[:40]) < cmp.ci_half_width_pct(values[:5])


def test_recommended_repetitions_is_the_documented_constant():
    assert cmp.recommended_repetitions() == cmp.RECOMMENDED_REPETITIONS
    assert cmp.recommended_repetitions() >= cmp.MIN_REPS
