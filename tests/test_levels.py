"""analyze.levels: which level a campaign lies on, from start times and moves alone."""

from __future__ import annotations

from fslab.analyze.noise.levels import LevelMove, place

DAY = "2026-12-01T"


def _at(minute: int) -> str:
    return f"{DAY}{10 + minute // 60:02d}:{minute % 60:02d}:00+00:00"


# campaigns 1..8 ten minutes apart; the level moved at the fifth (campaign 5, 10:40)
SERIES = [(i + 1, _at(10 * i)) for i in range(8)]
MOVE = LevelMove(4, 5, _at(40), "fio.write.iops", "", 30000.0, 24000.0, 0.001)


def test_no_move_no_check() -> None:
    assert place(SERIES, [], SERIES[:1], SERIES[1:2]) is None


def test_sides_on_one_level_and_the_first_level_open_before_it() -> None:
    early = (99, _at(-30))  # before every campaign of the series: still the first level
    check = place(SERIES, [MOVE], SERIES[:1], [early])
    assert check is not None and check.on == 0 and check.by_level
    assert check.levels[0].ids == (1, 2, 3, 4) and check.levels[1].ids == (5, 6, 7, 8)
    note = check.note()
    assert note is not None and "the mean of the 4 before the level moved at campaign 5" in note
    assert check.warning("campaign 1", "campaign 99") is None


def test_a_level_spans_up_to_the_next_levels_first_start() -> None:
    gap = (98, _at(39))  # after campaign 4, before campaign 5: still the first level
    check = place(SERIES, [MOVE], SERIES[:1], [gap])
    assert check is not None and check.on == 0
    at_move = (97, _at(40))
    check = place(SERIES, [MOVE], SERIES[:1], [at_move])
    assert check is not None and check.on is None and check.crossed == (MOVE,)
    late = place(SERIES, [MOVE], SERIES[5:6], [(96, _at(600))])  # the last level: open
    assert late is not None and late.on == 1


def test_sides_across_the_move_warn_and_name_the_candidates_level() -> None:
    check = place(SERIES, [MOVE], SERIES[:1], SERIES[6:7])
    assert check is not None and check.on is None and not check.by_level
    assert check.note() is None
    warning = check.warning("campaign 1", "campaign 7")
    assert warning is not None
    assert warning.startswith(
        "level moved: the baselines' level moved between campaign 1 and campaign 7, at "
        "campaign 5 (2026-12-01 10:40Z): write IOPS 30.0K -> 24.0K, p 0.001"
    )
    assert warning.endswith("take a baseline from campaign 7's level (campaign(s) 5,6,8)")


def test_a_level_of_too_few_baselines_keeps_one_mean() -> None:
    """Moved at the seventh: the last level holds 2 campaigns, the candidate one of them."""
    move = LevelMove(6, 7, _at(60), "fio.write.iops", "", 30000.0, 24000.0, 0.001)
    check = place(SERIES, [move], SERIES[6:7], SERIES[7:8])
    assert check is not None and check.on == 1 and not check.by_level
    note = check.note()
    assert note is not None and "too few for a mean of their own (needs 3)" in note
