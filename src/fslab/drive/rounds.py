"""Adaptive repetition: runs added where a campaign's answer is still open.

`run_until_answered` (the default of `fslab run`) asks the campaign's questions
(drive.questions: is there a falloff, does each other configuration differ at
the bad point, is the first mechanism's lead stable) and runs what the open ones
want, round by round, until none is open or the machine-time budget is spent.

`run_until_ci` (`fslab run --until-ci PCT`) repeats noisy points until they settle:

After the campaign's planned points, each (config, sweep) point whose
headline median still has a 95% interval wider than +-PCT gets one more
repetition; all such points are appended as one round, in the campaign's
own order, so drift spreads over every configuration as in the planned
runs. Rounds continue until every point is within PCT or has reached the
cap. A point is never judged on fewer than MIN_REPS successful runs (a
bootstrap interval of 2 runs means nothing), and failed attempts count
towards the cap so a point that always fails cannot loop forever.

Only headline repetitions count and only they are added: clean ones, or
inline ones in a campaign run with --collect=inline. A sweep point's evidence
run stays the one planned with the campaign (it explains the point; it does
not narrow its interval).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fslab.analyze.campaign import verdicts
from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.base.errors import UsageError
from fslab.base.format import format_pct
from fslab.base.roles import (
    PointRole,
    counts_for_headline,
    instrumented,
    is_headline_run,
    repetition_role,
)
from fslab.base.units import parse_duration_s
from fslab.base.vocab import PointKey, point_key, point_label
from fslab.drive.questions import Question, Want, campaign_questions
from fslab.measure import plan
from fslab.run.campaign import (
    ProgressSink,
    RunOptions,
    SilentProgress,
    campaign_collect_mode,
    headline_role,
    run_campaign,
)
from fslab.spec.model import ScalarValue, Spec
from fslab.spec.points import expand_points
from fslab.store.db import PlannedPoint, PointRow, Store

Key = tuple[str, PointKey]  # (config, sweep point)
RunFn = Callable[..., str]


@dataclass
class KeyState:
    """One (config, sweep) point: its runs so far and how settled its headline is."""

    config: str
    sweep: dict[str, Any]
    attempts: int  # points run or planned, failed ones included
    values: list[float]  # headline of the successful runs
    half_width_pct: float  # 95% CI half-width of the median, % of the median

    @property
    def label(self) -> str:
        return f"{self.config} {point_label(self.sweep)}"

    def wanted(self, pct: float, cap: int) -> int:
        """Repetitions to add now: up to MIN_REPS successes first, else one while too wide."""
        room = cap - self.attempts
        if room <= 0:
            return 0
        if len(self.values) < MIN_REPS:
            return min(room, MIN_REPS - len(self.values))
        return 1 if self.half_width_pct > pct else 0


@dataclass
class AdaptiveResult:
    """What the rounds did, and the points that stopped at the cap still too wide."""

    rounds: int = 0
    added: int = 0
    states: list[KeyState] = field(default_factory=list)
    unsettled: list[KeyState] = field(default_factory=list)


def store_away(store: Store, sink: ProgressSink, what: str) -> bool:
    """True (and says so) when the shared store went away during the runs: writes are
    kept on this host (fslab.store.spool), so the stored campaign cannot be read
    back to decide on more runs. The runs done stand; the caller reports the outage."""
    if not store.spooled():
        return False
    sink.message(f"{what}: {store.location} went away during the runs; no run is added")
    return True


def check_options(pct: float | None, max_repeat: int | None) -> int:
    """Validate --until-ci / --max-repeat; returns the cap."""
    if pct is None:
        if max_repeat is not None:
            raise UsageError("--max-repeat only applies with --until-ci PCT")
        return 0
    if not (pct > 0 and math.isfinite(pct)):
        raise UsageError(f"--until-ci must be a positive percentage, not {pct}")
    cap = verdicts.RECOMMENDED_REPETITIONS if max_repeat is None else max_repeat
    if cap < MIN_REPS:
        raise UsageError(f"--max-repeat must be at least {MIN_REPS} (a CI needs {MIN_REPS} runs)")
    return cap


def key_states(data: CampaignData) -> list[KeyState]:
    """Every (config, sweep) point of the campaign, in first-seen order."""
    groups: dict[Key, list[PointRow]] = {}
    for p in data.points:
        if counts_for_headline(p.role):
            groups.setdefault((p.config, point_key(p.sweep)), []).append(p)
    states = []
    for (config, sweep), rows in groups.items():
        values = [
            data.metrics[p.id][data.headline]
            for p in rows
            if is_headline_run(p) and data.headline in data.metrics.get(p.id, {})
        ]
        width = verdicts.ci_half_width_pct(values) if data.headline else math.inf
        states.append(KeyState(config, dict(sweep), len(rows), values, width))
    return states


def plan_round(
    data: CampaignData, pct: float, cap: int, role: PointRole = "clean"
) -> list[PlannedPoint]:
    """The repetitions (of `role`) to append for one round (empty: every point is done)."""
    next_repeat: dict[Key, int] = {}
    fs_type: dict[str, str] = {}
    for p in data.points:
        if not counts_for_headline(p.role):
            continue
        key = (p.config, point_key(p.sweep))
        next_repeat[key] = max(next_repeat.get(key, 0), p.repeat + 1)
        fs_type.setdefault(p.config, p.fs_type)
    wanted = {(s.config, point_key(s.sweep)): s.wanted(pct, cap) for s in key_states(data)}
    planned = []
    for extra in range(max(wanted.values(), default=0)):
        for key, count in wanted.items():  # interleaved: one of each point per pass
            if extra < count:
                config, sweep = key
                repeat = next_repeat[key] + extra
                planned.append(PlannedPoint(-1, config, fs_type[config], dict(sweep), repeat, role))
    return planned


def run_until_ci(
    store: Store,
    campaign_id: int,
    *,
    pct: float,
    max_repeat: int | None = None,
    options: RunOptions | None = None,
    progress: ProgressSink | None = None,
    run: RunFn = run_campaign,
) -> AdaptiveResult:
    """Append and run repetitions, round by round, until every point is within pct.

    `run` runs a campaign's pending points (run_campaign; tests pass a stand-in).
    """
    cap = check_options(pct, max_repeat)
    sink = progress or SilentProgress()
    options = options or RunOptions()
    result = AdaptiveResult()
    if store_away(store, sink, "until-ci"):
        return result
    role = headline_role(store, campaign_id)
    while True:
        if store_away(store, sink, "until-ci"):
            return result
        data = load_campaign(store, campaign_id)
        if data.headline is None:
            sink.message("until-ci: no successful point has a headline metric; not repeating")
            return result
        planned = plan_round(data, pct, cap, role)
        if not planned:
            break
        result.rounds += 1
        result.added += len(planned)
        sink.message(
            f"until-ci round {result.rounds}: {len(planned)} more run(s) "
            f"(headline CI above +-{format_pct(pct, None)} or fewer than {MIN_REPS} runs)"
        )
        store.add_points(campaign_id, planned)
        run(store, campaign_id, options=options, progress=progress)
    result.states = key_states(load_campaign(store, campaign_id))
    result.unsettled = [s for s in result.states if not s.half_width_pct <= pct]
    for state in result.unsettled:
        sink.message(
            f"until-ci: {state.label} stopped at {state.attempts} runs with CI "
            f"+-{format_pct(state.half_width_pct, 1)} (cap {cap}; raise it with --max-repeat)"
        )
    return result


QUICK_BUDGET_S = 255.0
"""The quick form's runs, planned and added: the main job tells its story in 5 minutes."""
BUDGET_FACTOR = 1.5
"""A full campaign may add half its planned runs' machine time."""
ADAPTIVE_SHARE = 0.25
"""An adaptive campaign's runs take at most this share of the grid's machine time."""
SETUP_S = 8.0
"""A run's own set-up and tear-down (image, mkfs, mount, layout), for estimates."""


def check_budget(text: str | None, until_ci: float | None) -> float | None:
    """--budget in seconds (None: the default), refusing what cannot be meant."""
    if text is None:
        return None
    if until_ci is not None:
        raise UsageError("--budget and --until-ci each add runs their own way; give one")
    try:
        seconds = parse_duration_s(text)
    except ValueError as exc:
        raise UsageError(f"--budget: {exc}") from None
    if seconds < 0:
        raise UsageError("--budget: must be 0 or more")
    return seconds


def default_budget_s(store: Store, campaign_id: int) -> float:
    """QUICK_BUDGET_S for the quick form; for an adaptive campaign ADAPTIVE_SHARE of the
    grid it stands for (its runs at the mean time of the campaign's runs so far); else
    BUDGET_FACTOR x the planned runs' time."""
    campaign = store.campaign(campaign_id)
    if campaign.overrides.quick:
        return QUICK_BUDGET_S
    spec = campaign.spec
    if spec.run.adaptive:
        grid = spec.model_copy(update={"run": spec.run.model_copy(update={"adaptive": False})})
        points = store.points(campaign_id)
        sweeps = [
            p.sweep_dict for p in expand_points(grid, campaign_collect_mode(campaign, points))
        ]
        # the grid's time at the pace this campaign's own runs went: set-up differs by
        # host and filesystem more than any constant guesses (SETUP_S overstated it 1.4x);
        # a sum of runs is their count times their mean (a median of a scan over 1..2048
        # jobs understated them by a fifth: its heavy points take twice the rest)
        measured = [s for p in points if (s := _seconds(p)) is not None]
        if measured:
            return ADAPTIVE_SHARE * len(sweeps) * statistics.fmean(measured)
        return ADAPTIVE_SHARE * estimate_s(spec, sweeps)
    return BUDGET_FACTOR * estimate_s(spec, [row.sweep for row in store.points(campaign_id)])


def estimate_s(spec: Spec, sweeps: Sequence[Mapping[str, ScalarValue]]) -> float:
    """Machine time of runs at these sweep points, from their runtime, ramp and SETUP_S."""
    total = 0.0
    for sweep in sweeps:
        runtime_s, ramp_s = plan.runtime_and_ramp_s(spec, sweep)
        total += runtime_s + ramp_s + SETUP_S
    return total


@dataclass
class AnswerResult:
    """What the question rounds did, and the questions as they stand at the end."""

    rounds: int = 0
    added: int = 0
    questions: list[Question] = field(default_factory=list)
    budget_spent: bool = False


def machine_seconds(points: Sequence[PointRow]) -> float:
    """Wall time the campaign's finished runs took, one after another."""
    return sum(_seconds(p) or 0.0 for p in points)


def _seconds(point: PointRow) -> float | None:
    if not point.started_at or not point.ended_at:
        return None
    started = datetime.fromisoformat(point.started_at)
    ended = datetime.fromisoformat(point.ended_at)
    return max(0.0, (ended - started).total_seconds())


def run_until_answered(
    store: Store,
    campaign_id: int,
    *,
    budget_s: float | None,
    options: RunOptions | None = None,
    progress: ProgressSink | None = None,
    run: RunFn = run_campaign,
) -> AnswerResult:
    """Run what the open questions want, round by round, while the campaign's machine
    time (planned runs included) stays within budget_s (None: default_budget_s); of a
    round that does not fit, the runs that do (the first questions' first)."""
    sink = progress or SilentProgress()
    options = options or RunOptions()
    result = AnswerResult()
    if store_away(store, sink, "questions"):
        return result
    if budget_s is None:
        budget_s = default_budget_s(store, campaign_id)
    while True:
        if store_away(store, sink, "questions"):
            break
        data = load_campaign(store, campaign_id)
        result.questions = campaign_questions(store, data)
        planned = _round(data, [w for q in result.questions if q.is_open for w in q.wants])
        if not planned:
            break
        spent = machine_seconds(data.points)
        each = [s for p in data.points if (s := _seconds(p)) is not None]
        run_s = statistics.median(each) if each else 0.0
        fits = len(planned) if run_s <= 0 else int(max(0.0, budget_s - spent) // run_s)
        if fits < len(planned):
            # the round's first runs are the first questions' (the curve, then each
            # falloff, each other configuration, the mechanism): run what fits, last
            result.budget_spent = True
            sink.message(
                f"questions: the budget ({budget_s:.0f} s of runs) has room for {fits} of "
                f"{len(planned)} more run(s) (about {run_s:.0f} s each)"
            )
            planned = planned[:fits]
            if not planned:
                break
        result.rounds += 1
        result.added += len(planned)
        wanted = ", ".join(dict.fromkeys(f"{p.config} {point_label(p.sweep)}" for p in planned))
        sink.message(f"questions round {result.rounds}: {len(planned)} more run(s) at {wanted}")
        store.add_points(campaign_id, planned)
        run(store, campaign_id, options=options, progress=progress)
        if result.budget_spent and not store_away(store, sink, "questions"):
            result.questions = campaign_questions(store, load_campaign(store, campaign_id))
            break  # the questions as the last runs left them
    return result


def _round(data: CampaignData, wants: Sequence[Want]) -> list[PlannedPoint]:
    """One run per distinct want, in the questions' order, with the roles of the mode the
    campaign was planned with: evidence wants are evidence runs with --collect=separate
    (an adaptive scan has none yet: the questions add them), instrumented repetitions
    with --collect=inline, and none without collectors."""
    mode = campaign_collect_mode(data.campaign, data.points)
    clean_role = repetition_role(mode)
    next_repeat: dict[tuple[str, PointKey, PointRole], int] = {}
    fs_type: dict[str, str] = {}
    for p in data.points:
        key = (p.config, point_key(p.sweep), p.role)
        next_repeat[key] = max(next_repeat.get(key, 0), p.repeat + 1)
        fs_type.setdefault(p.config, p.fs_type)
    planned: list[PlannedPoint] = []
    for want in dict.fromkeys(wants):
        role: PointRole
        if want.role == "clean":
            role = clean_role
        elif mode == "separate":
            role = "evidence"
        elif instrumented(clean_role):
            role = clean_role  # inline: every repetition is instrumented
        else:
            continue  # no collectors in this campaign: no evidence to add
        key = (want.config, want.sweep, role)
        for _ in range(want.count):
            repeat = next_repeat.get(key, 0)
            next_repeat[key] = repeat + 1
            planned.append(
                PlannedPoint(-1, want.config, fs_type[want.config], dict(want.sweep), repeat, role)
            )
    return planned
