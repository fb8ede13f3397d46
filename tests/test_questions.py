"""A campaign's questions, and the rounds that answer the open ones.

The campaign is the first `make demo` of a fresh machine (tests/data/coldstart).
The stand-in runner gives each added run the metrics and artifacts of a real run
of the same configuration, point and role, in turn: the answers the loop judges
are measured ones.
"""

from __future__ import annotations

import itertools
import json
import statistics

import pytest

from fslab.analyze.campaign.dataset import load_campaign
from fslab.base.errors import UsageError
from fslab.drive import rounds as adaptive
from fslab.drive.questions import MAX_EVIDENCE_RUNS, Want, campaign_questions
from fslab.store.db import PointOutcome, Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR

COLD = DATA_DIR / "coldstart" / "coldstart-20261203-0922-vm.json"


@pytest.fixture
def cold(tmp_path):
    with Store(tmp_path / "q.db") as store:
        yield store, import_campaign(store, json.loads(COLD.read_text()))


class Replay:
    """Runs pending points with a real run's metrics and artifacts (same config, point, role)."""

    def __init__(self, store: Store, campaign_id: int) -> None:
        by_key: dict[tuple, list[int]] = {}
        for p in store.points(campaign_id):
            if p.status == "ok":
                by_key.setdefault(_key(p), []).append(p.id)
        self.real = {key: itertools.cycle(ids) for key, ids in by_key.items()}
        self.rounds = 0

    def __call__(self, store: Store, campaign_id: int, *, options, progress) -> str:
        self.rounds += 1
        metrics = store.metrics(campaign_id)
        for p in store.points(campaign_id):
            if p.status == "pending":
                source = next(self.real[_key(p)])
                artifacts = {n: store.artifact(source, n) for n in store.artifact_names(source)}
                outcome = PointOutcome(
                    status="ok",
                    metrics=dict(metrics[source]),
                    artifacts={k: v for k, v in artifacts.items() if v is not None},
                )
                store.save_outcome(p.id, outcome)
        return "complete"


def _key(p) -> tuple:
    return (p.config, tuple(p.sweep.items()), p.role)


def _by_asks(questions):
    return {q.asks: q for q in questions}


def test_the_cold_start_questions(cold):
    store, cid = cold
    questions = _by_asks(campaign_questions(store, load_campaign(store, cid)))
    default = questions["Does ext4-default fall off?"]
    assert default.status == "settled" and default.answer.startswith("yes: falloff")
    journal = questions["Does ext4-journal1g fall off?"]
    assert journal.status == "open" and "an outlier run decides it" in journal.answer
    assert {(w.label, w.role) for w in journal.wants} == {
        ("ext4-journal1g numjobs=256", "clean"),
        ("ext4-journal1g numjobs=1024", "clean"),
    }
    remedy = questions["Does ext4-journal1g differ from ext4-default at numjobs=1024?"]
    assert remedy.status == "settled" and remedy.answer.startswith("better: +180%")
    (mechanism,) = [q for q in questions.values() if q.kind == "mechanism"]
    assert mechanism.status == "open" and "jbd2-reserved-credits" in mechanism.asks
    kinds = [q.kind for q in questions.values()]  # a round cut short keeps the mechanism
    assert kinds.index("mechanism") < kinds.index("remedy")
    assert [(w.label, w.role) for w in mechanism.wants] == [
        ("ext4-default numjobs=1024", "evidence")
    ]


def test_rounds_run_what_the_open_questions_want_until_they_settle(cold):
    store, cid = cold
    replay = Replay(store, cid)
    before = len(store.points(cid))
    result = adaptive.run_until_answered(store, cid, budget_s=3600.0, run=replay)
    assert result.rounds == replay.rounds >= 1 and not result.budget_spent
    added = store.points(cid)[before:]
    assert len(added) == result.added
    evidence = [p for p in added if p.role == "evidence"]
    assert [(p.config, p.sweep) for p in evidence] == [("ext4-default", {"numjobs": 1024})]
    mechanism = next(q for q in result.questions if q.kind == "mechanism")
    assert mechanism.status == "settled" and "first in 2 of 2 evidence runs" in mechanism.answer
    assert all(q.status != "open" for q in result.questions)


def test_an_adaptive_scan_gets_the_evidence_runs_its_questions_want(cold):
    """An adaptive campaign planned with --collect=separate scans with clean runs only:
    its first evidence run is one the questions add (the mode is the campaign's, not
    read from the roles it has so far)."""
    store, cid = cold
    data = load_campaign(store, cid)
    data.points = [p for p in data.points if p.role != "evidence"]  # as an adaptive scan
    assert data.campaign.overrides.collect == "separate"
    bad = (("numjobs", 1024),)
    wants = [Want("ext4-default", bad, "evidence"), Want("ext4-default", bad, "clean")]
    planned = adaptive._round(data, wants)
    assert [(p.config, p.sweep, p.role) for p in planned] == [
        ("ext4-default", {"numjobs": 1024}, "evidence"),
        ("ext4-default", {"numjobs": 1024}, "clean"),
    ]
    assert planned[0].repeat == 0


def test_no_round_past_the_budget(cold):
    store, cid = cold
    spent = adaptive.machine_seconds(store.points(cid))
    result = adaptive.run_until_answered(store, cid, budget_s=spent + 1.0, run=Replay(store, cid))
    assert result.rounds == 0 and result.budget_spent
    assert any(q.is_open for q in result.questions)


def test_a_round_past_the_budget_runs_what_fits_first_questions_first(cold):
    """The last round runs the wants that fit the budget, in the questions' order, and
    the result holds the questions as those runs left them."""
    store, cid = cold
    data = load_campaign(store, cid)
    points = store.points(cid)
    spent = adaptive.machine_seconds(points)
    median = statistics.median(s for p in points if (s := adaptive._seconds(p)) is not None)
    first = [q for q in campaign_questions(store, data) if q.is_open]
    wanted = adaptive._round(data, [w for q in first for w in q.wants])
    assert len(wanted) >= 2
    replay = Replay(store, cid)
    result = adaptive.run_until_answered(store, cid, budget_s=spent + 1.5 * median, run=replay)
    assert result.rounds == 1 and result.added == 1 and result.budget_spent
    (added,) = store.points(cid)[len(points) :]
    assert (added.config, added.sweep, added.role) == (
        wanted[0].config,
        wanted[0].sweep,
        wanted[0].role,
    )
    assert result.questions == campaign_questions(store, load_campaign(store, cid))


def test_no_round_while_the_store_is_away(cold, monkeypatch):
    """A shared store that went away keeps the runs' writes on this host: the campaign
    cannot be read back, so no question is asked and no run added (the caller says
    the store went away); the default budget is not read from it either."""
    store, cid = cold
    replay = Replay(store, cid)
    monkeypatch.setattr(store, "spooled", lambda: 3)

    def unreachable(*args, **kwargs):
        raise AssertionError("the store was read while it was away")

    monkeypatch.setattr(store, "campaign", unreachable)
    monkeypatch.setattr(store, "points", unreachable)
    result = adaptive.run_until_answered(store, cid, budget_s=None, run=replay)
    assert result.rounds == replay.rounds == 0 and result.questions == []
    ci = adaptive.run_until_ci(store, cid, pct=5.0, run=replay)
    assert ci.rounds == replay.rounds == 0


def test_evidence_runs_stop_at_their_cap(cold):
    store, cid = cold
    data = load_campaign(store, cid)
    row = data.evidence_row("ext4-default", (("numjobs", 1024),))
    planned = [
        adaptive.PlannedPoint(-1, "ext4-default", "ext4", {"numjobs": 1024}, i + 1, "evidence")
        for i in range(MAX_EVIDENCE_RUNS - 1)
    ]
    store.add_points(cid, planned)
    Replay(store, cid)(store, cid, options=None, progress=None)
    assert row is not None
    questions = campaign_questions(store, load_campaign(store, cid))
    mechanism = next(q for q in questions if q.kind == "mechanism")
    assert not any(w.role == "evidence" for w in mechanism.wants)


@pytest.mark.parametrize(
    ("text", "until_ci", "message"),
    [("soon", None, "--budget"), ("5m", 10.0, "--until-ci"), ("-1s", None, "--budget")],
)
def test_budget_checks(text, until_ci, message):
    with pytest.raises(UsageError, match=message):
        adaptive.check_budget(text, until_ci)


def test_budget_zero_means_the_planned_runs_only():
    assert adaptive.check_budget("0", None) == 0.0
    assert adaptive.check_budget(None, None) is None


# --- adaptive campaigns -------------------------------------------------------------------

GRID = DATA_DIR / "campaign_fsync_quick.json"  # 2 configurations, 1..1024 jobs, 3 runs a point


class NearestReplay:
    """Runs pending points with the metrics of a real run of the same configuration at the
    measured numjobs nearest on a log scale (the grid campaign measured 6 of them)."""

    def __init__(self, grid: dict) -> None:
        self.runs: dict[tuple[str, int], itertools.cycle] = {}
        by_key: dict[tuple[str, int], list[dict]] = {}
        for p in grid["points"]:
            if p["status"] == "ok":
                by_key.setdefault((p["config"], p["sweep"]["numjobs"]), []).append(p["metrics"])
        self.runs = {key: itertools.cycle(values) for key, values in by_key.items()}
        self.measured = sorted({n for _, n in by_key})

    def __call__(self, store: Store, campaign_id: int, *, options, progress) -> str:
        import math

        for p in store.points(campaign_id):
            if p.status == "pending":
                n = min(self.measured, key=lambda m: abs(math.log(m / p.sweep["numjobs"])))
                metrics = dict(next(self.runs[(p.config, n)]))
                store.save_outcome(p.id, PointOutcome(status="ok", metrics=metrics))
        return "complete"


def _adaptive_campaign(store: Store) -> tuple[int, dict]:
    from fslab.spec.load import validate_spec
    from fslab.spec.points import expand_points

    grid = json.loads(GRID.read_text())
    data = {**grid["campaign"]["spec"]}
    data["run"] = {**data["run"], "adaptive": True}
    spec = validate_spec(data, "test")
    planned = [
        adaptive.PlannedPoint(
            p.seq, p.filesystem.label, p.filesystem.type, p.sweep_dict, p.repeat, p.role
        )
        for p in expand_points(spec, "inline")
    ]
    campaign_id = store.create_campaign(
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        spec_toml="",
        overrides={"collect": "inline"},
        host=grid["campaign"]["host"],
        device=None,
        fslab_version="test",
        points=planned,
    )
    return campaign_id, grid


def test_an_adaptive_scan_starts_with_the_first_configurations_coarse_curve(tmp_path):
    with Store(tmp_path / "a.db") as store:
        campaign_id, _ = _adaptive_campaign(store)
        points = store.points(campaign_id)
    measured = [p for p in points if p.role != "warmup"]
    assert {p.config for p in measured} == {"ext4-default"}
    assert sorted({p.sweep["numjobs"] for p in measured}) == [1, 16, 256, 1024]
    assert {p.config for p in points if p.role == "warmup"} == {"ext4-default", "ext4-journal1g"}


def test_adaptive_rounds_bracket_the_fall_and_run_the_other_configuration_there(tmp_path):
    with Store(tmp_path / "a.db") as store:
        campaign_id, grid = _adaptive_campaign(store)
        replay = NearestReplay(grid)
        replay(store, campaign_id, options=None, progress=None)  # the planned scan
        result = adaptive.run_until_answered(store, campaign_id, budget_s=1e9, run=replay)
        points = store.points(campaign_id)
    curve = next(q for q in result.questions if q.kind == "curve")
    assert curve.status == "settled", curve.describe()
    lo, hi = (int(x.split("=")[1]) for x in curve.answer.split(" (")[0].split(" and "))
    assert hi / lo <= 1.5 or hi - lo <= 1
    added = {p.sweep["numjobs"] for p in points if p.config == "ext4-default"} - {1, 16, 256, 1024}
    assert added  # midpoints the grid never listed
    other = [p for p in points if p.config == "ext4-journal1g" and p.role != "warmup"]
    assert len(other) >= 3 and len({p.sweep["numjobs"] for p in other}) == 1


def test_midpoint_prefers_the_specs_own_values():
    from fslab.drive.questions import _midpoint

    grid = [1, 16, 64, 256, 512, 768, 1024, 2048]
    assert _midpoint(256, 2048, grid) == 768  # nearest sqrt(256 x 2048) = 724 in log terms
    assert _midpoint(512, 1024, grid) == 768
    assert _midpoint(768, 1024, grid) == 887  # none declared inside: the geometric midpoint
    assert _midpoint(256, 2048, []) == 724


def test_other_questions_wait_while_the_curve_is_open(tmp_path):
    """Right after the coarse scan the cliff is not bracketed yet: only the curve (and
    falloff) questions ask for runs, none at a bad point that may still move."""
    with Store(tmp_path / "a.db") as store:
        campaign_id, grid = _adaptive_campaign(store)
        NearestReplay(grid)(store, campaign_id, options=None, progress=None)
        questions = campaign_questions(store, load_campaign(store, campaign_id))
    curve = next(q for q in questions if q.kind == "curve")
    assert curve.is_open, curve.describe()
    assert {q.kind for q in questions} <= {"curve", "falloff"}


def test_an_adaptive_budget_is_a_share_of_the_grid_at_the_campaigns_own_pace(tmp_path):
    """A quarter of the grid's runs at the mean time of the runs measured so far, not at
    an estimate whose set-up constant may be far off, nor at their median: a grid's time
    is a sum, and its heavy points take longer than the rest (11 s here, one 22 s)."""
    with Store(tmp_path / "a.db") as store:
        campaign_id, _ = _adaptive_campaign(store)
        guessed = adaptive.default_budget_s(store, campaign_id)  # nothing ran yet
        points = store.points(campaign_id)
        for i, p in enumerate(points):
            store.save_outcome(
                p.id,
                PointOutcome(
                    status="ok",
                    metrics={"fio.write.iops": 1.0},
                    started_at="2026-12-03T10:00:00+00:00",
                    ended_at="2026-12-03T10:00:22+00:00" if i == 0 else "2026-12-03T10:00:11+00:00",
                ),
            )
        mean = (22.0 + 11.0 * (len(points) - 1)) / len(points)
        paced = adaptive.default_budget_s(store, campaign_id)
        spec = store.campaign(campaign_id).spec
    from fslab.spec.points import expand_points

    as_grid = spec.model_copy(update={"run": spec.run.model_copy(update={"adaptive": False})})
    grid_runs = len(expand_points(as_grid, "inline"))  # the campaign collects inline
    assert paced < guessed
    assert paced == pytest.approx(adaptive.ADAPTIVE_SHARE * mean * grid_runs)


def _recorded_curve(ns: list[int]):
    """ext4-default's curve from the recorded grid (tests/data/adaptive), at these N."""
    from fslab.analyze.curve.falloff import SweepPoint, make_curve

    runs = dict(json.loads((DATA_DIR / "adaptive" / "grid-1.json").read_text())["curve"])
    points = [
        SweepPoint(
            (("numjobs", n),), tuple(runs[float(n)]), statistics.median(runs[float(n)]), float(n)
        )
        for n in ns
    ]
    return make_curve("ext4-default", "numjobs", (), points)


def test_the_lowest_point_past_the_fall_is_bracketed_too():
    """The recorded grid falls from 512 to 768 jobs, is lowest at 1024 and recovers by 2048.
    A scan that bracketed the fall at (512, 768) has its lowest point at 768 with 2048 next
    to it: the grid's own 1024 is measured before the bad point is settled."""
    from fslab.drive.questions import valley_probe

    declared = [1, 16, 64, 256, 512, 768, 1024, 2048]
    scanned = _recorded_curve([1, 16, 256, 512, 768, 2048])
    assert scanned.low.n == 768
    assert valley_probe(scanned, declared) == 1024
    full = _recorded_curve([1, 16, 256, 512, 768, 1024, 2048])
    assert full.low.n == 1024
    # 768 is within x1.5; 2048 is not, and no declared value lies between: the midpoint
    assert valley_probe(full, declared) == 1448
    assert valley_probe(_recorded_curve([1, 16, 256, 512, 768, 1024]), declared) is None


def test_the_bad_point_gets_its_runs_before_the_others_are_spent_there(tmp_path):
    """The curve question settles only when its lowest point (the bad point every other
    question spends its runs at) has MIN_REPS runs: the scan and the bisection give each
    point two, and on two runs of a chaotic point the bad point moved after the other
    configurations had run there."""
    from fslab.analyze.campaign.stats import MIN_REPS
    from fslab.analyze.curve.falloff import campaign_falloffs

    with Store(tmp_path / "a.db") as store:
        campaign_id, grid = _adaptive_campaign(store)
        replay = NearestReplay(grid)
        replay(store, campaign_id, options=None, progress=None)
        for _ in range(20):  # the curve question's rounds alone
            data = load_campaign(store, campaign_id)
            curve = next(q for q in campaign_questions(store, data) if q.kind == "curve")
            if not curve.is_open:
                break
            store.add_points(campaign_id, adaptive._round(data, curve.wants))
            replay(store, campaign_id, options=None, progress=None)
        data = load_campaign(store, campaign_id)
    assert curve.status == "settled", curve.describe()
    low = campaign_falloffs(data)["ext4-default"].curve.low
    assert len(low.values) >= MIN_REPS, curve.describe()


def test_an_unsettled_verdict_gets_its_run_on_the_side_with_fewer():
    """The baseline at the bad point is shared by every configuration's verdict and has
    more runs than each of them; the run more goes where the test gains most."""
    from fslab.drive.questions import MAX_CLEAN_RUNS, _fewer_side

    bad = (("numjobs", 1024),)

    def sides(n_xfs: int, n_default: int) -> list[str]:
        counts = {("xfs", bad, "clean"): n_xfs, ("ext4-default", bad, "clean"): n_default}
        return [w.config for w in _fewer_side("xfs", "ext4-default", bad, counts)]

    assert sides(3, 6) == ["xfs"]
    assert sides(5, 4) == ["ext4-default"]
    assert sides(4, 4) == ["xfs", "ext4-default"]
    assert sides(MAX_CLEAN_RUNS, MAX_CLEAN_RUNS) == []  # both at the cap: the question is stuck


def test_no_run_is_asked_of_a_configuration_that_never_ran(tmp_path):
    """mkfs refused xfs-log8m's 8 MiB log in every run (tests/data/failing): a run more
    would fail the same way, so its question is stuck with the error, wanting nothing;
    before, a round added three more failing runs."""
    case = DATA_DIR / "failing" / "failing-config.json"
    with Store(tmp_path / "f.db") as store:
        cid = import_campaign(store, json.loads(case.read_text()))
        data = load_campaign(store, cid)
        # as after the planned runs, before the round that added failing ones at 1024
        data.points = [
            p
            for p in data.points
            if not (p.config == "xfs-log8m" and p.sweep == {"numjobs": 1024} and p.seq > 0)
        ]
        questions = campaign_questions(store, data)
    remedy = _by_asks(questions)["Does xfs-log8m differ from xfs-default at numjobs=1024?"]
    assert remedy.status == "stuck" and "Log size must be at least 64MB" in remedy.answer
    assert not [w for q in questions for w in q.wants if w.config == "xfs-log8m"]


def test_with_no_falloff_the_reports_change_is_asked_at_the_reporters_point(tmp_path):
    """A reproduced report whose configurations do not fall off (ext4 without and with
    fast_commit under fs_mark, tests/data/questions, the planned runs only): its question
    is whether the change moved the figure, asked at the reporter's point (8 threads),
    and the rounds add clean runs of both configurations there and nowhere else. Before,
    nothing was asked once no configuration fell off, and the campaign stopped at 4 runs
    a side with +10% unsettled."""
    case = DATA_DIR / "questions" / "fast-commit-fsmark-plan.json"
    with Store(tmp_path / "q.db") as store:
        cid = import_campaign(store, json.loads(case.read_text()))
        questions = _by_asks(campaign_questions(store, load_campaign(store, cid)))
        asks = "Does ext4-fast_commit-on differ from ext4-fast_commit-off at threads=8?"
        assert questions[asks].status == "open"
        assert {w.label for w in questions[asks].wants} <= {
            "ext4-fast_commit-on threads=8",
            "ext4-fast_commit-off threads=8",
        }
        before = len(store.points(cid))
        result = adaptive.run_until_answered(store, cid, budget_s=3600.0, run=Replay(store, cid))
        added = store.points(cid)[before:]
    assert result.rounds >= 1 and added
    assert {(p.sweep["threads"], p.role) for p in added} == {(8, "clean")}
    assert {p.config for p in added} == {"ext4-fast_commit-on", "ext4-fast_commit-off"}
    final = _by_asks(result.questions)[asks]
    assert final.status in ("settled", "stuck")
