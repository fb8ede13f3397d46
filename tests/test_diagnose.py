"""Diagnosis: rules evaluated against real recorded campaigns, and rule logic.

The recorded campaigns in tests/data are `fslab export`s of real quick runs of
both presets on this 2-CPU VM (ext4-fsync-storm: default vs 1 GiB journal at
16/256/1024 jobs; cached-write-ext4-vs-xfs). The diagnosis must follow the
evidence: changing one piece of evidence must change the verdict.
"""

from __future__ import annotations

import json

import pytest

from fslab.analyze.diagnose import (
    Condition,
    PointEvidence,
    diagnose_campaign,
    evaluate,
    frame_share,
    load_rules,
)
from fslab.analyze.profile import Profile
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR


def _import(tmp_path, name: str, mutate=None) -> tuple[Store, int]:
    data = json.loads((DATA_DIR / name).read_text())
    if mutate is not None:
        mutate(data)
    store = Store(tmp_path / "d.db")
    return store, import_campaign(store, data)


def _by_config(store: Store, cid: int):
    return {d.config: d for d in diagnose_campaign(store, cid)}


def test_rule_base_ships_every_mechanism_of_the_issue():
    ids = {rule.id for rule in load_rules()}
    assert ids >= {
        "jbd2-reserved-credits",
        "workqueue-serialisation",
        "percpu-counter-watermark",
        "jbd2-commit-wait",
        "spinlock-contention",
        "dirty-throttling",
        "device-bound",
    }
    for rule in load_rules():
        assert rule.explanation and rule.remedies and rule.references and rule.evidence


def test_fsync_storm_default_journal_is_reserved_credit_exhaustion(tmp_path):
    store, cid = _import(tmp_path, "diagnose_fsync_quick.json")
    by_config = _by_config(store, cid)
    default = by_config["ext4-default"]
    assert default.worst_point["label"] == "numjobs=1024"
    top = default.candidates[0]
    assert top.mechanism == "jbd2-reserved-credits"
    assert any("add_transaction_credits" in line for line in top.evidence_for)
    assert any("-J size=1024" in r for r in top.remedies)
    # the big journal's worst point waits on commits, not on credits
    big = by_config["ext4-journal1g"]
    assert big.candidates[0].mechanism == "jbd2-commit-wait"
    assert "jbd2-reserved-credits" not in {c.mechanism for c in big.candidates}
    for diagnosis in by_config.values():
        assert all(len(line) <= 80 for line in diagnosis.describe())
        json.dumps(diagnosis.to_dict())


def test_diagnosis_changes_when_the_evidence_changes(tmp_path):
    def mounted_dioread_lock(data):
        for point in data["points"]:
            point["facts"]["mount_options_effective"] += ",dioread_lock"

    store, cid = _import(tmp_path, "diagnose_fsync_quick.json", mounted_dioread_lock)
    default = _by_config(store, cid)["ext4-default"]
    credits = next(
        c for c in default.candidates + default.rejected if c.mechanism == "jbd2-reserved-credits"
    )
    assert any("dioread_lock" in line for line in credits.evidence_against)
    assert credits.score < 0.88


def test_cached_write_is_not_blamed_on_the_watermark_on_two_cpus(tmp_path):
    store, cid = _import(tmp_path, "diagnose_cached_write_quick.json")
    for diagnosis in diagnose_campaign(store, cid):
        mechanisms = {c.mechanism for c in diagnosis.candidates}
        assert "percpu-counter-watermark" not in mechanisms  # free space >> 1 MiB watermark
        if not diagnosis.candidates:
            assert diagnosis.fallback, "no rule matched: the largest profile change is shown"


# ---------------------------------------------------------------- rule logic
# Small evidence sets that exercise one rule each; the profiles are folded
# stacks written for the test (rule logic, not a parser of tool output).


def _evidence(metrics=None, facts=None, oncpu="", offcpu="") -> PointEvidence:
    return PointEvidence(
        point=None,
        metrics=metrics or {},
        facts=facts or {},
        profiles={
            "oncpu": Profile.from_folded(oncpu) if oncpu else None,
            "offcpu": Profile.from_folded(offcpu) if offcpu else None,
        },
    )


def _rule(rule_id: str):
    return next(r for r in load_rules() if r.id == rule_id)


def test_frame_share_respects_the_parent():
    profile = Profile.from_folded("dd;a;b;c 3\ndd;x;c 1\n")
    assert frame_share(profile, "c") == 1.0
    assert frame_share(profile, "c", under="a") == 0.75
    assert frame_share(None, "c") is None


def test_percpu_watermark_rule_needs_the_hot_chain_and_the_watermark():
    chain = "dd;vfs_write;ext4_da_write_begin;ext4_has_free_clusters;__percpu_counter_sum"
    worst = _evidence(
        metrics={"tp.writeback_queue.fs_free_space.count": 12},
        facts={"below_ext4_watermark": True},
        oncpu=f"{chain};find_next_bit 98\ndd;other 2\n",
    )
    best = _evidence(facts={"below_ext4_watermark": False}, oncpu="dd;other 100\n")
    assert evaluate(_rule("percpu-counter-watermark"), worst, best).score == 1.0
    above = _evidence(facts={"below_ext4_watermark": False}, oncpu="dd;other 100\n")
    assert evaluate(_rule("percpu-counter-watermark"), above, best).score == 0.0


def test_workqueue_serialisation_rule():
    busy = {
        "wq.ext4-rsv-conversion.peak_concurrency": 1,
        "wq.ext4-rsv-conversion.utilisation": 0.95,
        "wq.ext4-rsv-conversion.queue_delay_ns_p99": 5e8,
    }
    calm = {**busy, "wq.ext4-rsv-conversion.queue_delay_ns_p99": 1e6}
    rule = _rule("workqueue-serialisation")
    assert evaluate(rule, _evidence(busy), _evidence(calm)).score == 1.0
    idle = {**busy, "wq.ext4-rsv-conversion.utilisation": 0.1}
    assert evaluate(rule, _evidence(idle), _evidence(calm)).score < 0.5


@pytest.mark.parametrize(
    ("rule_id", "worst"),
    [
        ("spinlock-contention", {"oncpu": "fio;a;native_queued_spin_lock_slowpath 60\nfio;b 40"}),
        ("dirty-throttling", {"offcpu": "dd;[D];vfs_write;balance_dirty_pages 50\ndd;[S];x 50"}),
        ("device-bound", {"offcpu": "fio;[D];submit_bio_wait;io_schedule 80\nfio;[S];x 20"}),
        ("jbd2-commit-wait", {"offcpu": "fio;[D];ext4_sync_file;jbd2_log_wait_commit 1"}),
    ],
)
def test_each_rule_matches_its_own_evidence_only(rule_id, worst):
    matched = _evidence(**worst)
    nothing = _evidence(oncpu="fio;idle 1\n", offcpu="fio;[S];poll 1\n")
    metrics = {"blk.busy_pct": 99.0} if rule_id == "device-bound" else {}
    matched = _evidence(metrics=metrics, **worst)
    assert evaluate(_rule(rule_id), matched, nothing).score >= 0.5
    assert evaluate(_rule(rule_id), nothing, nothing).score < 0.5


def test_bad_rule_entry_is_reported():
    from fslab.analyze.diagnose import parse_rule

    with pytest.raises(ValueError, match="bad evidence entry"):
        parse_rule(
            {
                "id": "x",
                "title": "x",
                "explanation": "x",
                "evidence": [{"kind": "metric", "what": "w", "nonsense": 1}],
            }
        )
    assert Condition(kind="metric", what="w").op == ">="


def test_single_point_is_judged_without_a_baseline(tmp_path):
    """A real 2048-job point per configuration: no best point to compare with."""
    store, cid = _import(tmp_path, "diagnose_fsync_2048_single.json")
    default = _by_config(store, cid)["ext4-default"]
    assert "single point" in default.note
    # change and cliff evidence is not judged, so it neither helps nor hurts
    assert default.candidates[0].mechanism == "jbd2-reserved-credits"
    assert default.candidates[0].score == 1.0
    assert not any("not judged" in line for c in default.candidates for line in c.evidence_against)
