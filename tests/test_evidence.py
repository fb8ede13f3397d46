"""Measurement and evidence apart: which rows headline figures and diagnosis read.

Data: real `fslab export`s (tests/data/):

- campaign_fsync_quick: ext4-fsync-storm --quick, numjobs 1..1024, 3 repetitions,
  collectors in every repetition, exported before points had roles (imports as
  'inline');
- campaign_fsync_separate: the same preset with 3 clean repetitions and one
  evidence run per sweep point (the default run model; recorded by
  tests/data/capture_separate.sh).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import load_campaign, point_key
from fslab.analyze.campaign.summary import summarize
from fslab.drive import rounds as adaptive
from fslab.report.model import build_report
from fslab.run.campaign import headline_role
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("db") / "r.db") as s:
        yield s


@pytest.fixture(scope="module")
def inline_id(store):
    return import_campaign(store, json.loads((DATA / "campaign_fsync_quick.json").read_text()))


@pytest.fixture(scope="module")
def separate_id(store):
    data = json.loads((DATA / "campaign_fsync_separate.json").read_text())
    return import_campaign(store, data)


# ------------------------------------------------------------------ inline (old) data


def test_an_inline_point_reads_its_evidence_from_the_repetition_nearest_the_median(
    store, inline_id
):
    data = load_campaign(store, inline_id)
    assert {p.role for p in data.points} == {"inline"}
    for config in data.configs():
        for key, values in data.values(data.headline, config).items():
            row = data.evidence_row(config, key)
            assert row is not None and row.role == "inline"
            middle = statistics.median(values)
            chosen = data.metrics[row.id][data.headline]
            assert all(abs(chosen - middle) <= abs(v - middle) for v in values)
            assert data.perturbation(config, key) is None  # never measured without instruments


def test_inline_repetitions_are_headline_repetitions(store, inline_id):
    data = load_campaign(store, inline_id)
    assert len(data.ok_points()) == len([p for p in data.points if p.status == "ok"])
    assert headline_role(store, inline_id) == "inline"  # --until-ci adds instrumented runs


def test_no_instrumented_run_means_no_evidence(store):
    cid = import_campaign(store, json.loads((DATA / "campaign_fsync_nocollect.json").read_text()))
    data = load_campaign(store, cid)
    key = point_key({"numjobs": 1024})
    row = data.evidence_row("ext4-default", key)
    # an old export: its runs count as inline, but none ran a collector
    assert row is not None and store.collectors(row.id) == {}
    assert data.evidence_row("ext4-default", point_key({"numjobs": 7})) is None


# ------------------------------------------------------------------ the default run model


def test_headline_statistics_never_read_the_evidence_run(store, separate_id):
    data = load_campaign(store, separate_id)
    evidence = [p for p in data.points if p.role == "evidence"]
    clean = [p for p in data.points if p.role == "clean"]
    keys = {(p.config, point_key(p.sweep)) for p in data.points}
    assert len(evidence) == len(keys) and len(clean) == 3 * len(keys)
    assert all(store.collectors(p.id) == {} for p in clean)
    assert all(store.collectors(p.id) for p in evidence)
    headline_ids = {p.id for p in data.ok_points()}
    assert headline_ids.isdisjoint(p.id for p in evidence)
    for config in data.configs():
        for values in data.values(data.headline, config).values():
            assert len(values) == 3
    rows = summarize(data.points, data.metrics)
    assert all(r.n_ok == 3 for r in rows)
    for row in rows:
        members = [
            p
            for p in data.points
            if p.config == row.config and p.sweep == row.sweep and p.role == "clean"
        ]
        assert row.median == statistics.median(data.metrics[p.id][data.headline] for p in members)


def test_the_evidence_run_is_read_and_its_perturbation_stated(store, separate_id):
    data = load_campaign(store, separate_id)
    for config in data.configs():
        for key in data.values(data.headline, config):
            row = data.evidence_row(config, key)
            assert row is not None and row.role == "evidence"
            perturbation = data.perturbation(config, key)
            assert perturbation is not None and perturbation.n_clean == 3
            evidence = data.metrics[row.id][data.headline]
            clean = statistics.median(data.values(data.headline, config)[key])
            assert perturbation.pct == pytest.approx(100 * (evidence / clean - 1))
            text = perturbation.describe()
            assert text.startswith("evidence run: ") and "clean, perturbation " in text


def test_the_report_reads_profiles_from_the_evidence_run(store, separate_id):
    report = build_report(store, separate_id)
    worst = report.profiles.worst
    assert worst is not None and worst.role == "clean"
    evidence = report.profiles.worst_evidence
    assert evidence is not None and evidence.point is not None
    assert evidence.point.role == "evidence" and evidence.point.sweep == worst.sweep
    assert report.profiles.oncpu.point == evidence.point
    assert report.contention.worst_evidence == evidence
    assert "perturbation" in evidence.statement
    assert report.campaign.collect_mode == "separate"
    assert report.campaign.timing is not None and report.campaign.timing.measure_s > 0
    row = next(
        r for r in report.results.rows if r.sweep == worst.sweep and r.config == worst.config
    )
    assert row.evidence is not None and row.perturbation_pct == pytest.approx(
        evidence.perturbation_pct
    )


def test_until_ci_adds_clean_repetitions_and_leaves_the_evidence_run(store, separate_id):
    data = load_campaign(store, separate_id)
    assert headline_role(store, separate_id) == "clean"
    planned = adaptive.plan_round(data, pct=0.001, cap=4, role="clean")
    keys = {(p.config, point_key(p.sweep)) for p in data.points}
    assert len(planned) == len(keys)  # one more run each, up to the cap of 4 headline runs
    assert {p.role for p in planned} == {"clean"} and {p.repeat for p in planned} == {3}
    states = adaptive.key_states(data)
    assert all(s.attempts == 3 and len(s.values) == 3 for s in states)
