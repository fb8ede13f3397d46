"""Where a PostgreSQL save's time goes when 8 writers save back to back on this machine.

bench/store_throughput.py shows the p99 save with 8 PostgreSQL writers far
above the median. This script finds out why, on the same durable cluster
(tests/pgcluster.py in --dir, fsync on) and the same recorded points:

- server side: pg_stat_activity sampled every --sample-ms during the saves
  (the wait events of the writers' backends), lock waits logged by the server
  (log_lock_waits with deadlock_timeout 10 ms), ungranted pg_locks seen,
  checkpoints and autovacuum runs logged during the saves, pg_stat_wal's
  fsync count and time;
- client side: for every save, the writer's and its backend's time on a CPU
  and waiting in the CPU run queue (/proc/PID/schedstat), the time in COMMIT
  (the WAL fsync), in each statement, and the round trips the save made.

The slowest 1% of saves are then taken apart next to the median save.
--variant names configurations to run one after the other: `back-to-back`
(the stress bench's load), `async-commit` (the same with synchronous_commit
off: what the commit fsync costs) and `one` (a single writer).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.store_throughput import POINTS_PER_WRITER, _recorded, bench_campaign  # noqa: E402
from sqlalchemy import event  # noqa: E402
from tests.pgcluster import running_cluster  # noqa: E402

from fslab.store import db as store_db  # noqa: E402
from fslab.store.db import PointOutcome, Store  # noqa: E402

VARIANTS = {"back-to-back": (8, "on"), "async-commit": (8, "off"), "one": (1, "on")}


def _schedstat(pid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds waiting in the run queue) of a process so far."""
    on_cpu, waiting, _ = Path(f"/proc/{pid}/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


@dataclass
class Save:
    wall_s: float
    client_cpu_s: float
    client_queue_s: float
    backend_cpu_s: float
    backend_queue_s: float
    commit_s: float
    gc_s: float = 0.0  # Python's garbage collector, in this process, during the save
    statements_s: dict[str, float] = field(default_factory=dict)
    round_trips: int = 0


def _writer(location: str, writer: int, outcomes: list[PointOutcome]) -> list[Save]:
    """Save a campaign's points back to back, each save taken apart."""
    saves: list[Save] = []
    with Store(location) as store:
        engine = store._engine
        backend = {"pid": 0}
        current: dict[str, float] = {}
        trips = {"n": 0}

        @event.listens_for(engine, "checkout")
        def _checkout(dbapi_conn, _record, _proxy):  # type: ignore[no-untyped-def]
            backend["pid"] = dbapi_conn.info.backend_pid

        @event.listens_for(engine, "before_cursor_execute")
        def _before(_c, _cur, statement, _p, _ctx, _many):  # type: ignore[no-untyped-def]
            current["start"] = time.perf_counter()

        @event.listens_for(engine, "after_cursor_execute")
        def _after(_c, _cur, statement, _p, _ctx, _many):  # type: ignore[no-untyped-def]
            words = statement.split()
            kind = " ".join(words[:3]) if words[0].upper() == "INSERT" else words[0]
            current[kind] = current.get(kind, 0.0) + time.perf_counter() - current["start"]
            trips["n"] += 1

        @event.listens_for(engine, "commit")
        def _commit(_conn):  # type: ignore[no-untyped-def]
            current["commit_at"] = time.perf_counter()

        cid = bench_campaign(store, writer, POINTS_PER_WRITER)
        collecting = {"start": 0.0, "total": 0.0}

        def _gc(phase: str, _info: dict[str, int]) -> None:
            if phase == "start":
                collecting["start"] = time.perf_counter()
            else:
                collecting["total"] += time.perf_counter() - collecting["start"]

        gc.callbacks.append(_gc)
        me = os.getpid()
        for i, point in enumerate(store.points(cid)):
            outcome = outcomes[(writer + i) % len(outcomes)]
            current.clear()
            trips["n"] = 0
            collecting["total"] = 0.0
            pid = backend["pid"]
            c0, b0 = _schedstat(me), _schedstat(pid)
            start = time.perf_counter()
            store.save_outcome(point.id, outcome)
            end = time.perf_counter()
            c1, b1 = _schedstat(me), _schedstat(pid)
            statements = {k: v for k, v in current.items() if k not in ("start", "commit_at")}
            saves.append(
                Save(
                    wall_s=end - start,
                    client_cpu_s=c1[0] - c0[0],
                    client_queue_s=c1[1] - c0[1],
                    backend_cpu_s=b1[0] - b0[0],
                    backend_queue_s=b1[1] - b0[1],
                    commit_s=end - current.get("commit_at", end),
                    gc_s=collecting["total"],
                    statements_s=statements,
                    # + BEGIN (psycopg's own round trip) + the pool's ping + COMMIT
                    round_trips=trips["n"] + 3,
                )
            )
    return saves


class Sampler(threading.Thread):
    """pg_stat_activity of fslab's backends every interval, from its own connection."""

    def __init__(self, dsn: str, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.dsn, self.interval_s = dsn, interval_s
        self.stop = threading.Event()
        self.waits: dict[str, int] = {}
        self.samples = 0
        self.ungranted = 0  # polls that saw a lock someone waits for
        self.polls = 0

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.is_set():
                rows = conn.execute(
                    "SELECT state, coalesce(wait_event_type, 'CPU'), coalesce(wait_event, '-')"
                    " FROM pg_stat_activity WHERE application_name = 'fslab'"
                ).fetchall()
                for state, kind, name in rows:
                    key = f"{kind}:{name}" if state == "active" else f"({state}) {kind}:{name}"
                    self.waits[key] = self.waits.get(key, 0) + 1
                self.samples += len(rows)
                self.polls += 1
                self.ungranted += conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted"
                ).fetchone()[0]
                time.sleep(self.interval_s)


def _mean(saves: list[Save], attr: str) -> float:
    return 1000 * statistics.mean(getattr(s, attr) for s in saves)


def _show(label: str, saves: list[Save]) -> None:
    kinds = sorted({k for s in saves for k in s.statements_s})
    statements = " ".join(
        f"{k.replace('INSERT INTO ', 'ins:')}="
        f"{1000 * statistics.mean(s.statements_s.get(k, 0) for s in saves):.1f}"
        for k in kinds
    )
    timed = ("wall_s", "client_cpu_s", "client_queue_s", "backend_cpu_s", "backend_queue_s")
    mean = {a: _mean(saves, a) for a in (*timed, "commit_s", "gc_s")}
    print(
        f"  {label:<14} n={len(saves):<5} wall {mean['wall_s']:7.1f} ms"
        f" | client cpu {mean['client_cpu_s']:5.1f} queue {mean['client_queue_s']:6.1f}"
        f" | backend cpu {mean['backend_cpu_s']:5.1f} queue {mean['backend_queue_s']:6.1f}"
        f" | commit {mean['commit_s']:6.1f} | gc {mean['gc_s']:5.1f} | {statements}"
    )


def _log_events(log: Path, since: int) -> dict[str, int]:
    lines = log.read_text(errors="replace").splitlines()[since:]
    patterns = {
        "checkpoints": r"checkpoint starting",
        "autovacuum/analyze runs": r"automatic (vacuum|analyze)",
    }
    found = {k: sum(1 for line in lines if re.search(p, line)) for k, p in patterns.items()}
    for line in lines:  # "... still waiting for AdvisoryLock on ..." (log_lock_waits)
        waited = re.search(r"still waiting for (\w+)", line)
        if waited:
            key = f"lock waits > 10 ms ({waited.group(1)})"
            found[key] = found.get(key, 0) + 1
    return found


def _report(variant: str, sampler: Sampler, saves: list[Save], extra: str) -> None:
    ordered = sorted(saves, key=lambda s: s.wall_s)
    slow = ordered[int(0.99 * len(ordered)) :]
    mid = len(ordered) // 2
    middle = ordered[mid - len(slow) // 2 : mid + len(slow) // 2 + 1]
    writers, sync = VARIANTS[variant]
    print(
        f"\n{variant}: {writers} writer(s), synchronous_commit {sync}, {len(saves)} saves;"
        f" p50 {1000 * ordered[mid].wall_s:.1f} ms, p99 {1000 * slow[0].wall_s:.1f} ms,"
        f" max {1000 * ordered[-1].wall_s:.1f} ms;"
        f" {statistics.mean(s.round_trips for s in saves):.0f} round trips a save"
    )
    _show("median saves", middle)
    _show("slowest 1%", slow)
    print(f"  {extra}")
    total = sum(sampler.waits.values())
    shares = sorted(sampler.waits.items(), key=lambda kv: -kv[1])
    print(
        f"  backends (pg_stat_activity every {1000 * sampler.interval_s:g} ms): "
        + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in shares[:8])
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--dir", default="/var/tmp")
    parser.add_argument("--sample-ms", type=float, default=10.0)
    parser.add_argument("--variant", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args(argv)
    outcomes, _ = _recorded()
    print(f"save path under test: {Path(store_db.__file__).parents[2]}")
    with (
        tempfile.TemporaryDirectory(prefix="fslab-bench-", dir=args.dir),
        running_cluster(parent=args.dir, fsync=True) as (cluster, data),
        multiprocessing.get_context("spawn").Pool(8) as pool,
    ):
        for setting in (
            "log_lock_waits = on",
            "deadlock_timeout = '10ms'",
            "log_checkpoints = on",
            "log_autovacuum_min_duration = 0",
            "track_wal_io_timing = on",
        ):
            cluster.psql(f"ALTER SYSTEM SET {setting}")
        cluster.psql("SELECT pg_reload_conf()")
        admin = f"host={cluster.socket_dir} port={cluster.port} user=postgres dbname=postgres"
        warm = cluster.create_database("warm")
        Store(warm).close()
        pool.starmap(_writer, [(warm, w, outcomes) for w in range(8)])
        cluster.psql("CHECKPOINT")
        for variant in args.variant:
            writers, sync = VARIANTS[variant]
            cluster.psql(f"ALTER SYSTEM SET synchronous_commit = {sync}")
            cluster.psql("SELECT pg_reload_conf()")
            saves: list[Save] = []
            sampler = Sampler(admin, args.sample_ms / 1000)
            log = data / "server.log"
            since = len(log.read_text(errors="replace").splitlines())
            wal0 = cluster.psql("SELECT wal_sync, wal_sync_time FROM pg_stat_wal").split("|")
            sampler.start()
            for round_ in range(args.rounds):
                location = cluster.create_database(f"{variant.replace('-', '_')}_{round_}")
                Store(location).close()
                for per_writer in pool.starmap(
                    _writer, [(location, w, outcomes) for w in range(writers)]
                ):
                    saves.extend(per_writer[1:])  # the first save apart (a fresh connection)
            sampler.stop.set()
            sampler.join()
            wal1 = cluster.psql("SELECT wal_sync, wal_sync_time FROM pg_stat_wal").split("|")
            syncs = int(wal1[0]) - int(wal0[0])
            sync_ms = float(wal1[1]) - float(wal0[1])
            events = "; ".join(f"{k}: {v}" for k, v in _log_events(log, since).items())
            _report(
                variant,
                sampler,
                saves,
                f"WAL fsyncs {syncs} ({sync_ms / max(syncs, 1):.2f} ms each); {events};"
                f" ungranted pg_locks in {sampler.ungranted} of {sampler.polls} polls",
            )


if __name__ == "__main__":
    main()
