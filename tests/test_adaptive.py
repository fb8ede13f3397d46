"""Adaptive repetition: planning rounds, appending points, mapping rows to points.

The campaigns are real exports (tests/data/campaign_*.json). The stand-in
runner gives each appended point the metrics of a real repetition of the
same configuration and sweep point, so the values the loop judges are
measured ones; only the order in which they come back is chosen here.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import load_campaign
from fslab.base.errors import UsageError
from fslab.drive import rounds as adaptive
from fslab.run.campaign import point_from_row
from fslab.spec.load import validate_spec
from fslab.spec.points import expand_points
from fslab.store.db import PlannedPoint, PointOutcome, Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"


def _import(store: Store, name: str) -> int:
    return import_campaign(store, json.loads((DATA / name).read_text()))


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "r.db") as s:
        yield s


class ReplayRunner:
    """Runs pending points by replaying real repetitions of the same point, in turn."""

    def __init__(self, store: Store, campaign_id: int) -> None:
        data = load_campaign(store, campaign_id)
        self.real: dict[tuple, itertools.cycle] = {}
        by_key: dict[tuple, list[dict[str, float]]] = {}
        for p in data.ok_points():
            by_key.setdefault(_key(p), []).append(data.metrics[p.id])
        self.real = {key: itertools.cycle(values) for key, values in by_key.items()}
        self.calls = 0

    def __call__(self, store: Store, campaign_id: int, *, options, progress) -> str:
        self.calls += 1
        for p in store.points(campaign_id):
            if p.status == "pending":
                metrics = dict(next(self.real[_key(p)]))
                store.save_outcome(p.id, PointOutcome(status="ok", metrics=metrics))
        return "complete"


def _key(p) -> tuple:
    return (p.config, tuple(p.sweep.items()))


def test_add_points_continues_seq_and_returns_new_rows(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    last = max(p.seq for p in store.points(cid))
    planned = [PlannedPoint(0, "ext4-default", "ext4", {"numjobs": 16}, 1)] * 2
    rows = store.add_points(cid, planned)
    assert [r.seq for r in rows] == [last + 1, last + 2]
    assert all(r.status == "pending" and r.sweep == {"numjobs": 16} for r in rows)
    assert len(store.points(cid)) == 6 + 2


def test_point_from_row_matches_the_planned_point(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    spec = validate_spec(store.campaign(cid).spec, "test")
    # an export from before roles (and warm-ups): its points were instrumented headline runs
    spec = spec.model_copy(update={"run": spec.run.model_copy(update={"warmup": 0})})
    planned = {p.seq: p for p in expand_points(spec, "inline")}
    for row in store.points(cid):
        assert point_from_row(spec, row) == planned[row.seq]


def test_point_from_row_builds_appended_points(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    spec = validate_spec(store.campaign(cid).spec, "test")
    (row,) = store.add_points(cid, [PlannedPoint(0, "ext4-journal1g", "ext4", {"numjobs": 256}, 5)])
    point = point_from_row(spec, row)
    assert (point.seq, point.filesystem.label, point.sweep_dict, point.repeat) == (
        6,
        "ext4-journal1g",
        {"numjobs": 256},
        5,
    )
    assert "size=1024" in point.filesystem.mkfs_options


def test_one_repetition_first_grows_to_three(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    planned = adaptive.plan_round(load_campaign(store, cid), pct=50.0, cap=16)
    # every point has 1 run: 2 more each, interleaved (one of each point per pass)
    assert len(planned) == 12
    assert [p.repeat for p in planned] == [1] * 6 + [2] * 6
    assert [p.config for p in planned[:2]] == ["ext4-default", "ext4-journal1g"]


def test_until_ci_first_reaches_three_runs(store):
    cid = _import(store, "campaign_fsync_nocollect.json")
    replay = ReplayRunner(store, cid)
    result = adaptive.run_until_ci(store, cid, pct=0.5, max_repeat=4, run=replay)
    points = store.points(cid)
    # one real value per point: a constant sample has a zero-width interval
    assert result.rounds == 1 and result.added == 12
    assert len(points) == 18 and all(p.status == "ok" for p in points)
    assert not result.unsettled
    assert sorted(p.seq for p in points) == list(range(18))


def test_until_ci_on_a_noisy_campaign(store):
    cid = _import(store, "campaign_fsync_quick.json")
    before = adaptive.key_states(load_campaign(store, cid))
    replay = ReplayRunner(store, cid)
    result = adaptive.run_until_ci(store, cid, pct=5.0, max_repeat=6, run=replay)
    after = {s.label: s for s in result.states}
    for state in before:
        final = after[state.label]
        if state.half_width_pct <= 5.0:
            assert final.attempts == state.attempts  # already settled: not repeated
        else:
            assert final.attempts > state.attempts
            assert final.attempts <= 6
            assert final.half_width_pct <= 5.0 or final.attempts == 6
    assert {s.label for s in result.unsettled} == {
        s.label for s in result.states if s.half_width_pct > 5.0
    }
    assert replay.calls == result.rounds


def test_key_state_wants_three_successes_then_one_per_round():
    state = adaptive.KeyState("c", {"numjobs": 1}, attempts=2, values=[1.0], half_width_pct=0)
    assert state.wanted(pct=5, cap=16) == 2
    assert state.wanted(pct=5, cap=3) == 1  # the cap counts failed attempts too
    wide = adaptive.KeyState("c", {}, attempts=3, values=[1.0, 2.0, 3.0], half_width_pct=9)
    assert wide.wanted(pct=5, cap=16) == 1
    assert wide.wanted(pct=10, cap=16) == 0
    assert wide.wanted(pct=5, cap=3) == 0


@pytest.mark.parametrize(
    ("pct", "cap", "message"),
    [
        (0.0, None, "positive"),
        (float("nan"), None, "positive"),
        (5.0, 2, "at least 3"),
        (None, 4, "only applies"),
    ],
)
def test_option_checks(pct, cap, message):
    with pytest.raises(UsageError, match=message):
        adaptive.check_options(pct, cap)


def test_default_cap_is_the_recommended_repetitions():
    from fslab.analyze.campaign.verdicts import RECOMMENDED_REPETITIONS

    assert adaptive.check_options(2.0, None) == RECOMMENDED_REPETITIONS
