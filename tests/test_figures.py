"""analyze.figures: what the reports draw, computed from recorded fio output."""

from __future__ import annotations

import pytest

from fslab.analyze.campaign.plotted import latency_distribution, wchan_rows, workqueue_rows
from fslab.workload.fio.parse import parse_fio_json


def test_latency_distribution_agrees_with_fios_percentiles(data_dir):
    text = (data_dir / "fio_randrw.json").read_text()
    dist = latency_distribution(text, "fio.write.clat_ns")
    assert dist.cumulative[-1] == 1.0
    assert dist.values_ns == sorted(dist.values_ns)
    p99 = next(v for v, c in zip(dist.values_ns, dist.cumulative, strict=True) if c >= 0.99)
    assert p99 == parse_fio_json(text).metrics["fio.write.clat_ns_p99"]


def test_no_bins_says_why(data_dir):
    with pytest.raises(ValueError, match="no sync latency bins"):
        latency_distribution((data_dir / "fio_randread.json").read_text(), "fio.sync.lat_ns")


def test_contention_rows_rank_what_waited_most():
    worst = {
        "wq.a.items_per_s": 100.0,
        "wq.a.queue_delay_ns_p99": 1e6,
        "wq.b.items_per_s": 10.0,
        "wq.b.queue_delay_ns_p99": 1e9,
        "offcpu.blocked_threads_mean": 4.0,
        "offcpu.wchan.jbd2_log_wait_commit.threads_mean": 3.0,
        "offcpu.wchan.io_schedule.threads_mean": 1.0,
    }
    assert [r.name for r in workqueue_rows(worst, {})] == ["b", "a"]
    rows, blocked = wchan_rows(worst, {})
    assert blocked == 4.0
    assert [(r.function, r.worst_share) for r in rows] == [
        ("jbd2_log_wait_commit", 0.75),
        ("io_schedule", 0.25),
    ]
