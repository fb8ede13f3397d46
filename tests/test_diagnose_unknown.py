"""The honest unknown, drafted rules and each filesystem's own words, on real recordings.

tests/data/diagnose_cached_write_quick.json is a real quick run of the
cached-write preset on a 2-CPU VM: on two CPUs no rule of the base explains
its falloffs (the watermark needs many CPUs), so it is the recorded case of a
change outside the rule base.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from typer.testing import CliRunner

from fslab.cli.common import app
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.diagnose.mechanisms import load_rules, parse_rule
from fslab.diagnose.unknown import UNEXPLAINED, deciding_subsystem, draft_rule, subsystem_of
from fslab.report.diagnosis_text import describe_diagnosis
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR

CACHED = DATA_DIR / "diagnose_cached_write_quick.json"


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    db = tmp_path_factory.mktemp("unknown") / "cached.db"
    store = Store(db)

    campaign = import_campaign(store, json.loads(CACHED.read_text()))
    return db, {d.config: d for d in diagnose_campaign(store, campaign)}


def test_unknown_names_the_grown_frames_with_chain_subsystem_and_the_others(cached):
    _, diagnoses = cached
    ext4 = diagnoses["ext4"]
    assert ext4.falloff.has_falloff and ext4.top is None
    unknown = ext4.unknown
    assert unknown is not None and unknown.explained < UNEXPLAINED
    first = unknown.frames[0]
    # the reserved-handle conversion worker's CPU grew most, reached from its kworker
    assert first.frame == "ext4_end_io_rsv_work" and first.kind == "oncpu"
    assert first.chain[-2:] == ("process_one_work", "ext4_end_io_rsv_work")
    assert first.subsystem.startswith("fs/ext4")
    assert first.bad > first.good
    assert set(first.elsewhere) == {"xfs"}  # the campaign's other configuration, same points
    text = " ".join(" ".join(describe_diagnosis(ext4)).split())  # unwrapped
    assert "no mechanism in the rule base explains the change" in text
    assert "reached by worker_thread > process_one_work > ext4_end_io_rsv_work" in text
    # the campaign has an XFS configuration: it already answers the filesystem question
    assert "to test it, add: nothing: xfs in this campaign shows no such growth: ext4's own" in text
    assert all(len(line) <= 80 for line in describe_diagnosis(ext4))
    # frames are placed by the nearest caller that has a known prefix; the scheduler's own
    assert any(f.subsystem.startswith("kernel/sched") for f in unknown.frames)


def test_subsystem_of_a_static_helper_is_its_callers():
    # btrfs's metadata reservation sleeps in a static helper with no btrfs_ prefix
    chain = (
        "btrfs_sync_file",
        "start_transaction",
        "btrfs_reserve_metadata_bytes",
        "__reserve_bytes",
    )
    sub = subsystem_of(chain)
    assert sub is not None and sub.path == "fs/btrfs"
    assert subsystem_of(("xlog_grant_head_wait",)).path == "fs/xfs"
    assert subsystem_of(("memcpy_orig",)) is None


def test_the_buffer_cache_s_test_is_its_caller_s():
    """A metadata block lookup is placed in fs/buffer.c, but what would test it is the
    filesystem code that reads the blocks, not the page cache's direct = 1."""
    chain = (
        "ext4_mkdir",
        "__ext4_new_inode",
        "find_inode_bit",
        "recently_deleted",
        "find_get_block_common",
    )
    assert subsystem_of(chain).path == "fs/buffer.c"
    assert deciding_subsystem(chain).path == "fs/ext4"
    assert deciding_subsystem(("filemap_fault", "folio_wait_bit")).path == "mm/filemap.c"
    assert deciding_subsystem(("memcpy_orig",)) is None


@pytest.mark.parametrize(
    ("case", "config", "frame", "chain_end", "setting"),
    [
        # ext4 without a journal re-making 20000 deleted directories: the inode
        # allocator steps over recently deleted inodes, reading their inode blocks
        (
            "recentdel",
            "ext4-nojournal",
            "recently_deleted",
            ("recently_deleted", "find_get_block_common"),
            "here: mkfs -O ^has_journal",
        ),
        # ext4 without its directory index: every create scans the directory
        (
            "lineardir",
            "ext4-nodirindex",
            "__ext4_check_dir_entry",
            ("ext4_find_dest_de", "__ext4_check_dir_entry"),
            "here: mkfs -O ^dir_index",
        ),
    ],
)
def test_a_mechanism_outside_the_base_points_at_the_setting_that_differs(
    tmp_path, case, config, frame, chain_end, setting
):
    """Two recorded mechanisms no rule holds: the answer names the frames that grew,
    with their chains, and the campaign's same filesystem made with mkfs's defaults,
    which holds up with less of the growth, as the counterfactual already run, with
    the setting that differs; never the page cache's direct = 1 nor another type."""
    from bench.diagnosis_accuracy import CORPUS

    store = Store(tmp_path / f"{case}.db")
    campaign = import_campaign(store, json.loads((CORPUS / f"{case}.json").read_text()))
    diagnosis = {d.config: d for d in diagnose_campaign(store, campaign)}[config]
    assert diagnosis.falloff.has_falloff and diagnosis.top is None
    unknown = diagnosis.unknown
    assert unknown is not None and unknown.explained < UNEXPLAINED
    assert frame in [f.frame for f in unknown.frames[:2]]
    grown = next(f for f in unknown.frames if f.chain[-2:] == chain_end)
    good, bad = grown.elsewhere["ext4"]  # the indexed or journalled ext4: less of it
    assert bad - good <= (grown.bad - grown.good) / 2
    test = unknown.test
    assert test.startswith("nothing: ext4 in this campaign, the same filesystem made otherwise")
    assert "holds up at the bad point with less of this growth" in test
    assert setting in test and "direct = 1" not in test


def test_a_buffer_cache_lookup_is_placed_in_fs_buffer(tmp_path):
    from bench.diagnosis_accuracy import CORPUS

    store = Store(tmp_path / "recentdel.db")
    campaign = import_campaign(store, json.loads((CORPUS / "recentdel.json").read_text()))
    nojournal = {d.config: d for d in diagnose_campaign(store, campaign)}["ext4-nojournal"]
    lookup = next(f for f in nojournal.unknown.frames if f.frame == "find_get_block_common")
    assert lookup.subsystem.startswith("fs/buffer.c")


def test_draft_rule_is_a_rule_the_base_can_load(cached):
    _, diagnoses = cached
    ext4 = diagnoses["ext4"]
    text = draft_rule("ext4-rsv-cpu", ext4.unknown, "ext4")
    rule = parse_rule(tomllib.loads(text))
    assert rule.id == "ext4-rsv-cpu" and rule.fs_types == ("ext4",)
    assert [f.frame for f in rule.oncpu] == [f.chain[-1] for f in ext4.unknown.frames]
    assert "ext4_end_io_rsv_work: 0% -> 11% of oncpu [fs/ext4 (ext4)]" in text


def test_draft_rule_cli(cached):
    db, _ = cached
    runner = CliRunner()
    done = runner.invoke(
        app, ["diagnose", "--db", str(db), "--draft-rule", "xfs-sched", "--config", "xfs"]
    )
    assert done.exit_code == 0, done.output
    assert parse_rule(tomllib.loads(done.output)).fs_types == ("xfs",)
    bad = runner.invoke(app, ["diagnose", "--db", str(db), "--draft-rule", "Bad Name"])
    assert bad.exit_code == 2 and "--draft-rule" in bad.output and "Traceback" not in bad.output
    missing = runner.invoke(
        app, ["diagnose", "--db", str(db), "--draft-rule", "x", "--config", "nope"]
    )
    assert missing.exit_code == 2 and "--config" in missing.output


OTHER_FS_OBJECTS = re.compile(r"ext4-rsv|rsv-conversion|jbd2|ext4_|xfs-buf|xlog|btrfs_")


@pytest.mark.parametrize("fs_type", ["ext4", "xfs", "btrfs"])
def test_every_rule_speaks_of_its_filesystems_own_objects(fs_type):
    """What a rule says on a filesystem (short, explanation) names no other filesystem's
    objects: ext4's workqueue is not XFS's."""
    own = {
        "ext4": ("ext4-rsv", "rsv-conversion", "jbd2", "ext4_"),
        "xfs": ("xfs-buf", "xlog"),
        "btrfs": ("btrfs_",),
    }
    for rule in load_rules():
        if not rule.applies_to(fs_type):
            continue
        words = rule.for_fs(fs_type)
        for text in (words.short, words.explanation):
            found = {m for m in OTHER_FS_OBJECTS.findall(text) if not m.startswith(own[fs_type])}
            assert not found, f"{rule.id} on {fs_type}: {found} in {text!r}"


def test_bad_text_table_is_reported():
    with pytest.raises(ValueError, match=r"text\.xfs"):
        parse_rule({"id": "x", "title": "x", "explanation": "x", "text": {"xfs": {"frames": []}}})


def test_what_else_grew_leaves_out_the_first_rule_s_frames_and_fslab_itself(tmp_path):
    """First writes into a sparse file on ext4: the allocation rule ranks first but
    explains under 40% (the rest is the writer waiting for its I/O), so what else grew
    is listed; neither the rule's own frames nor fslab's own CPU are among them."""
    from bench.diagnosis_accuracy import CORPUS

    store = Store(tmp_path / "firstwrite.db")
    campaign = import_campaign(store, json.loads((CORPUS / "firstwrite.json").read_text()))
    ext4 = {d.config: d for d in diagnose_campaign(store, campaign)}["ext4"]
    assert ext4.top == "first-write-allocation" and ext4.unknown is not None
    rule = next(r for r in load_rules() if r.id == "first-write-allocation")
    own = {f.key for f in rule.oncpu} | {"leaf:fslab"}
    assert ext4.unknown.frames and not {f.key for f in ext4.unknown.frames} & own
    first = ext4.unknown.frames[0]
    assert first.frame == "read_events"
    # ext4-overwrite, the same file written in full first, shows no such growth: it
    # answers the test before another filesystem type does (first writes grow it)
    assert ext4.unknown.test.startswith("nothing: ext4-overwrite in this campaign")
    assert "holds up at the bad point" in ext4.unknown.test
    assert "(setup file file1 4GiB write; here: nothing more)" in ext4.unknown.test
