"""Where a comparison stands when its baselines' level moved: one rule, and what it says.

The noise model (analyze.noise.model) takes a spec's baseline campaigns as
scattered around one level. When the machine's own speed moved part-way
through them (their headline series has a change point, found as `fslab
series` finds it: analyze.history.series), the move is counted as drift
between campaigns: the model comes out too wide to find a real change, and
a difference between a campaign before the move and one after it is partly
the machine's. So:

- both sides on one level that has MIN_CAMPAIGNS baselines: the model
  gives each level its own mean (a block, as for groups of two specs), so
  the drift is measured around each level's mean over every baseline, and
  the candidate is compared with the mean of its own level; with fewer
  baselines on it the model stays as it was, and the comparison says why;
- the sides on different levels: the model stays as it was (the wider one:
  conservative) and the comparison warns where the level moved.

Two other rules were tried and dropped, because both flagged more A/A
pairs on the recordings: a model fitted on one level's baselines alone (a
change point falls where the series splits into quiet runs, so a level's
own drift comes out too small), and a candidate compared across a move with
the mean of its own level (a level found in a slow stretch of the host is
not steady inside it; what the stretch leaves is caught as an unsteady
candidate instead). The figures: docs/statistics.md, "When the machine's
own level moved" and "An unsteady candidate is not judged".

A level is the run of series campaigns between two moves. Its time span
runs from its first campaign's start up to the next level's first start;
the last level is open-ended, and the first also takes what started before
it (no move is recorded there). A campaign lies on the level whose span
holds its start. analyze.history.baselines builds the series and fits the
model; this module holds the rule over start times and moves, and the
sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.noise.model import MIN_CAMPAIGNS
from fslab.workload.registry import metric_label


@dataclass(frozen=True)
class LevelMove:
    """The series' headline took a new level at one campaign (the first on it)."""

    index: int  # position of that campaign in the series, oldest first
    campaign_id: int
    started_at: str
    metric: str
    point: str  # the sweep point's label ("" when the series has one point)
    before: float  # geometric means of the levels on either side (analyze.history.series)
    after: float
    p_value: float

    def describe(self) -> str:
        """'campaign 55 (2026-12-01 22:35Z): write IOPS 29.5K -> 23.6K, p 0.0015'"""
        at = f" at {self.point}" if self.point else ""
        return (
            f"campaign {self.campaign_id} ({_when(self.started_at)}): {metric_label(self.metric)} "
            f"{format_value(self.metric, self.before)} -> {format_value(self.metric, self.after)}"
            f"{at}, p {self.p_value:.2g}"
        )

    def to_dict(self) -> dict[str, str | int | float]:
        return {
            "campaign_id": self.campaign_id,
            "started_at": self.started_at,
            "metric": self.metric,
            "point": self.point,
            "mean_before": self.before,
            "mean_after": self.after,
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class Level:
    """The series campaigns between two moves, and the moves that bound them."""

    ids: tuple[int, ...]  # campaigns of the series on it, oldest first
    start: str | None  # its first campaign's start; None: the first level (open)
    end: str | None  # the next level's first start; None: the last level (open)
    since: tuple[LevelMove, ...]  # the move(s) it starts with (none for the first)
    until: tuple[LevelMove, ...]  # the move(s) that end it (none for the last)

    def holds(self, started_at: str) -> bool:
        t = _time(started_at)
        return (self.start is None or _time(self.start) <= t) and (
            self.end is None or t < _time(self.end)
        )


@dataclass(frozen=True)
class LevelCheck:
    """A comparison whose baselines' level moved: where its sides lie, what the model does."""

    levels: tuple[Level, ...]  # oldest first
    moves: tuple[LevelMove, ...]  # every move in the series, oldest first
    on: int | None  # the one level every campaign of both sides lies on; None: several
    by_level: bool  # the model gives each level its own mean, the candidate against `on`'s
    crossed: tuple[LevelMove, ...]  # the moves between the sides' campaigns (none on one level)
    candidate: int  # the level of the candidate's first campaign
    candidate_ids: tuple[int, ...]  # the candidate side's campaigns (left out of the advice)

    def level_of(self, started_at: str) -> int:
        """The level a campaign started then lies on: the block it spreads around."""
        return next(i for i, level in enumerate(self.levels) if level.holds(started_at))

    def note(self, *, groups: bool = False) -> str | None:
        """What the model note adds when both sides lie on one level."""
        if self.on is None:
            return None
        level = self.levels[self.on]
        where = _span(level)
        count = len(level.ids) if groups else len(self.baselines_on(self.on))
        if not self.by_level:
            return (
                f"the baselines' level moved ({_moves(self.moves)}); the {count} {where} are "
                f"too few for a mean of their own (needs {MIN_CAMPAIGNS}), so every baseline "
                "spreads around one mean"
            )
        if groups:
            return (
                "each level of the baseline side's spec spreads around its own mean, and both "
                f"sides lie on that of the {count} campaigns {where}"
            )
        return (
            "each level of the baselines spreads around its own mean, and the candidate is "
            f"compared with the mean of the {count} {where}"
        )

    def baselines_on(self, index: int) -> list[int]:
        """The series campaigns on a level, the candidate side's left out."""
        return [i for i in self.levels[index].ids if i not in self.candidate_ids]

    def warning(self, baseline: str, candidate: str, *, groups: bool = False) -> str | None:
        """The warning of a comparison whose sides lie on different levels."""
        if self.on is not None:
            return None
        if groups and len(self.crossed) == 1:
            cut = _when(self.crossed[0].started_at)
            advice = (
                f"give both sides campaigns of one level (all started before {cut}, or all "
                "from then on)"
            )
        elif groups:
            advice = "give both sides campaigns started between the same two moves"
        else:
            ids = _ids(self.baselines_on(self.candidate))
            advice = f"take a baseline from {candidate}'s level (campaign(s) {ids})"
        return (
            f"level moved: the baselines' level moved between {baseline} and {candidate}, at "
            f"{_moves(self.crossed)}; part of any difference is the machine's, so the noise "
            f"model keeps every baseline around one mean; to compare within one level, {advice}"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "moves": [m.to_dict() for m in self.moves],
            "levels": [list(level.ids) for level in self.levels],
            "one_level": self.on is not None,
            "level": self.on,
            "model_by_level": self.by_level,
            "crossed": [m.to_dict() for m in self.crossed],
            "candidate_level": self.candidate,
        }


def place(
    series: Sequence[tuple[int, str]],
    moves: Sequence[LevelMove],
    baseline_side: Sequence[tuple[int, str]],
    candidate_side: Sequence[tuple[int, str]],
) -> LevelCheck | None:
    """Where two sides ((campaign id, start) each) lie on the levels of `series` ((campaign
    id, start) of the baseline spec's campaigns, oldest first); None when no level moved."""
    if not moves or not series or not candidate_side:
        return None
    levels = _levels(series, moves)

    def level_of(started_at: str) -> int:
        return next(i for i, level in enumerate(levels) if level.holds(started_at))

    touched = sorted({level_of(t) for _, t in [*baseline_side, *candidate_side]})
    on = touched[0] if len(touched) == 1 else None
    candidates = {cid for cid, _ in candidate_side}
    return LevelCheck(
        levels=tuple(levels),
        moves=tuple(sorted(moves, key=lambda m: (m.index, m.point))),
        on=on,
        by_level=on is not None
        and len([i for i in levels[on].ids if i not in candidates]) >= MIN_CAMPAIGNS,
        crossed=tuple(m for lv in levels[touched[0] + 1 : touched[-1] + 1] for m in lv.since),
        candidate=level_of(candidate_side[0][1]),
        candidate_ids=tuple(cid for cid, _ in candidate_side),
    )


def _levels(series: Sequence[tuple[int, str]], moves: Sequence[LevelMove]) -> list[Level]:
    cuts = [0, *sorted({m.index for m in moves if 0 < m.index < len(series)}), len(series)]
    at = {cut: tuple(m for m in moves if m.index == cut) for cut in cuts}
    return [
        Level(
            ids=tuple(cid for cid, _ in series[first:stop]),
            start=series[first][1] if i > 0 else None,
            end=series[stop][1] if stop < len(series) else None,
            since=at[first] if i > 0 else (),
            until=at[stop] if stop < len(series) else (),
        )
        for i, (first, stop) in enumerate(pairwise(cuts))
    ]


def _span(level: Level) -> str:
    if level.since and level.until:
        return f"between the moves at {_moves(level.since)} and {_moves(level.until)}"
    if level.since:
        return f"since the level moved at {_moves(level.since)}"
    return f"before the level moved at {_moves(level.until)}"


def _moves(moves: Sequence[LevelMove]) -> str:
    return "; ".join(m.describe() for m in moves)


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "none stored"


def _time(started_at: str) -> datetime:
    return datetime.fromisoformat(started_at)


def _when(started_at: str) -> str:
    """'2026-12-01 22:35Z': to the minute, UTC as stored."""
    return started_at.replace("+00:00", "")[:16].replace("T", " ") + "Z"
