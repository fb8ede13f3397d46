"""Points stored per second: SQLite against PostgreSQL, 1 writer against 8, side by side.

Goal (issue 13): storing a point never adds more than 1% to the point's wall
time. Each point stored here is a real recorded one: the outcomes (metrics,
fio JSON, folded perf stacks, commands, collector status) of the points of
tests/data/campaign_fsync_quick.json, a `fslab run ext4-fsync-storm --quick`
campaign. A writer is a process with its own Store that creates a campaign
and saves its points one transaction each, as the runner does. The four
configurations run in alternating order, ROUNDS times; the table gives the
median over rounds of the aggregate rate, each point's save time (median and
p99 over all points of all rounds) and that save time as a share of the
recorded campaign's median point wall time, with a 95% bootstrap interval
of the median save time. The PostgreSQL server is a
private cluster on this machine (tests/pgcluster.py), over TCP on 127.0.0.1.

Run under the exclusive machine lock:
    flock -x /work/machine.lock .venv/bin/python bench/store_throughput.py
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pgcluster import running_cluster  # noqa: E402

from fslab.store.db import PlannedPoint, PointOutcome, Store  # noqa: E402
from fslab.store.exchange import _outcome  # noqa: E402

CAMPAIGN = ROOT / "tests" / "data" / "campaign_fsync_quick.json"
ROUNDS = 10
POINTS_PER_WRITER = 24
WRITER_COUNTS = (1, 8)


def _recorded() -> tuple[list[PointOutcome], float]:
    data = json.loads(CAMPAIGN.read_text())
    done = [p for p in data["points"] if p["status"] != "pending"]
    walls = [
        (
            datetime.fromisoformat(p["ended_at"]) - datetime.fromisoformat(p["started_at"])
        ).total_seconds()
        for p in done
        if p.get("started_at") and p.get("ended_at")
    ]
    return [_outcome(p) for p in done], statistics.median(walls)


def _writer(location: str, writer: int, outcomes: list[PointOutcome]) -> list[float]:
    """Store one campaign of POINTS_PER_WRITER points; returns each save's seconds."""
    seconds = []
    with Store(location) as store:
        cid = store.create_campaign(
            name="bench",
            spec={},
            spec_toml="",
            overrides={},
            host={"hostname": f"writer-{writer}"},
            device=None,
            fslab_version="bench",
            points=[
                PlannedPoint(i, "ext4", "ext4", {"numjobs": i}, 0) for i in range(POINTS_PER_WRITER)
            ],
        )
        for i, point in enumerate(store.points(cid)):
            outcome = outcomes[(writer + i) % len(outcomes)]
            start = time.perf_counter()
            store.save_outcome(point.id, outcome)
            seconds.append(time.perf_counter() - start)
        store.set_campaign_status(cid, "complete")
    return seconds


def _measure(
    pool: multiprocessing.pool.Pool, location: str, writers: int, outcomes: list[PointOutcome]
) -> tuple[float, list[float]]:
    start = time.perf_counter()
    per_writer = pool.starmap(_writer, [(location, w, outcomes) for w in range(writers)])
    elapsed = time.perf_counter() - start
    saves = [s for seconds in per_writer for s in seconds]
    return len(saves) / elapsed, saves


def _median_ci(values: list[float], n_boot: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the median."""
    rng = np.random.default_rng(13)
    data = np.asarray(values)
    medians = np.median(rng.choice(data, size=(n_boot, data.size), replace=True), axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    outcomes, point_wall_s = _recorded()
    payload = sum(
        len(json.dumps(o.metrics)) + sum(len(a) for a in o.artifacts.values()) for o in outcomes
    ) / len(outcomes)
    print(f"recorded points: {len(outcomes)} from {CAMPAIGN.name}")
    print(
        f"  median point wall time {point_wall_s:.1f} s,"
        f" mean stored payload {payload / 1024:.0f} KiB"
    )
    print(f"{ROUNDS} rounds x {POINTS_PER_WRITER} points per writer, order alternating\n")
    context = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory(prefix="fslab-bench-", dir="/dev/shm") as tmp,
        running_cluster() as (cluster, _data),
        context.Pool(max(WRITER_COUNTS)) as pool,
    ):
        configs = [(engine, n) for engine in ("sqlite", "postgresql") for n in WRITER_COUNTS]
        rates: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
        saves: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
        for round_ in range(ROUNDS):
            order = configs if round_ % 2 == 0 else configs[::-1]
            for engine, n in order:
                name = f"r{round_}_{engine}_{n}"
                location = (
                    str(Path(tmp) / f"{name}.db")
                    if engine == "sqlite"
                    else cluster.create_database(name)
                )
                Store(location).close()  # schema created outside the timing
                rate, seconds = _measure(pool, location, n, outcomes)
                rates[(engine, n)].append(rate)
                saves[(engine, n)].extend(seconds)
    header = (
        f"{'store':<11} {'writers':>7} {'points/s':>9} {'save median':>12} {'95% CI':>13}"
        f" {'save p99':>9} {'% of point':>11}"
    )
    print(header)
    print("-" * len(header))
    for engine, n in configs:
        s = saves[(engine, n)]
        median_ms, p99_ms = 1000 * statistics.median(s), 1000 * _pct(s, 0.99)
        low, high = (1000 * v for v in _median_ci(s))
        share = 100 * _pct(s, 0.99) / point_wall_s
        print(
            f"{engine:<11} {n:>7} {statistics.median(rates[(engine, n)]):>9.1f}"
            f" {median_ms:>9.1f} ms {low:>5.1f}-{high:<5.1f}ms {p99_ms:>6.1f} ms {share:>10.3f}%"
        )
    print(
        "\n% of point: the p99 save time against the median point wall time (goal < 1%);"
        "\npoints/s: all writers together, median over rounds"
    )


if __name__ == "__main__":
    main()
