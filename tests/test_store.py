"""The results database: schema, round trip, versioning, concurrent readers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fslab.errors import FslabError
from fslab.store.db import SCHEMA_VERSION, PlannedPoint, PointOutcome, Store

DATA = Path(__file__).parent / "data"


def _campaign(store: Store, n_points: int = 3) -> int:
    return store.create_campaign(
        name="t",
        spec={"name": "t"},
        spec_toml='name = "t"',
        overrides={},
        host={"kernel_release": "6.18"},
        device={"kind": "ram"},
        fslab_version="0",
        points=[PlannedPoint(i, "ext4", "ext4", {"numjobs": i + 1}, 0) for i in range(n_points)],
    )


def test_round_trip(tmp_path):
    with Store(tmp_path / "r.db") as store:
        cid = _campaign(store)
        points = store.points(cid)
        assert [p.status for p in points] == ["pending"] * 3
        outcome = PointOutcome(
            status="ok",
            metrics={"fio.write.iops": 1234.5},
            artifacts={"fio.json": "{}"},
            commands=[(["mkfs.ext4", "/dev/loop0"], 0, 0.5)],
            collectors={"perf": ("unavailable", "no perf")},
            facts={"mount_options_effective": "rw,noatime"},
        )
        store.save_outcome(points[0].id, outcome)
        store.save_outcome(points[0].id, outcome)  # replacing is idempotent
        assert store.metrics(cid) == {points[0].id: {"fio.write.iops": 1234.5}}
        assert store.artifact(points[0].id, "fio.json") == "{}"
        assert store.commands(points[0].id) == [["mkfs.ext4", "/dev/loop0"]]
        assert store.collectors(points[0].id) == {"perf": ("unavailable", "no perf")}
        assert store.points(cid)[0].facts["mount_options_effective"] == "rw,noatime"
        store.set_campaign_status(cid, "complete")
        assert store.campaign(cid).ended_at is not None
        assert store.latest_campaign_id() == cid
        assert store.integrity_ok()


def test_missing_campaign_is_a_clear_error(tmp_path):
    with Store(tmp_path / "r.db") as store:
        with pytest.raises(FslabError, match="no campaign 7"):
            store.campaign(7)
        with pytest.raises(FslabError, match="no campaigns"):
            store.latest_campaign_id()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "r.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(FslabError, match="newer than this fslab"):
        Store(path)


def test_reader_while_writer_holds_the_database(tmp_path):
    path = tmp_path / "r.db"
    writer = Store(path)
    cid = _campaign(writer)
    reader = Store(path)
    writer._conn.execute("BEGIN IMMEDIATE")  # a campaign mid-write
    assert len(reader.points(cid)) == 3  # WAL: readers are not blocked
    writer._conn.execute("COMMIT")
    writer.close()
    reader.close()


def test_export_import_round_trip(tmp_path):
    from fslab.store.exchange import export_campaign, import_campaign

    with Store(tmp_path / "a.db") as source:
        cid = _campaign(source)
        first = source.points(cid)[0]
        source.save_outcome(
            first.id,
            PointOutcome(
                status="ok",
                metrics={"fio.write.iops": 10.0},
                artifacts={"fio.json": "{}"},
                commands=[(["fio", "--name=x"], 0, 2.5)],
                collectors={"perf": ("ok", "")},
                facts={"k": "v"},
            ),
        )
        source.set_campaign_status(cid, "interrupted")
        exported = export_campaign(source, cid)
    with Store(tmp_path / "b.db") as target:
        target_first = _campaign(target, 1)  # ids differ between databases
        new_id = import_campaign(target, exported)
        assert new_id != target_first
        assert export_campaign(target, new_id)["points"] == exported["points"]
        imported = target.campaign(new_id)
        assert imported.status == "interrupted"
        assert imported.overrides["imported_from"] == cid
        assert imported.started_at == exported["campaign"]["started_at"]


def test_import_refuses_other_json(tmp_path):
    from fslab.errors import UsageError
    from fslab.store.exchange import import_campaign

    with Store(tmp_path / "b.db") as target:
        with pytest.raises(UsageError, match="not an fslab campaign export"):
            import_campaign(target, {"hello": 1})
        with pytest.raises(UsageError, match="malformed"):
            import_campaign(target, {"format": "fslab-campaign", "version": 1})


def test_a_running_campaign_nobody_runs_reads_as_interrupted(tmp_path):
    from fslab.store.lock import campaign_lock

    with Store(tmp_path / "r.db") as store:
        cid = _campaign(store)
        assert store.campaign(cid).status == "interrupted"  # stored 'running', no runner
        with campaign_lock(store.path, cid):
            assert store.campaign(cid).status == "running"
            assert [c.status for c in store.campaigns()] == ["running"]


def test_a_version_1_database_is_migrated_and_its_points_read_as_inline(tmp_path):
    """tests/data/store_schema_v1.sql is the schema fslab shipped before roles."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript((DATA / "store_schema_v1.sql").read_text())
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        conn.execute(
            "INSERT INTO campaigns (name, status, spec_json, spec_toml, overrides_json,"
            " host_json, fslab_version, started_at)"
            " VALUES ('old', 'complete', '{}', '', '{}', '{}', '0.1.0', '2026-01-01')"
        )
        conn.execute(
            "INSERT INTO points (campaign_id, seq, config, fs_type, sweep_json, repeat, status)"
            " VALUES (1, 0, 'ext4', 'ext4', '{\"numjobs\": 1}', 0, 'ok')"
        )
    with Store(path) as store:
        (point,) = store.points(1)
        assert point.role == "inline"
        version = store._conn.execute("SELECT value FROM meta WHERE key='schema_version'")
        assert version.fetchone()[0] == str(SCHEMA_VERSION)
        (new,) = store.add_points(1, [PlannedPoint(0, "ext4", "ext4", {"numjobs": 1}, 0)])
        assert new.role == "clean"
    with Store(path) as store:  # opening a migrated database again changes nothing
        assert [p.role for p in store.points(1)] == ["inline", "clean"]


def _roles_campaign(store: Store, *roles: str) -> int:
    return store.create_campaign(
        name="t",
        spec={},
        spec_toml="",
        overrides={"collect": "separate"},
        host={},
        device=None,
        fslab_version="0",
        points=[PlannedPoint(i, "a", "ext4", {}, 0, r) for i, r in enumerate(roles)],  # type: ignore[arg-type]
    )


def test_roles_are_stored_and_checked(tmp_path):
    with Store(tmp_path / "r.db") as store:
        cid = _roles_campaign(store, "clean", "evidence", "inline")
        assert [p.role for p in store.points(cid)] == ["clean", "evidence", "inline"]
        with pytest.raises(sqlite3.IntegrityError):
            store.add_points(cid, [PlannedPoint(0, "a", "ext4", {}, 0, "bogus")])  # type: ignore[arg-type]


def test_post_processing_results_are_added_to_a_saved_point(tmp_path):
    with Store(tmp_path / "r.db") as store:
        cid = _campaign(store, 1)
        (point,) = store.points(cid)
        store.save_outcome(
            point.id,
            PointOutcome(
                status="ok",
                metrics={"fio.write.iops": 10.0},
                collectors={"perf": ("failed", "post-processing did not finish")},
                facts={"config": "ext4", "timing": {"setup_s": 1.0}},
            ),
        )
        store.add_results(
            point.id,
            metrics={"profile.samples": 400.0},
            artifacts={"profile.oncpu.folded": "fio;x 1\n"},
            collectors={"perf": ("ok", "")},
            facts={"timing": {"setup_s": 1.0, "post_s": 0.2}},
        )
        assert store.metrics(cid)[point.id] == {"fio.write.iops": 10.0, "profile.samples": 400.0}
        assert store.collectors(point.id) == {"perf": ("ok", "")}
        assert store.artifact(point.id, "profile.oncpu.folded") == "fio;x 1\n"
        facts = store.points(cid)[0].facts
        assert facts == {"config": "ext4", "timing": {"setup_s": 1.0, "post_s": 0.2}}


def test_roles_survive_export_and_import_and_old_exports_read_as_inline(tmp_path):
    import json

    from fslab.store.exchange import export_campaign, import_campaign

    with Store(tmp_path / "a.db") as source:
        cid = _roles_campaign(source, "clean", "evidence")
        exported = export_campaign(source, cid)
    assert exported["version"] == 2
    assert [p["role"] for p in exported["points"]] == ["clean", "evidence"]
    old = json.loads((DATA / "campaign_fsync_nocollect.json").read_text())
    assert old["version"] == 1 and "role" not in old["points"][0]
    with Store(tmp_path / "b.db") as target:
        new_id = import_campaign(target, exported)
        assert [p.role for p in target.points(new_id)] == ["clean", "evidence"]
        old_id = import_campaign(target, old)
        assert {p.role for p in target.points(old_id)} == {"inline"}
        bad = {**exported, "points": [{**exported["points"][0], "role": "bogus"}]}
        from fslab.errors import UsageError

        with pytest.raises(UsageError, match="unknown role 'bogus'"):
            import_campaign(target, bad)
