"""Points stored per second: SQLite against PostgreSQL, 1 writer against 8, side by side.

Goal (issue 13): storing a point never adds more than 1% to the point's wall
time, so the p99 save time stays under 1% of it. Each point stored here is a
real recorded one: the outcomes (about 290 metrics, fio JSON, folded perf
stacks, commands, collector status) of the points of
tests/data/campaign_fsync_quick.json, a `fslab run ext4-fsync-storm --quick`
campaign, whose median point took 11 s of wall time (fio 3 s after a 2 s
ramp, plus mkfs, mount and collectors); a point at the preset's defaults runs
30 s after a 5 s ramp, so the share printed is the strict one.

A writer is a process with its own Store that creates a campaign and saves
its points one transaction each, as the runner does, but back to back: 8
writers saving at once is the worst case of 8 campaigns sharing a store. The
stores are durable, as a user's are: the SQLite files and a private
PostgreSQL cluster (tests/pgcluster.py, fsync on, over TCP on 127.0.0.1) live
in --dir, a directory on the disk (default /var/tmp, the root disk, where the
default store ~/.local/share/fslab lives too).

An untimed warm-up round of every configuration comes first (writer
processes started; the server's WAL written, then recycled by a CHECKPOINT,
as on a server that has run a while). The configurations then run in
alternating order, --rounds times; the table gives the median over rounds of
the aggregate rate, each point's save time (median and p99 over all saves of
all rounds, each with a 95% bootstrap interval), the p99 as a share of the
11 s point, and apart the first save of each writer (a fresh process's and
connection's first statements) and the p99 of the saves after it.
--baseline SRC measures another fslab source tree's save path in the same
run, interleaved with this one's:

    git worktree add /tmp/fslab-main main
    flock -x /work/machine.lock .venv/bin/python bench/store_throughput.py \\
        --baseline /tmp/fslab-main/src
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import multiprocessing.pool
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
GOAL_SHARE = 0.01


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
) -> tuple[float, list[list[float]]]:
    """(points stored per second, each writer's save seconds in order)."""
    start = time.perf_counter()
    per_writer = pool.starmap(_writer, [(location, w, outcomes) for w in range(writers)])
    elapsed = time.perf_counter() - start
    return sum(len(seconds) for seconds in per_writer) / elapsed, per_writer


def _pct(values: list[float] | np.ndarray, q: float) -> float:
    ordered = np.sort(np.asarray(values), axis=-1)
    return ordered[..., min(ordered.shape[-1] - 1, int(q * ordered.shape[-1]))]


def _ci(values: list[float], q: float, n_boot: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the q-quantile (as _pct takes it)."""
    rng = np.random.default_rng(13)
    data = np.asarray(values)
    resampled = _pct(rng.choice(data, size=(n_boot, data.size), replace=True), q)
    return float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))


@contextlib.contextmanager
def _pools(baseline: Path | None) -> Iterator[dict[str, multiprocessing.pool.Pool]]:
    """Writer processes per code under test: this tree's, and the baseline's if given
    (its src/ first on the path of processes started for it)."""
    context = multiprocessing.get_context("spawn")
    with contextlib.ExitStack() as stack:
        pools = {"this": stack.enter_context(context.Pool(max(WRITER_COUNTS)))}
        if baseline is not None:
            saved = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = str(baseline.resolve())
            try:
                pools["baseline"] = stack.enter_context(context.Pool(max(WRITER_COUNTS)))
            finally:
                if saved is None:
                    del os.environ["PYTHONPATH"]
                else:
                    os.environ["PYTHONPATH"] = saved
        yield pools


def _disk(directory: str) -> str:
    found = subprocess.run(
        ["findmnt", "-no", "SOURCE,FSTYPE", "-T", directory],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return " ".join(found) or "?"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--dir", default="/var/tmp", help="a directory on the disk to store on")
    parser.add_argument("--baseline", type=Path, help="another fslab tree's src/ to compare")
    args = parser.parse_args(argv)
    if args.baseline is not None and not (args.baseline / "fslab" / "store" / "db.py").exists():
        parser.error(f"--baseline {args.baseline}: no fslab/store/db.py under it (give its src/)")

    outcomes, point_wall_s = _recorded()
    payload = sum(
        len(json.dumps(o.metrics)) + sum(len(a) for a in o.artifacts.values()) for o in outcomes
    ) / len(outcomes)
    print(f"recorded points: {len(outcomes)} from {CAMPAIGN.name} (ext4-fsync-storm --quick)")
    print(
        f"  median point wall time {point_wall_s:.1f} s (fio 3 s + 2 s ramp + setup; the"
        f" preset's default point runs 30 s + 5 s ramp), mean payload {payload / 1024:.0f} KiB,"
        f" {statistics.mean(len(o.metrics) for o in outcomes):.0f} metrics"
    )
    print(
        f"stores in {args.dir} ({_disk(args.dir)}): SQLite files, PostgreSQL with fsync on"
        f"\n1 warm-up round (untimed; then a CHECKPOINT), {args.rounds} rounds"
        f" x {POINTS_PER_WRITER} points per writer, order alternating\n"
    )
    with (
        tempfile.TemporaryDirectory(prefix="fslab-bench-", dir=args.dir) as tmp,
        running_cluster(parent=args.dir, fsync=True) as (cluster, _data),
        _pools(args.baseline) as pools,
    ):
        configs = [
            (engine, n, code)
            for engine in ("sqlite", "postgresql")
            for n in WRITER_COUNTS
            for code in pools
        ]
        rates: dict[tuple[str, int, str], list[float]] = {c: [] for c in configs}
        saves: dict[tuple[str, int, str], list[list[float]]] = {c: [] for c in configs}
        for round_ in range(-1, args.rounds):  # round -1 warms up, untimed
            order = configs if round_ % 2 == 0 else configs[::-1]
            if round_ == 0:  # recycle the warm-up's WAL, as a long-running server does
                cluster.psql("CHECKPOINT")
            for engine, n, code in order:
                name = f"r{round_}_{engine}_{n}_{code}"
                location = (
                    str(Path(tmp) / f"{name}.db")
                    if engine == "sqlite"
                    else cluster.create_database(name)
                )
                Store(location).close()  # schema created outside the timing
                rate, per_writer = _measure(pools[code], location, n, outcomes)
                if round_ >= 0:
                    rates[(engine, n, code)].append(rate)
                    saves[(engine, n, code)].extend(per_writer)
    header = (
        f"{'store':<10} {'writers':>7} {'code':<8} {'points/s':>8} {'save median':>11}"
        f" {'95% CI':>11} {'save p99':>8} {'95% CI':>11} {'% of point':>10}  goal  "
        f" {'1st save':>8} {'later p99':>9}"
    )
    print(header)
    print("-" * len(header))
    for engine, n, code in configs:
        s = [v for seconds in saves[(engine, n, code)] for v in seconds]
        median_ms, p99_ms = 1000 * statistics.median(s), 1000 * _pct(s, 0.99)
        median_low, median_high = (1000 * v for v in _ci(s, 0.5))
        p99_low, p99_high = (1000 * v for v in _ci(s, 0.99))
        share = p99_ms / 1000 / point_wall_s
        first_ms = 1000 * statistics.median(seconds[0] for seconds in saves[(engine, n, code)])
        later_ms = 1000 * _pct(
            [v for seconds in saves[(engine, n, code)] for v in seconds[1:]], 0.99
        )
        print(
            f"{engine:<10} {n:>7} {code:<8} {statistics.median(rates[(engine, n, code)]):>8.1f}"
            f" {median_ms:>8.1f} ms {median_low:>5.1f}-{median_high:<5.1f}"
            f" {p99_ms:>5.1f} ms {p99_low:>5.1f}-{p99_high:<5.1f} {100 * share:>9.3f}%"
            f"  {'met' if share < GOAL_SHARE else 'MISSED':<6}"
            f" {first_ms:>5.1f} ms {later_ms:>6.1f} ms"
        )
    print(
        f"\n% of point: the p99 save time against the {point_wall_s:.1f} s point"
        f" (goal < {100 * GOAL_SHARE:g}%); CIs: 95% bootstrap, ms;"
        "\n1st save: median of each writer's first save (its process's first statements);"
        "\nlater p99: the p99 of the saves after it; points/s: all writers, median over rounds"
    )


if __name__ == "__main__":
    main()
