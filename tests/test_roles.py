"""The run model: where the evidence run goes, and which rows are headline repetitions."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.campaign.summary import summarize
from fslab.base.roles import (
    POINT_ROLES,
    counts_for_headline,
    instrumented,
    is_clean,
    is_evidence,
    is_evidence_run,
    is_headline_run,
    is_warmup,
    mode_of_roles,
    repetition_roles,
)
from fslab.drive.rounds import key_states
from fslab.spec.load import load_spec
from fslab.spec.points import expand_points
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("repeat", "expected"),
    [
        (1, ["c0", "e0"]),
        (2, ["c0", "e0", "c1"]),
        (3, ["c0", "c1", "e0", "c2"]),
        (4, ["c0", "c1", "e0", "c2", "c3"]),
    ],
)
def test_the_evidence_run_sits_in_the_middle_of_the_clean_ones(repeat, expected):
    runs = repetition_roles(repeat, "separate")
    assert [f"{role[0]}{rep}" for role, rep in runs] == expected


def test_inline_and_off_have_no_evidence_run():
    assert repetition_roles(3, "inline") == [("inline", 0), ("inline", 1), ("inline", 2)]
    assert repetition_roles(2, "off") == [("clean", 0), ("clean", 1)]


def test_roles_say_what_counts_and_what_is_instrumented():
    assert [counts_for_headline(r) for r in ("clean", "evidence", "inline")] == [
        True,
        False,
        True,
    ]
    assert [instrumented(r) for r in ("clean", "evidence", "inline")] == [False, True, True]


class _Run(NamedTuple):
    role: str
    status: str


def test_which_rows_count_is_one_rule_over_role_and_status():
    assert [is_clean(r) for r in POINT_ROLES] == [True, False, False, False]
    assert [is_evidence(r) for r in POINT_ROLES] == [False, True, False, False]
    assert [is_warmup(r) for r in POINT_ROLES] == [False, False, False, True]
    for role in POINT_ROLES:
        for status in ("ok", "failed", "pending"):
            run = _Run(role, status)
            assert is_headline_run(run) == (status == "ok" and counts_for_headline(role))
            assert is_evidence_run(run) == (status == "ok" and is_evidence(role))


def test_every_reader_counts_the_same_rows(tmp_path):
    """A recorded campaign with failed clean and evidence runs: the dataset, the results
    table and --until-ci's rounds all count exactly the rows base.roles says count."""
    with Store(tmp_path / "r.db") as store:
        data = json.loads((DATA / "report_campaign_failed_points.json").read_text())
        campaign = load_campaign(store, import_campaign(store, data))
    headline_runs = [p for p in campaign.points if is_headline_run(p)]
    assert campaign.ok_points() == headline_runs
    assert campaign.evidence_points() == [p for p in campaign.points if is_evidence_run(p)]
    assert 0 < len(headline_runs) < sum(counts_for_headline(p.role) for p in campaign.points)
    rows = summarize(campaign.points, campaign.metrics)
    assert sum(r.n_ok for r in rows) == len(headline_runs)
    failed = [p for p in campaign.points if counts_for_headline(p.role) and p.status == "failed"]
    assert sum(r.n_failed for r in rows) == len(failed)
    assert sum(r.evidence is not None for r in rows) == len(campaign.evidence_points())
    assert sum(len(s.values) for s in key_states(campaign)) == len(headline_runs)


# a role compared with a literal outside base/roles.py: a second rule for which rows count
_ROLE_LITERAL = re.compile(r"\b(p|point|row|r|run)\.role\s*(==|!=|in\b|not in\b)")
_STATUS_AND_ROLE = re.compile(
    r"status == .ok..*(counts_for_headline|is_evidence)\(|"
    r"(counts_for_headline|is_evidence)\(.*status == .ok."
)


def test_no_module_decides_again_which_rows_count():
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "src" / "fslab").rglob("*.py"))
        if path.name != "roles.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _ROLE_LITERAL.search(line) or _STATUS_AND_ROLE.search(line)
    ]
    assert not found, "use fslab.base.roles (is_headline_run, is_evidence_run, ...):\n" + (
        "\n".join(found)
    )


def test_the_mode_is_recovered_from_the_roles():
    assert mode_of_roles(["clean", "evidence", "clean"]) == "separate"
    assert mode_of_roles(["inline", "inline"]) == "inline"
    assert mode_of_roles(["clean"]) == "off"
    assert mode_of_roles([]) == "off"


def _spec(order: str, repeat: int):
    spec, _ = load_spec(
        "ext4-fsync-storm",
        quick=True,
        overrides=[
            f'run.order="{order}"',
            f"run.repeat={repeat}",
            "sweep.numjobs=[16, 256, 1024]",
        ],
    )
    return spec


def test_warm_ups_come_first_one_per_configuration_at_the_heaviest_point():
    spec = _spec("interleaved", 2)
    points = expand_points(spec, "separate")
    warm = [p for p in points if p.role == "warmup"]
    assert points[: len(warm)] == warm
    assert [(p.filesystem.label, p.sweep_dict) for p in warm] == [
        ("ext4-default", {"numjobs": 1024}),
        ("ext4-journal1g", {"numjobs": 1024}),
    ]
    sequential = expand_points(_spec("sequential", 2), "separate")
    blocks = [p.role for p in sequential if p.filesystem.label == "ext4-journal1g"]
    assert blocks[0] == "warmup" and blocks.count("warmup") == 1
    none = expand_points(_spec("interleaved", 2).model_copy(update={"run": _run(0)}))
    assert "warmup" not in {p.role for p in none}


def _run(warmup: int):
    return _spec("interleaved", 2).run.model_copy(update={"warmup": warmup})


def _measured(points):
    return [p for p in points if p.role != "warmup"]


def test_interleaved_runs_the_evidence_pass_between_clean_passes():
    spec = _spec("interleaved", 3)
    points = _measured(expand_points(spec, "separate"))
    per_pass = len(spec.filesystems) * 3  # 2 configurations x 3 numjobs values
    assert len(points) == 4 * per_pass
    passes = [points[i : i + per_pass] for i in range(0, len(points), per_pass)]
    assert [{p.role for p in chunk} for chunk in passes] == [
        {"clean"},
        {"clean"},
        {"evidence"},
        {"clean"},
    ]
    assert [p.repeat for p in passes[3]] == [2] * per_pass
    assert [p.seq for p in points] == list(range(2, len(points) + 2))


def test_sequential_puts_the_evidence_run_among_each_points_repetitions():
    points = _measured(expand_points(_spec("sequential", 2), "separate"))
    first = [(p.role, p.repeat) for p in points[:3]]
    assert first == [("clean", 0), ("evidence", 0), ("clean", 1)]
    assert len({p.key() for p in points[:3]}) == 1


def test_random_shuffles_the_same_runs():
    spec = _spec("random", 2)
    shuffled = expand_points(spec, "separate")
    assert Counter(p.role for p in shuffled) == {"clean": 12, "evidence": 6, "warmup": 2}
    assert expand_points(spec, "separate") == shuffled  # run.seed fixes the order


def test_without_a_mode_every_point_is_clean():
    points = _measured(expand_points(_spec("interleaved", 2)))
    assert {p.role for p in points} == {"clean"} and len(points) == 12
