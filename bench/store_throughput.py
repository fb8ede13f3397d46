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
its points one transaction each, as the runner does, under two loads:

- saturating: back to back, no pause. 8 writers and the server's 8 backends
  then share this machine's 2 CPUs, so a save mostly waits in the run queue:
  a stress figure, kept to show the store's behaviour at its limit;
- paced: the load of a fleet. A host saves one point per point wall time,
  from its own CPUs; here each writer saves once per point wall time divided
  by --compress (so that a run gathers enough saves for a p99), at offsets
  fixed in advance (open loop: a slow save does not push the next one back),
  each writer from a random phase, so saves collide only by chance. The
  compressed load is still --compress times a real fleet's (printed), and
  each save's latency is measured in full.

The goal is judged on the paced rows; the saturating ones are printed beside
them, in brackets. The stores are durable, as a user's are: the SQLite files and a private
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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pgcluster import Cluster, running_cluster  # noqa: E402

from fslab.store.db import PlannedPoint, PointOutcome, Store  # noqa: E402
from fslab.store.exchange import recorded_outcomes  # noqa: E402

CAMPAIGN = ROOT / "tests" / "data" / "campaign_fsync_quick.json"
ROUNDS = 10
POINTS_PER_WRITER = 24
PACED_POINTS_PER_WRITER = 48
PACED_ROUNDS = 2
COMPRESSION = 25.0
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
    return recorded_outcomes(data), statistics.median(walls)


def paced_cadence_s(point_wall_s: float, compression: float) -> float:
    """A paced writer's time between saves: one point's wall time, time-compressed."""
    return point_wall_s / compression


def paced_offsets(points: int, cadence_s: float, phase_s: float) -> list[float]:
    """When a paced writer saves, in seconds after the common start: one save per
    cadence from its phase, fixed in advance (open loop: a slow save does not
    push the later ones back, as a host's next point does not wait for the store)."""
    if not 0 <= phase_s < cadence_s:
        raise ValueError(f"phase {phase_s} s outside one cadence of {cadence_s} s")
    return [phase_s + i * cadence_s for i in range(points)]


def random_phases(writers: int, cadence_s: float, seed: int) -> list[float]:
    """Each writer's phase, uniform over one cadence: hosts start their points at
    unrelated times, so their saves collide only by chance."""
    return list(np.random.default_rng(seed).uniform(0.0, cadence_s, size=writers))


@dataclass(frozen=True)
class Pacing:
    """A paced writer's schedule: its offsets after `start` (a time.monotonic value)."""

    start: float
    offsets: tuple[float, ...]


def bench_campaign(store: Store, writer: int, points: int) -> int:
    """A writer's campaign of pending points, as a host's would be created."""
    return store.create_campaign(
        name="bench",
        spec={},
        spec_toml="",
        overrides={},
        host={"hostname": f"writer-{writer}"},
        device=None,
        fslab_version="bench",
        points=[PlannedPoint(i, "ext4", "ext4", {"numjobs": i}, 0) for i in range(points)],
    )


def _writer(
    location: str, writer: int, outcomes: list[PointOutcome], pacing: Pacing | None = None
) -> tuple[list[float], int]:
    """Store one campaign; returns each save's seconds and how many saves started late.

    Without pacing the points are saved back to back; with it each save starts
    at its offset after the common start (or at once, counted late, if the
    previous one overran it)."""
    seconds = []
    late = 0
    points = POINTS_PER_WRITER if pacing is None else len(pacing.offsets)
    with Store(location) as store:
        cid = bench_campaign(store, writer, points)
        for i, point in enumerate(store.points(cid)):
            if pacing is not None:
                wait = pacing.start + pacing.offsets[i] - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                else:
                    late += 1
            outcome = outcomes[(writer + i) % len(outcomes)]
            start = time.perf_counter()
            store.save_outcome(point.id, outcome)
            seconds.append(time.perf_counter() - start)
        store.set_campaign_status(cid, "complete")
    return seconds, late


def _measure(
    pool: multiprocessing.pool.Pool,
    location: str,
    writers: int,
    outcomes: list[PointOutcome],
    paced: tuple[float, int] | None = None,
) -> tuple[float, list[list[float]], int]:
    """(points stored per second, each writer's save seconds in order, late saves).

    paced: (cadence in seconds, seed of the phases), or None for back to back."""
    pacings: list[Pacing | None] = [None] * writers
    if paced is not None:
        cadence_s, seed = paced
        start = time.monotonic() + 2.0  # the writers' processes open their stores first
        pacings = [
            Pacing(start, tuple(paced_offsets(PACED_POINTS_PER_WRITER, cadence_s, phase)))
            for phase in random_phases(writers, cadence_s, seed)
        ]
    began = time.perf_counter()
    results = pool.starmap(_writer, [(location, w, outcomes, pacings[w]) for w in range(writers)])
    elapsed = time.perf_counter() - began - (2.0 if paced is not None else 0.0)
    per_writer = [seconds for seconds, _ in results]
    late = sum(n for _, n in results)
    return sum(len(seconds) for seconds in per_writer) / elapsed, per_writer, late


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
def _pools(
    baseline: Path | None, processes: int = max(WRITER_COUNTS)
) -> Iterator[dict[str, multiprocessing.pool.Pool]]:
    """Writer processes per code under test: this tree's, and the baseline's if given.

    A spawned process takes its parent's sys.path, not $PYTHONPATH, so the
    baseline's src/ goes first on this process's path while its pool starts
    (before, both pools ran this tree's code). code_under_test says what each
    pool imported."""
    context = multiprocessing.get_context("spawn")
    with contextlib.ExitStack() as stack:
        pools = {"this": stack.enter_context(context.Pool(processes))}
        if baseline is not None:
            sys.path.insert(0, str(baseline.resolve()))
            try:
                pools["baseline"] = stack.enter_context(context.Pool(processes))
            finally:
                sys.path.remove(str(baseline.resolve()))
        yield pools


def _save_path(_: int) -> str:
    from fslab.store import db

    return str(Path(db.__file__).parents[2])


def code_under_test(pools: dict[str, multiprocessing.pool.Pool]) -> dict[str, str]:
    """The source tree each pool's processes import fslab from."""
    return {code: pool.map(_save_path, [0])[0] for code, pool in pools.items()}


def _disk(directory: str) -> str:
    found = subprocess.run(
        ["findmnt", "-no", "SOURCE,FSTYPE", "-T", directory],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    return " ".join(found) or "?"


Config = tuple[str, int, str, str]  # engine, writers, load ("saturating" or "paced"), code


def _run_round(
    pools: dict[str, multiprocessing.pool.Pool],
    cluster: Cluster,
    tmp: str,
    name: str,
    config: Config,
    outcomes: list[PointOutcome],
    paced: tuple[float, int] | None,
) -> tuple[float, list[list[float]], int]:
    engine, n, _load, code = config
    location = (
        str(Path(tmp) / f"{name}.db") if engine == "sqlite" else cluster.create_database(name)
    )
    Store(location).close()  # schema created outside the timing
    return _measure(pools[code], location, n, outcomes, paced)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="saturating rounds")
    parser.add_argument("--paced-rounds", type=int, default=PACED_ROUNDS)
    parser.add_argument(
        "--compress",
        type=float,
        default=COMPRESSION,
        help="paced writers save once per point wall time divided by this",
    )
    parser.add_argument("--dir", default="/var/tmp", help="a directory on the disk to store on")
    parser.add_argument("--baseline", type=Path, help="another fslab tree's src/ to compare")
    args = parser.parse_args(argv)
    if args.baseline is not None and not (args.baseline / "fslab" / "store" / "db.py").exists():
        parser.error(f"--baseline {args.baseline}: no fslab/store/db.py under it (give its src/)")
    if args.compress < 1:
        parser.error(f"--compress {args.compress}: must be at least 1 (1 = real time)")

    outcomes, point_wall_s = _recorded()
    cadence_s = paced_cadence_s(point_wall_s, args.compress)
    writers = max(WRITER_COUNTS)
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
        f"\n1 warm-up round (untimed; then a CHECKPOINT), {args.rounds} saturating rounds"
        f" x {POINTS_PER_WRITER} points per writer, order alternating"
        f"\nsaturating: every writer saves back to back (the stress figure: {writers} writers"
        f" and the server on {os.cpu_count()} CPUs)"
        f"\npaced: {args.paced_rounds} rounds x {PACED_POINTS_PER_WRITER} points per writer;"
        f" each saves once per {point_wall_s:.1f} s / {args.compress:g} = {cadence_s:.3f} s"
        f" (time compressed {args.compress:g}x), open loop, each writer at a random phase:"
        f"\n  {writers} writers offer {writers / cadence_s:.1f} saves/s, where a fleet of"
        f" {writers} hosts offers {writers / point_wall_s:.2f}\n"
    )
    with (
        tempfile.TemporaryDirectory(prefix="fslab-bench-", dir=args.dir) as tmp,
        running_cluster(parent=args.dir, fsync=True) as (cluster, _data),
        _pools(args.baseline) as pools,
    ):
        print(", ".join(f"{code}: {tree}" for code, tree in code_under_test(pools).items()))
        saturating: list[Config] = [
            (engine, n, "saturating", code)
            for engine in ("sqlite", "postgresql")
            for n in WRITER_COUNTS
            for code in pools
        ]
        paced: list[Config] = [
            (engine, writers, "paced", code)
            for engine in ("sqlite", "postgresql")
            for code in pools
        ]
        configs = saturating + paced
        rates: dict[Config, list[float]] = {c: [] for c in configs}
        saves: dict[Config, list[list[float]]] = {c: [] for c in configs}
        late: dict[Config, int] = {c: 0 for c in configs}
        for round_ in range(-1, args.rounds):  # round -1 warms up, untimed
            order = saturating if round_ % 2 == 0 else saturating[::-1]
            if round_ == 0:  # recycle the warm-up's WAL, as a long-running server does
                cluster.psql("CHECKPOINT")
            for config in order:
                name = f"r{round_}_{config[0]}_{config[1]}_{config[3]}"
                rate, per_writer, _ = _run_round(pools, cluster, tmp, name, config, outcomes, None)
                if round_ >= 0:
                    rates[config].append(rate)
                    saves[config].extend(per_writer)
        for round_ in range(args.paced_rounds):
            for i, config in enumerate(paced if round_ % 2 == 0 else paced[::-1]):
                name = f"p{round_}_{config[0]}_{config[3]}"
                seed = 1000 * round_ + i
                rate, per_writer, n_late = _run_round(
                    pools, cluster, tmp, name, config, outcomes, (cadence_s, seed)
                )
                rates[config].append(rate)
                saves[config].extend(per_writer)
                late[config] += n_late
    header = (
        f"{'store':<10} {'writers':>7} {'load':<10} {'code':<8} {'points/s':>8}"
        f" {'save median':>11} {'95% CI':>11} {'save p99':>8} {'95% CI':>11} {'% of point':>10}"
        f"  goal    {'1st save':>8} {'later p99':>9}"
    )
    print(header)
    print("-" * len(header))
    for config in configs:
        engine, n, load, code = config
        s = [v for seconds in saves[config] for v in seconds]
        median_ms, p99_ms = 1000 * statistics.median(s), 1000 * _pct(s, 0.99)
        median_low, median_high = (1000 * v for v in _ci(s, 0.5))
        p99_low, p99_high = (1000 * v for v in _ci(s, 0.99))
        share = p99_ms / 1000 / point_wall_s
        first_ms = 1000 * statistics.median(seconds[0] for seconds in saves[config])
        later_ms = 1000 * _pct([v for seconds in saves[config] for v in seconds[1:]], 0.99)
        judged = "met" if share < GOAL_SHARE else "MISSED"
        print(
            f"{engine:<10} {n:>7} {load:<10} {code:<8} {statistics.median(rates[config]):>8.1f}"
            f" {median_ms:>8.1f} ms {median_low:>5.1f}-{median_high:<5.1f}"
            f" {p99_ms:>5.1f} ms {p99_low:>5.1f}-{p99_high:<5.1f} {100 * share:>9.3f}%"
            f"  {judged if load == 'paced' else f'({judged})':<8}"
            f" {first_ms:>5.1f} ms {later_ms:>6.1f} ms"
        )
    n_late = ", ".join(f"{c[0]} {c[3]} {late[c]}" for c in paced)
    print(
        f"\n% of point: the p99 save time against the {point_wall_s:.1f} s point"
        f" (goal < {100 * GOAL_SHARE:g}%); CIs: 95% bootstrap, ms;"
        "\ngoal: judged on the paced rows, a fleet's load (each host saves once per point,"
        " from its own CPUs);\n  (in brackets) the saturating rows, a stress figure: writers"
        " saving back to back, competing with the server for this machine's CPUs;"
        "\n1st save: median of each writer's first save (its process's first statements);"
        "\nlater p99: the p99 of the saves after it; points/s: all writers, median over rounds"
        f" (paced: the offered rate); paced saves started late: {n_late}"
    )


if __name__ == "__main__":
    main()
