"""Adaptive repetition (`fslab run --until-ci PCT`): repeat noisy points until they settle.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fslab.analyze import compare
from fslab.analyze.dataset import CampaignData, load_campaign
from fslab.analyze.stats import MIN_REPS
from fslab.errors import UsageError
from fslab.roles import PointRole, counts_for_headline
from fslab.runner import ProgressSink, RunOptions, SilentProgress, headline_role, run_campaign
from fslab.store.db import PlannedPoint, PointRow, Store
from fslab.vocab import PointKey, point_key, point_label

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


def check_options(pct: float | None, max_repeat: int | None) -> int:
    """Validate --until-ci / --max-repeat; returns the cap."""
    if pct is None:
        if max_repeat is not None:
            raise UsageError("--max-repeat only applies with --until-ci PCT")
        return 0
    if not (pct > 0 and math.isfinite(pct)):
        raise UsageError(f"--until-ci must be a positive percentage, not {pct}")
    cap = compare.RECOMMENDED_REPETITIONS if max_repeat is None else max_repeat
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
            if p.status == "ok" and data.headline in data.metrics.get(p.id, {})
        ]
        width = compare.ci_half_width_pct(values) if data.headline else math.inf
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
    role = headline_role(store, campaign_id)
    while True:
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
            f"(headline CI above +-{pct:g}% or fewer than {MIN_REPS} runs)"
        )
        store.add_points(campaign_id, planned)
        run(store, campaign_id, options=options, progress=progress)
    result.states = key_states(load_campaign(store, campaign_id))
    result.unsettled = [s for s in result.states if not s.half_width_pct <= pct]
    for state in result.unsettled:
        sink.message(
            f"until-ci: {state.label} stopped at {state.attempts} runs with CI "
            f"+-{state.half_width_pct:.1f}% (cap {cap}; raise it with --max-repeat)"
        )
    return result
