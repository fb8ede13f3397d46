"""Several hosts writing one store at once: nothing lost, nothing mixed, ids unique.

Eight writer processes (as eight hosts would) each store campaigns point by
point into the same database, on SQLite and on PostgreSQL; afterwards every
campaign is there once, under its writer's host, with all its points and
exactly the metrics that writer saved for them.
"""

from __future__ import annotations

import multiprocessing
import threading

from fslab.store.db import PlannedPoint, PointOutcome, Store
from fslab.store.lock import write_turn
from tests.tiny_spec import tiny_spec_data

WRITERS = 8
CAMPAIGNS = 3
POINTS = 12


def _write(location: str, writer: int) -> list[int]:
    ids = []
    with Store(location) as store:
        for c in range(CAMPAIGNS):
            cid = store.create_campaign(
                name=f"c{c}",
                spec=tiny_spec_data(f"c{c}"),
                spec_toml="",
                overrides={},
                host={"hostname": f"host-{writer}"},
                device=None,
                fslab_version="0",
                points=[PlannedPoint(i, "ext4", "ext4", {"i": i}, 0) for i in range(POINTS)],
            )
            for point in store.points(cid):
                value = writer * 1_000_000 + c * 1000 + point.seq
                store.save_outcome(
                    point.id,
                    PointOutcome(status="ok", metrics={"fio.write.iops": float(value)}),
                )
            store.set_campaign_status(cid, "complete")
            ids.append(cid)
    return ids


def test_eight_writers_at_once_lose_nothing(new_db):
    location = new_db()
    Store(location).close()  # the schema exists before the writers start
    context = multiprocessing.get_context("spawn")
    with context.Pool(WRITERS) as pool:
        written = pool.starmap(_write, [(location, w) for w in range(WRITERS)])
    all_ids = [cid for ids in written for cid in ids]
    assert len(set(all_ids)) == WRITERS * CAMPAIGNS
    with Store(location) as store:
        campaigns = store.campaigns()
        assert sorted(c.id for c in campaigns) == sorted(all_ids)
        for writer, ids in enumerate(written):
            for c, cid in enumerate(ids):
                campaign = store.campaign(cid)
                assert (campaign.hostname, campaign.name, campaign.status) == (
                    f"host-{writer}",
                    f"c{c}",
                    "complete",
                )
                points = store.points(cid)
                assert [p.status for p in points] == ["ok"] * POINTS
                metrics = store.metrics(cid)
                assert sorted(m["fio.write.iops"] for m in metrics.values()) == [
                    float(writer * 1_000_000 + c * 1000 + seq) for seq in range(POINTS)
                ]
        assert store.integrity_ok()


def test_sqlite_writers_queue_for_the_write_turn(tmp_path):
    """A SQLite write waits in the kernel for the writers' turn, not in SQLite's busy
    handler: while another writer holds the turn it does not go ahead (SQLite itself
    is free), and it goes ahead as soon as the turn is given back."""
    location = tmp_path / "results.db"
    with Store(location) as store:
        cid = store.create_campaign(
            name="c",
            spec=tiny_spec_data("c"),
            spec_toml="",
            overrides={},
            host={"hostname": "h"},
            device=None,
            fslab_version="0",
            points=[PlannedPoint(0, "ext4", "ext4", {}, 0)],
        )
        point_id = store.points(cid)[0].id
    saved = threading.Event()

    def save() -> None:
        with Store(location) as writer:
            writer.save_outcome(point_id, PointOutcome(status="ok", metrics={"m": 1.0}))
        saved.set()

    with write_turn(location):  # another writer's turn (its own open file: OFD locks)
        thread = threading.Thread(target=save)
        thread.start()
        assert not saved.wait(0.5)
    assert saved.wait(30)
    thread.join()
    with Store(location) as store:
        assert [p.status for p in store.points(cid)] == ["ok"]
