"""Diagnosis: differential scoring, counterfactuals and ruled-out hypotheses on real campaigns.

The campaigns are `fslab export`s of real runs on this kind of 2-CPU VM:
tests/data/diagnose_*.json (quick runs of both presets) and the validation
corpus in tests/data/corpus (recorded by its record.sh, each case's true
mechanism in its manifest.json). A diagnosis must follow the evidence:
changing one piece of real evidence must change the verdict.
"""

from __future__ import annotations

import copy
import json

import pytest
from bench.diagnosis_accuracy import CORPUS, diagnose_file, manifest

from fslab.diagnose.attribution import Shift, classify
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.diagnose.mechanisms import Frame, load_rules, parse_rule
from fslab.report.diagnosis_text import describe_diagnosis, describe_hypothesis
from fslab.stacks.profile import Profile
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR

RAW = {}


def _raw(path) -> dict:
    if path not in RAW:
        RAW[path] = json.loads(path.read_text())
    return copy.deepcopy(RAW[path])


def _diagnose(tmp_path, path, mutate=None):
    data = _raw(path)
    if mutate is not None:
        mutate(data)
    store = Store(tmp_path / f"{path.stem}.db")
    return {d.config: d for d in diagnose_campaign(store, import_campaign(store, data))}


# ---------------------------------------------------------------- the corpus


@pytest.mark.parametrize(
    "case", manifest(), ids=lambda c: f"{c['file'].removesuffix('.json')}:{c['config']}"
)
def test_corpus_case_is_ranked_right(tmp_path, case):
    """The true mechanism of every recorded case is ranked first (or: nothing to explain)."""
    diagnosis = _diagnose(tmp_path, CORPUS / case["file"])[case["config"]]
    text = "\n".join(describe_diagnosis(diagnosis))
    if case["truth"] == "none":
        assert diagnosis.top is None, text
        assert "no falloff: nothing to explain" in text
    elif case["truth"] == "unknown":  # outside the rule base: no rule first, the right frames
        assert diagnosis.top is None and diagnosis.unknown is not None, text
        grown = [f.chain[-1] if f.chain else f.frame for f in diagnosis.unknown.frames[:2]]
        assert set(grown) & set(case["frames"]), (grown, text)
        assert "no mechanism in the rule base explains the change" in text
    else:
        assert diagnosis.top == case["truth"], text
        assert diagnosis.margin is not None and diagnosis.margin > 0
    assert all(len(line) <= 80 for line in describe_diagnosis(diagnosis))
    json.dumps(diagnosis.to_dict())


@pytest.mark.parametrize(
    "case",
    [c for c in manifest() if c.get("frames") and c["truth"] not in ("none", "unknown")],
    ids=lambda c: f"{c['file'].removesuffix('.json')}:{c['config']}",
)
def test_a_case_whose_rule_is_held_out_is_the_honest_unknown(tmp_path, case):
    """Its mechanism taken out of the rule base, a recorded case is outside it: no other
    rule may rank first, and the frames that grew most name the mechanism."""
    found = diagnose_file(CORPUS / case["file"], tmp_path, held_out=case["truth"])
    diagnosis = found[case["config"]]
    text = "\n".join(describe_diagnosis(diagnosis))
    assert diagnosis.top is None and diagnosis.unknown is not None, text
    grown = [f.chain[-1] if f.chain else f.frame for f in diagnosis.unknown.frames[:2]]
    assert set(grown) & set(case["frames"]), (grown, text)


def test_corpus_manifest_names_known_mechanisms_and_files():
    ids = {rule.id for rule in load_rules()} | {"none", "unknown"}
    for case in manifest():
        assert case["truth"] in ids and (CORPUS / case["file"]).is_file() and case["why"]


# ---------------------------------------------------------------- the fsync storm


JOURNAL = CORPUS / "journal.json"


def test_credit_exhaustion_is_confirmed_by_the_big_journal(tmp_path):
    default = _diagnose(tmp_path, JOURNAL)["ext4-default"]
    top = default.candidates[0]
    assert top.mechanism == "jbd2-reserved-credits"
    (cf,) = top.counterfactuals
    assert cf.config == "ext4-journal1g" and cf.verdict == "confirms"
    assert cf.theirs == 0 and cf.gain_pct > 15
    assert any("-J size=1024" in r for r in top.remedies)


def test_workqueue_hypothesis_is_ruled_out_with_numbers(tmp_path):
    default = _diagnose(tmp_path, JOURNAL)["ext4-default"]
    ruled = {c.mechanism: c for c in default.ruled_out}
    assert "workqueue-serialisation" in ruled and "jbd2-commit-wait" in ruled
    wq = ruled["workqueue-serialisation"]
    assert wq.score == 0 and "ext4-rsv-conversion" in wq.ruled_out
    assert "busy 31% of the time" in wq.ruled_out
    text = "\n".join(describe_hypothesis(default, "workqueue-serialisation"))
    assert "verdict: ruled out" in text and "queue p99" in text
    commit = ruled["jbd2-commit-wait"]  # every ext4 fsync run waits on commits
    assert commit.shares["offcpu"][0] > commit.shares["offcpu"][1]  # and it fell
    assert commit.score == 0


def test_evidence_that_holds_equally_at_the_good_point_explains_nothing(tmp_path):
    """The bad point's profiles copied to the good point: no change is left to explain."""

    def same_profiles(data):
        points = data["points"]
        bad = next(
            p for p in points if p["config"] == "ext4-default" and p["sweep"]["numjobs"] == 768
        )
        for p in points:
            if p["config"] == "ext4-default" and p["sweep"]["numjobs"] == 256:
                for name in ("profile.offcpu.folded", "profile.oncpu.folded"):
                    p["artifacts"][name] = bad["artifacts"][name]
                for name in ("offcpu.threads_mean", "offcpu.blocked_threads_mean"):
                    p["metrics"][name] = bad["metrics"][name]

    default = _diagnose(tmp_path, JOURNAL, same_profiles)["ext4-default"]
    credits = default.candidate("jbd2-reserved-credits")
    assert credits.explained == 0 and credits.score == 0
    assert default.top != "jbd2-reserved-credits"


def _big_journal_waits_too(data, *, holds_up: bool) -> None:
    """journal1g given the default's profiles at the bad point; with holds_up, its IOPS
    at every point made its IOPS at the bad point (it does not fall off itself)."""
    points = data["points"]
    ours = {
        p["repeat"]: p
        for p in points
        if p["config"] == "ext4-default" and p["sweep"]["numjobs"] == 768
    }
    theirs = [p for p in points if p["config"] == "ext4-journal1g"]
    at_bad = [p["metrics"]["fio.write.iops"] for p in theirs if p["sweep"]["numjobs"] == 768]
    for p in theirs:
        if p["sweep"]["numjobs"] == 768:
            for name in ("profile.offcpu.folded", "profile.oncpu.folded"):
                p["artifacts"][name] = ours[p["repeat"]]["artifacts"][name]
        elif holds_up and "fio.write.iops" in p["metrics"]:
            p["metrics"]["fio.write.iops"] = at_bad[p["repeat"] % len(at_bad)]


def test_a_config_with_the_same_signal_weakens_the_mechanism(tmp_path):
    """journal1g, holding up, with the default's profiles at the bad point: no longer a
    counterfactual that confirms, one that weakens (the score halved)."""
    plain = _diagnose(tmp_path, JOURNAL)["ext4-default"].candidate("jbd2-reserved-credits")
    weakened = _diagnose(tmp_path, JOURNAL, lambda d: _big_journal_waits_too(d, holds_up=True))
    credits = weakened["ext4-default"].candidate("jbd2-reserved-credits")
    assert [c.verdict for c in credits.counterfactuals] == ["weakens"]
    assert credits.score == pytest.approx(plain.score / 2, rel=0.01)


def _as_another_filesystem(data) -> None:
    for point in data["points"]:
        if point["config"] == "ext4-journal1g":
            point["fs_type"] = "xfs"


def test_another_filesystem_that_falls_off_too_with_the_signal_is_not_against(tmp_path):
    """The same signal in a configuration of another filesystem that itself fell off
    between the two points, only less far (XFS beside ext4, both writing into holes): it
    is faster or slower for reasons of its own, so neutral, not weakening. The same
    filesystem configured otherwise, faster at the bad point with as much of the signal,
    weakens it though it fell off too (XFS with wbt off beside XFS with it on)."""

    def fell_on(fs_type: str):
        def change(data) -> None:
            _big_journal_waits_too(data, holds_up=False)
            if fs_type != "ext4":
                _as_another_filesystem(data)

        (tmp_path / fs_type).mkdir()
        return _diagnose(tmp_path / fs_type, JOURNAL, change)["ext4-default"]

    plain = _diagnose(tmp_path, JOURNAL)["ext4-default"].candidate("jbd2-reserved-credits")
    other = fell_on("xfs").candidate("jbd2-reserved-credits")
    assert [c.verdict for c in other.counterfactuals] == ["neutral"]
    assert other.score == pytest.approx(plain.score, rel=0.01)
    same = fell_on("ext4").candidate("jbd2-reserved-credits")
    assert [c.verdict for c in same.counterfactuals] == ["weakens"]
    assert same.score == pytest.approx(plain.score / 2, rel=0.01)


def test_dioread_lock_argues_against_credit_exhaustion(tmp_path):
    def mounted_dioread_lock(data):
        for point in data["points"]:
            point["facts"]["mount_options_effective"] += ",dioread_lock"

    plain = _diagnose(tmp_path, JOURNAL)["ext4-default"].candidate("jbd2-reserved-credits")
    changed = _diagnose(tmp_path, JOURNAL, mounted_dioread_lock)["ext4-default"]
    credits = changed.candidate("jbd2-reserved-credits")
    assert credits.against_factor == 0.5 and credits.score == pytest.approx(plain.score / 2)
    assert any("dioread_lock" in f.text for f in credits.against if f.holds)


def test_quick_preset_recording_ranks_credits_first(tmp_path):
    """The earlier quick recording of the preset (16/256/1024 jobs) agrees."""
    by_config = _diagnose(tmp_path, DATA_DIR / "diagnose_fsync_quick.json")
    assert by_config["ext4-default"].top == "jbd2-reserved-credits"
    assert by_config["ext4-journal1g"].top != "jbd2-reserved-credits"


def test_single_point_has_nothing_to_explain(tmp_path):
    default = _diagnose(tmp_path, DATA_DIR / "diagnose_fsync_2048_single.json")["ext4-default"]
    assert default.falloff.kind == "single" and default.top is None
    assert "no falloff: nothing to explain" in "\n".join(describe_diagnosis(default))


def test_cached_write_is_not_blamed_on_the_watermark_on_two_cpus(tmp_path):
    for diagnosis in _diagnose(tmp_path, DATA_DIR / "diagnose_cached_write_quick.json").values():
        assert diagnosis.top != "percpu-counter-watermark"  # free space >> 1 MiB watermark
        watermark = diagnosis.candidate("percpu-counter-watermark")
        if watermark is not None:
            assert watermark.ruled_out and "below_ext4_watermark" in watermark.ruled_out
        if diagnosis.falloff.has_falloff and diagnosis.top is None:
            assert diagnosis.unknown, "no rule matched: the largest changes are shown"


# ---------------------------------------------------------------- the parts


def test_rule_base_ships_every_mechanism_of_the_issue():
    ids = {rule.id for rule in load_rules()}
    assert ids >= {
        "jbd2-reserved-credits",
        "workqueue-serialisation",
        "percpu-counter-watermark",
        "jbd2-commit-wait",
        "lock-contention",
        "dirty-throttling",
        "device-bound",
        "writeback-throttling",
        "btrfs-metadata-reservation",
        "first-write-allocation",
        "xfs-log-force",
        "btrfs-log-tree",
    }
    for rule in load_rules():
        assert rule.explanation and rule.remedies and rule.references
        assert rule.offcpu or rule.oncpu, rule.id
        assert set(rule.alternatives) <= ids


def test_classes_are_disjoint_and_innermost_frame_wins():
    # folded stacks written for the test: the classing rule, not a tool's output
    profile = Profile.from_folded("fio;[D];a;start;credits 6\nfio;[D];a;commit 3\nfio;[S];poll 1\n")
    classes = classify(profile, [Frame("start"), Frame("credits"), Frame("commit")])
    assert classes == {"credits": 0.6, "commit": 0.3, "leaf:poll": 0.1}
    shift = Shift("offcpu", {"commit": 0.9, "leaf:poll": 0.1}, classes)
    assert shift.change == pytest.approx(0.6)
    assert shift.explained([Frame("credits")]) == pytest.approx(1.0)
    assert shift.explained([Frame("commit")]) == 0.0


def test_a_generic_wait_under_a_throttle_is_not_the_device_s():
    """io_schedule under rq_qos_wait is wbt holding a writer back: device-bound's
    io_schedule does not count it; the same wait elsewhere it does."""
    # folded stacks written for the test: the classing rule, not a tool's output
    profile = Profile.from_folded(
        "fio;[D];fsync;wbt_wait;rq_qos_wait;io_schedule 7\nfio;[D];read;io_schedule 3\n"
    )
    (device,) = [r for r in load_rules() if r.id == "device-bound"]
    io_schedule = next(f for f in device.offcpu if f.frame == "io_schedule")
    assert io_schedule.not_under == "rq_qos_wait"
    classes = classify(profile, [io_schedule])
    assert classes == {io_schedule.key: 0.3, "leaf:io_schedule": 0.7}


def test_bad_rule_entry_is_reported():
    with pytest.raises(ValueError, match="bad entry"):
        parse_rule({"id": "x", "title": "x", "explanation": "x", "metrics": [{"nonsense": 1}]})
    with pytest.raises(ValueError, match="frame"):
        parse_rule({"id": "x", "title": "x", "explanation": "x", "signature": {"offcpu": [3]}})


# ---------------------------------------------------------------- in guests


GUEST_CACHED = DATA_DIR / "guest_campaign_cached_write_1728.json"  # tests/data/guest_capture.sh


def test_cached_write_at_1728_possible_cpus_names_the_watermark_first(tmp_path):
    """The second report on its own terms: in 6.1 guests with 2 vCPUs and possible_cpus
    1728 (watermark 864 MiB) or 2 (1 MiB), ext4 left with 400 MiB free falls off only at
    1728, and the per-CPU counter sums under ext4_has_free_clusters explain it; XFS has
    no such watermark."""
    by_config = _diagnose(tmp_path, GUEST_CACHED)
    ext4, xfs = by_config["ext4"], by_config["xfs"]
    text = "\n".join(describe_diagnosis(ext4))
    assert ext4.top == "percpu-counter-watermark", text
    assert ext4.margin is not None and ext4.margin > 0
    assert dict(ext4.falloff.worst.key)["possible_cpus"] == 1728, text
    assert xfs.top != "percpu-counter-watermark", "\n".join(describe_diagnosis(xfs))
    watermark = xfs.candidate("percpu-counter-watermark")
    assert watermark is None or watermark.ruled_out


def test_guest_campaign_report_and_comparison_name_the_guests(tmp_path):
    """Reports and `compare --by possible_cpus` say what each point ran in, TCG flagged."""
    from fslab.analyze.campaign.dataset import load_campaign
    from fslab.analyze.versus.within import axis_comparisons
    from fslab.report.model import build_report
    from fslab.report.text import render_text

    store = Store(tmp_path / "guest.db")
    campaign_id = import_campaign(store, _raw(GUEST_CACHED))
    text = render_text(build_report(store, campaign_id))
    assert "guest     6.1.0-57-amd64, nr_cpu_ids 2, 2 online, tcg" in text
    assert "6.1.0-57-amd64, nr_cpu_ids 1728, 2 online, tcg" in text
    assert "TCG: emulated CPU; compare only within this run" in text
    (comparison,) = axis_comparisons(load_campaign(store, campaign_id), "possible_cpus")
    assert (comparison.baseline, comparison.candidate) == ("possible_cpus=2", "possible_cpus=1728")
    details = comparison.details["possible_cpus=1728"]
    assert details == "6.1.0-57-amd64, nr_cpu_ids 1728, 2 online, tcg"
    near_full = next(
        r
        for r in comparison.table.rows
        if dict(r.point) == {"config": "ext4", "fill_leave_free": "400MiB"}
    )
    assert near_full.ratio < 0.7  # below the watermark at 1728 only


def test_a_throttled_volume_is_counted_as_its_limiter_counts(tmp_path):
    """On the 1500-IOPS fsync storm the throttle's own counters put every point at the
    limit (device-bound first, the limit named); counted by completed requests alone, as
    before, the device looks a third used and credits take first place."""
    throttled = CORPUS / "throttled.json"
    d = _diagnose(tmp_path, throttled)["ext4-1500iops"]
    assert d.top == "device-bound" and d.ceiling is not None
    flat = " ".join(" ".join(describe_diagnosis(d)).split())
    assert "or more of the 1500 IOPS limit at every point" in flat
    assert "ranked by the device's limit" in flat

    def completions_only(data):
        for point in data["points"]:
            for name in ("throttle.write_ios", "blk.write_merges"):
                point.get("metrics", {}).pop(name, None)

    undercounted = _diagnose(tmp_path / "u", throttled, completions_only)["ext4-1500iops"]
    assert undercounted.ceiling is None and undercounted.top == "jbd2-reserved-credits"
