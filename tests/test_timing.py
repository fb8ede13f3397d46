"""Where a campaign's wall time went: per-point timings summed, as reports state them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fslab.base.format import format_duration_s
from fslab.base.timing import CampaignTiming, PointTiming

DATA = Path(__file__).parent / "data"


def test_a_recorded_campaign_accounts_for_its_wall_time():
    """campaign_fsync_separate.json: the sum of the phases is the campaign's wall time."""
    data = json.loads((DATA / "campaign_fsync_separate.json").read_text())
    timings = [PointTiming.from_facts(p["facts"]) for p in data["points"]]
    assert all(t is not None for t in timings)
    total = CampaignTiming.total(t for t in timings if t is not None)
    assert total.points == len(data["points"])
    assert total.wall_s == pytest.approx(
        total.setup_s + total.measure_s + total.teardown_s + total.post_wait_s
    )
    assert total.post_hidden_s == pytest.approx(total.post_s - total.post_wait_s)
    # only evidence runs post-process; clean ones have nothing to wait for
    for point, timing in zip(data["points"], timings, strict=True):
        assert timing is not None
        assert (timing.post_s > 0) == (point["role"] == "evidence")
    # the points' phases cover the campaign's wall clock (its stored start and end,
    # to the second) but for the store's own commits between points
    from datetime import datetime

    started = datetime.fromisoformat(data["campaign"]["started_at"])
    ended = datetime.fromisoformat(data["campaign"]["ended_at"])
    assert abs((ended - started).total_seconds() - total.wall_s) < 2.0
    text = total.describe()
    assert text.startswith(f"{format_duration_s(total.wall_s)} wall over 24 runs: measuring")


def test_points_without_a_timing_read_as_none():
    assert PointTiming.from_facts({}) is None
    assert PointTiming.from_facts({"timing": "garbage"}) is None
    assert PointTiming.from_facts({"timing": {"setup_s": 1, "unknown_s": 2}}) == PointTiming(
        setup_s=1.0
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.04, "0.0s"), (12.34, "12.3s"), (59.96, "60.0s"), (61, "1m01s"), (7322, "2h02m")],
)
def test_durations_read_as_people_write_them(seconds, text):
    assert format_duration_s(seconds) == text
