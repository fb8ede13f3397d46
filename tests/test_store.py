"""The results database: schema, round trip, versioning, migrations, concurrent readers.

Every test taking `new_db` runs twice: on a SQLite file and on a PostgreSQL
database of the cluster the test session starts (tests/pgcluster.py).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy import exc as sa_exc

from fslab.base.errors import FslabError, UsageError
from fslab.store.db import (
    _PG_LOCK_CLASS,
    SCHEMA_VERSION,
    PlannedPoint,
    PointOutcome,
    Store,
    database_url,
    upgrade_database,
)
from fslab.store.exchange import export_campaign, import_campaign
from fslab.store.facts import PointFacts
from fslab.store.lock import write_turn
from fslab.store.tables import HEAD
from tests.tiny_spec import tiny_spec_data

DATA = Path(__file__).parent / "data"


def _campaign(store: Store, n_points: int = 3, *, hostname: str = "box-a") -> int:
    return store.create_campaign(
        name="t",
        spec=tiny_spec_data("t"),
        spec_toml='name = "t"',
        overrides={},
        host={"kernel_release": "6.18", "hostname": hostname},
        device={"kind": "ram"},
        fslab_version="0",
        points=[PlannedPoint(i, "ext4", "ext4", {"numjobs": i + 1}, 0) for i in range(n_points)],
    )


OUTCOME = PointOutcome(
    status="ok",
    metrics={"fio.write.iops": 1234.5},
    artifacts={"fio.json": "{}"},
    commands=[(["mkfs.ext4", "/dev/loop0"], 0, 0.5)],
    collectors={"perf": ("unavailable", "no perf")},
    facts=PointFacts(mount_options_effective="rw,noatime"),
)


def test_round_trip(new_db):
    with Store(new_db()) as store:
        cid = _campaign(store)
        points = store.points(cid)
        assert [p.status for p in points] == ["pending"] * 3
        store.save_outcome(points[0].id, OUTCOME)
        store.save_outcome(points[0].id, OUTCOME)  # replacing is idempotent
        assert store.metrics(cid) == {points[0].id: {"fio.write.iops": 1234.5}}
        assert store.artifact(points[0].id, "fio.json") == "{}"
        assert store.commands(points[0].id) == [["mkfs.ext4", "/dev/loop0"]]
        assert store.command_records(points[0].id) == [(["mkfs.ext4", "/dev/loop0"], 0, 0.5)]
        assert store.collectors(points[0].id) == {"perf": ("unavailable", "no perf")}
        assert store.points(cid)[0].facts.mount_options_effective == "rw,noatime"
        store.set_campaign_status(cid, "complete")
        assert store.campaign(cid).ended_at is not None
        assert store.latest_campaign_id() == cid
        assert store.integrity_ok()


def test_a_second_save_replaces_everything_the_first_left(new_db):
    """A failed attempt saved, then the point saved again (a resumed campaign, a
    spooled write sent twice): only the second save's rows remain."""
    with Store(new_db()) as store:
        cid = _campaign(store, 1)
        (point,) = store.points(cid)
        first = PointOutcome(
            status="failed",
            error="fio died",
            metrics={"fio.read.iops": 1.0},
            artifacts={"stale.txt": "x"},
            commands=[(["fio", "a.fio"], 1, 0.1), (["umount", "/mnt"], 0, 0.1)],
            collectors={"perf": ("failed", "perf died"), "tracefs": ("ok", "")},
        )
        store.save_outcome(point.id, first)
        store.save_outcome(point.id, OUTCOME)
        assert store.metrics(cid) == {point.id: {"fio.write.iops": 1234.5}}
        assert store.artifact_names(point.id) == ["fio.json"]
        assert store.command_records(point.id) == [(["mkfs.ext4", "/dev/loop0"], 0, 0.5)]
        assert store.collectors(point.id) == {"perf": ("unavailable", "no perf")}
        saved = store.points(cid)[0]
        assert (saved.status, saved.error) == ("ok", None)


def test_a_first_save_is_a_few_statements_however_many_rows(new_db):
    """Storing stays cheap next to the point it stores (issue 13): saving a pending
    point is one UPDATE and one INSERT per table, whatever its number of metrics;
    no DELETE (a pending point has no rows yet). On PostgreSQL the statements are
    the same text with the same few parameters for 6 metrics as for 600 (each
    column goes as one array): no bind parameter or Python dict per row, whose
    garbage made the writer's collector stall the slowest saves (bench/store_waits.py)."""
    with Store(new_db()) as store:
        cid = _campaign(store, 2)
        few, many = store.points(cid)
        sent: list[tuple[str, int, bool]] = []

        def record(_conn, _cursor, statement, params, _context, executemany):
            sent.append((statement, len(params) if isinstance(params, dict) else 0, executemany))

        event.listen(store._engine, "before_cursor_execute", record)
        store.save_outcome(few.id, replace(OUTCOME, metrics={f"m{i}": 1.0 for i in range(6)}))
        sent_for_few, sent[:] = list(sent), []
        store.save_outcome(
            many.id, replace(OUTCOME, metrics={f"m{i}": float(i) for i in range(600)})
        )
        event.remove(store._engine, "before_cursor_execute", record)
        kinds = sorted(s.split()[0].upper() for s, _, _ in sent)
        assert [k for k in kinds if k not in ("BEGIN", "SELECT")] == ["INSERT"] * 4 + ["UPDATE"]
        if store.shared:
            assert [s for s, _, _ in sent] == [s for s, _, _ in sent_for_few]
            assert not any(executemany for _, _, executemany in sent)
            inserts = [n for statement, n, _ in sent if statement.startswith("INSERT")]
            assert max(inserts) <= 5  # point_id and one array per column
        assert len(store.metrics(cid)[many.id]) == 600


def test_postgresql_saves_leave_the_garbage_collector_idle(pg_cluster, tmp_path, monkeypatch):
    """30 saves of 600 metrics each start (almost) no garbage collection in the writer.
    Rows sent one dict and three parameters each started 220 young collections, 20
    middle and 2 full ones in these 30 saves: a full pass over the process's objects
    takes about 50 ms of CPU, stretched to 300 ms with 8 writers on 2 CPUs, and was
    the whole p99 of the store bench with 8 PostgreSQL writers."""
    import gc

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with Store(pg_cluster.create_database("gc_idle")) as store:
        cid = _campaign(store, 40)
        points = store.points(cid)
        outcome = replace(OUTCOME, metrics={f"m{i}": float(i) for i in range(600)})
        for point in points[:10]:  # statements compiled and prepared, pool warm
            store.save_outcome(point.id, outcome)
        before = [g["collections"] for g in gc.get_stats()]
        for point in points[10:]:
            store.save_outcome(point.id, outcome)
        after = [g["collections"] for g in gc.get_stats()]
    young, middle, full = (a - b for a, b in zip(after, before, strict=True))
    assert young <= 30 and middle <= 3 and full == 0, (young, middle, full)


def test_rows_sent_as_arrays_come_back_exactly(new_db):
    """What array quoting could garble (commas, quotes, braces, backslashes, the word
    NULL, empty strings, newlines) and floats at their edges read back unchanged."""
    names = ["a,b", 'x"y', "{z}", "NULL", "back\\slash", "", "tab\tnew\nline", "µs ≥ 1"]
    values = [float("inf"), -0.0, 1e-300, 0.1 + 0.2, -1.5e308, 3.0, 2.0**53 + 1, 1 / 3]
    outcome = replace(
        OUTCOME,
        metrics=dict(zip(names, values, strict=True)),
        artifacts={name: f"{name}\n{{'quoted': \"x\"}}" for name in names},
        commands=[([name, "--flag=a b"], i, i / 7) for i, name in enumerate(names)],
        collectors={name: ("failed", f"reason: {name}") for name in names},
    )
    with Store(new_db()) as store:
        cid = _campaign(store, 1)
        (point,) = store.points(cid)
        store.save_outcome(point.id, outcome)
        assert store.metrics(cid)[point.id] == outcome.metrics
        assert {n: store.artifact(point.id, n) for n in names} == outcome.artifacts
        assert store.command_records(point.id) == outcome.commands
        assert store.collectors(point.id) == outcome.collectors


def test_opening_a_store_at_head_takes_no_lock(new_db):
    """Many hosts opening the store at once do not queue: a database already at HEAD
    is only read on open (no advisory lock on PostgreSQL, no write turn on SQLite);
    only creating or upgrading the schema is serialised."""
    location = new_db()
    Store(location).close()  # at HEAD now
    opened = threading.Event()

    def open_it() -> None:
        Store(location).close()
        opened.set()

    with contextlib.ExitStack() as held:
        if location.startswith("postgresql://"):
            engine = create_engine(database_url(location))
            held.callback(engine.dispose)
            conn = held.enter_context(engine.connect())
            conn.execute(text("SELECT pg_advisory_xact_lock(:k, 0)"), {"k": _PG_LOCK_CLASS})
        else:
            held.enter_context(write_turn(Path(location)))
        thread = threading.Thread(target=open_it, daemon=True)
        thread.start()
        assert opened.wait(20), "opening a store at HEAD waited for a lock"
    thread.join()


def test_every_campaign_carries_its_host(new_db):
    with Store(new_db()) as store:
        a = _campaign(store, 1, hostname="box-a")
        b = _campaign(store, 1, hostname="box-b")
        assert store.campaign(a).hostname == "box-a"
        assert [c.id for c in store.campaigns(host="box-b")] == [b]
        assert store.find_campaign(store.campaign(b)) == b


def test_missing_campaign_is_a_clear_error(new_db):
    with Store(new_db()) as store:
        with pytest.raises(FslabError, match="no campaign 7"):
            store.campaign(7)
        with pytest.raises(FslabError, match="no campaigns"):
            store.latest_campaign_id()


def test_newer_schema_is_refused(new_db):
    location = new_db()
    with Store(location) as store, store._engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num='v99'"))
    with pytest.raises(FslabError, match="newer than this fslab"):
        Store(location)
    with pytest.raises(FslabError, match="newer than this fslab"):
        upgrade_database(location)


def test_reader_while_writer_holds_the_database(new_db):
    location = new_db()
    writer = Store(location)
    cid = _campaign(writer)
    reader = Store(location)
    with writer._connect(write=True) as conn:  # a campaign mid-write, lock taken
        conn.execute(text("UPDATE points SET status='ok' WHERE campaign_id=:c"), {"c": cid})
        # WAL (SQLite) and MVCC (PostgreSQL): readers are not blocked, and see the old rows
        assert [p.status for p in reader.points(cid)] == ["pending"] * 3
    assert [p.status for p in reader.points(cid)] == ["ok"] * 3
    writer.close()
    reader.close()


def test_export_import_round_trip(new_db):
    with Store(new_db()) as source:
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
                facts=PointFacts(umount="lazy: the mount stayed busy; detached lazily"),
            ),
        )
        source.set_campaign_status(cid, "interrupted")
        exported = export_campaign(source, cid)
    with Store(new_db()) as target:
        target_first = _campaign(target, 1)  # ids differ between databases
        new_id = import_campaign(target, exported)
        assert new_id != target_first
        assert export_campaign(target, new_id)["points"] == exported["points"]
        imported = target.campaign(new_id)
        assert imported.status == "interrupted"
        assert imported.overrides.imported_from == cid
        assert imported.started_at == exported["campaign"]["started_at"]
        assert imported.hostname == "box-a"


def test_import_refuses_other_json(new_db):
    with Store(new_db()) as target:
        with pytest.raises(UsageError, match="not an fslab campaign export"):
            import_campaign(target, {"hello": 1})
        with pytest.raises(UsageError, match="campaign export: campaign: Field required"):
            import_campaign(target, {"format": "fslab-campaign", "version": 1})


def test_a_running_campaign_nobody_runs_reads_as_interrupted(new_db):
    location = new_db()
    with Store(location) as store:
        cid = _campaign(store)
        assert store.campaign(cid).status == "interrupted"  # stored 'running', no runner
        with store.campaign_lock(cid):
            assert store.campaign(cid).status == "running"
            assert [c.status for c in store.campaigns()] == ["running"]
            other = Store(location)  # another fslab (on another host)
            with pytest.raises(FslabError, match="being run by another"), other.campaign_lock(cid):
                pass
            other.close()
        assert store.campaign(cid).status == "interrupted"


def test_the_runner_lock_holds_through_a_nested_hold(new_db):
    """`fslab run` holds the campaign's lock over the planned runs and the question
    rounds, each of which takes it again: the inner hold must neither fail nor let go."""
    location = new_db()
    with Store(location) as store:
        cid = _campaign(store)
        other = Store(location)
        with store.campaign_lock(cid):
            with store.campaign_lock(cid):
                assert store.campaign(cid).status == "running"
            assert store.campaign(cid).status == "running"  # the inner exit kept it
            with pytest.raises(FslabError, match="being run by another"), other.campaign_lock(cid):
                pass
        with other.campaign_lock(cid):  # released with its outer holder
            pass
        other.close()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_sqlite_database_is_migrated(tmp_path, version):
    """tests/data/store_schema_v{1,2}.sql: the schemas fslab shipped before alembic
    (v1: fslab 0.1; v2: points with roles). Both open, their rows intact."""
    path = tmp_path / "old.db"
    # a spec as an older fslab stored it (no target.limits, vm, reported, ...)
    old_spec = json.loads((DATA / "campaign_fsync_quick.json").read_text())["campaign"]["spec"]
    with sqlite3.connect(path) as conn:
        conn.executescript((DATA / f"store_schema_v{version}.sql").read_text())
        conn.execute(f"INSERT INTO meta VALUES ('schema_version', '{version}')")
        conn.execute(
            "INSERT INTO campaigns (name, status, spec_json, spec_toml, overrides_json,"
            " host_json, fslab_version, started_at)"
            " VALUES ('old', 'complete', ?, '', '{}', '{\"hostname\": \"old-box\"}',"
            " '0.1.0', '2026-01-01')",
            (json.dumps(old_spec),),
        )
        conn.execute(
            "INSERT INTO points (campaign_id, seq, config, fs_type, sweep_json, repeat, status)"
            " VALUES (1, 0, 'ext4', 'ext4', '{\"numjobs\": 1}', 0, 'ok')"
        )
        conn.execute("INSERT INTO metrics VALUES (1, 'fio.write.iops', 99.0)")
    with Store(path) as store:
        (point,) = store.points(1)
        assert point.role == "inline"
        assert store.metrics(1) == {point.id: {"fio.write.iops": 99.0}}
        old = store.campaign(1)
        assert old.hostname == "old-box" and old.spec.target.limits is None  # typed, defaults
        assert old.host.hostname == "old-box" and old.host.fact("kernel_release") is None
        (new,) = store.add_points(1, [PlannedPoint(0, "ext4", "ext4", {"numjobs": 1}, 0)])
        assert new.role == "clean"
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (HEAD,)
    with Store(path) as store:  # opening a migrated database again changes nothing
        assert [p.role for p in store.points(1)] == ["inline", "clean"]


def test_a_shared_database_of_an_older_schema_waits_for_store_migrate(pg_cluster, tmp_path):
    """Hosts share a PostgreSQL store: it is upgraded when someone says so, not by
    whichever host got the newer fslab first."""
    location = pg_cluster.create_database(f"old_{tmp_path.name.lower()[:40]}")
    with Store(location) as store:
        _campaign(store, 1)
        with store._engine.begin() as conn:  # back to v2: no host column
            conn.execute(text("DROP INDEX campaigns_by_host"))
            conn.execute(text("ALTER TABLE campaigns DROP COLUMN host"))
            conn.execute(text("UPDATE alembic_version SET version_num='v2'"))
    with pytest.raises(FslabError, match="fslab store migrate"):
        Store(location)
    assert upgrade_database(location) == ("v2", HEAD)
    with Store(location) as store:
        assert store.campaign(1).hostname == "box-a"  # filled from the host facts
    assert upgrade_database(location) == (HEAD, HEAD)


def _roles_campaign(store: Store, *roles: str) -> int:
    return store.create_campaign(
        name="t",
        spec=tiny_spec_data("t"),
        spec_toml="",
        overrides={"collect": "separate"},
        host={},
        device=None,
        fslab_version="0",
        points=[PlannedPoint(i, "ext4", "ext4", {"numjobs": 1}, i, r) for i, r in enumerate(roles)],  # type: ignore[arg-type]
    )


def test_roles_are_stored_and_checked(new_db):
    with Store(new_db()) as store:
        cid = _roles_campaign(store, "clean", "evidence", "inline")
        assert [p.role for p in store.points(cid)] == ["clean", "evidence", "inline"]
        with pytest.raises(sa_exc.IntegrityError):
            store.add_points(cid, [PlannedPoint(0, "a", "ext4", {}, 0, "bogus")])  # type: ignore[arg-type]


def test_post_processing_results_are_added_to_a_saved_point(new_db):
    with Store(new_db()) as store:
        cid = _campaign(store, 1)
        (point,) = store.points(cid)
        store.save_outcome(
            point.id,
            PointOutcome(
                status="ok",
                metrics={"fio.write.iops": 10.0},
                collectors={"perf": ("failed", "post-processing did not finish")},
                facts=PointFacts(config="ext4", timing={"setup_s": 1.0}),
            ),
        )
        store.add_results(
            point.id,
            metrics={"profile.samples": 400.0},
            artifacts={"profile.oncpu.folded": "fio;x 1\n"},
            collectors={"perf": ("ok", "")},
            facts=PointFacts(timing={"setup_s": 1.0, "post_s": 0.2}),
        )
        assert store.metrics(cid)[point.id] == {"fio.write.iops": 10.0, "profile.samples": 400.0}
        assert store.collectors(point.id) == {"perf": ("ok", "")}
        assert store.artifact(point.id, "profile.oncpu.folded") == "fio;x 1\n"
        facts = store.points(cid)[0].facts
        assert facts.stored() == {"config": "ext4", "timing": {"setup_s": 1.0, "post_s": 0.2}}


def test_post_processing_results_replace_by_name_whatever_their_number(new_db):
    """Adding 300 collector metrics replaces the same-named ones already stored and
    keeps the rest; on PostgreSQL each DELETE carries the names as one array, not a
    parameter per name."""
    with Store(new_db()) as store:
        cid = _campaign(store, 1)
        (point,) = store.points(cid)
        store.save_outcome(point.id, replace(OUTCOME, metrics={"fio.write.iops": 1.0, "m0": -1.0}))
        sent: list[tuple[str, int]] = []

        def record(_conn, _cursor, statement, params, _context, _executemany):
            sent.append((statement, len(params) if isinstance(params, dict) else 0))

        event.listen(store._engine, "before_cursor_execute", record)
        added = {f"m{i}": float(i) for i in range(300)}
        store.add_results(point.id, metrics=added, artifacts={}, collectors={}, facts=PointFacts())
        event.remove(store._engine, "before_cursor_execute", record)
        assert store.metrics(cid)[point.id] == {"fio.write.iops": 1.0, **added}
        deletes = [n for statement, n in sent if statement.startswith("DELETE")]
        assert len(deletes) == 1
        if store.shared:
            assert deletes == [2]  # the point and the array of names


def test_roles_survive_export_and_import_and_old_exports_read_as_inline(new_db):
    with Store(new_db()) as source:
        cid = _roles_campaign(source, "clean", "evidence")
        exported = export_campaign(source, cid)
    assert exported["version"] == 2
    assert [p["role"] for p in exported["points"]] == ["clean", "evidence"]
    old = json.loads((DATA / "campaign_fsync_nocollect.json").read_text())
    assert old["version"] == 1 and "role" not in old["points"][0]
    with Store(new_db()) as target:
        new_id = import_campaign(target, exported)
        assert [p.role for p in target.points(new_id)] == ["clean", "evidence"]
        old_id = import_campaign(target, old)
        assert {p.role for p in target.points(old_id)} == {"inline"}
        bad = {**exported, "points": [{**exported["points"][0], "role": "bogus"}]}
        with pytest.raises(UsageError, match="unknown role 'bogus'"):
            import_campaign(target, bad)


def test_store_copy_moves_every_campaign_once(new_db, pg_cluster, tmp_path):
    """SQLite to PostgreSQL and PostgreSQL to SQLite."""
    from fslab.store.copy import copy_store

    source_location = new_db()
    with Store(source_location) as source:
        a = _campaign(source, 2, hostname="box-a")
        source.save_outcome(source.points(a)[0].id, OUTCOME)
        source.set_campaign_status(a, "complete")
        _campaign(source, 1, hostname="box-b")
    if "://" in source_location:
        target_location = str(tmp_path / "copy.db")
    else:
        target_location = pg_cluster.create_database(f"copy_{tmp_path.name.lower()[:40]}")
    first = copy_store(source_location, target_location)
    assert (first.copied, first.skipped) == (2, 0)
    again = copy_store(source_location, target_location)  # a second copy adds nothing
    assert (again.copied, again.skipped) == (0, 2)
    with Store(source_location) as source, Store(target_location) as target:
        assert [c.hostname for c in target.campaigns()] == ["box-a", "box-b"]
        moved = target.campaigns()[0]
        assert export_campaign(target, moved.id)["points"] == export_campaign(source, a)["points"]


def test_a_database_outage_mid_campaign_loses_no_point(tmp_path, monkeypatch):
    """The server goes away between two points: the writes wait in the local spool,
    and the first fslab to open the database once it is back sends them, in order."""
    from tests.pgcluster import running_cluster

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with running_cluster() as (cluster, data_dir):
        location = cluster.create_database("outage")
        store = Store(location)
        cid = _campaign(store, 3)
        points = store.points(cid)
        store.save_outcome(points[0].id, OUTCOME)
        cluster.stop(data_dir)
        store.save_outcome(points[1].id, OUTCOME)  # kept locally, the campaign goes on
        store.save_outcome(points[2].id, PointOutcome(status="failed", error="fio died"))
        store.set_campaign_status(cid, "complete")
        assert store.spooled() == 3
        with pytest.raises(FslabError, match=r"start the server at 127\.0\.0\.1"):
            store.points(cid)
        with pytest.raises(FslabError, match="start the server"):
            Store(location)  # the spool stays for later
        store.close()
        cluster.start(data_dir)
        with Store(location) as back:
            assert back.spooled() == 0
            assert [p.status for p in back.points(cid)] == ["ok", "ok", "failed"]
            assert back.points(cid)[2].error == "fio died"
            assert back.metrics(cid)[points[1].id] == OUTCOME.metrics
            assert back.campaign(cid).status == "complete"


def test_wrong_password_and_unknown_database_are_clear_errors(pg_cluster):
    with pytest.raises(FslabError, match=r"password authentication failed.*check the user and"):
        Store(pg_cluster.url("postgres", password="wrong"))
    with pytest.raises(FslabError, match='database "nope" does not exist'):
        Store(pg_cluster.url("nope"))
    with pytest.raises(UsageError, match=r"SQLite .* or PostgreSQL"):
        Store("mysql://x@y/z")
