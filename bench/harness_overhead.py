#!/usr/bin/env python3
"""Does fslab measure what fio measures, and what does a point cost in wall time?

(a) Fidelity: a clean fslab point vs the identical commands replayed by hand
    (the mkfs, losetup, mount and fio argv fslab recorded, on a fresh sparse
    image each time), alternating, N pairs; prints the ratio of median IOPS
    (goal >= 0.98).
(b) Wall time: a 10-point campaign with collectors on (default
    --collect=separate: a clean repetition and an evidence run per point, so
    20 runs) through `run_campaign`, side by side with the same commands run
    by hand (truncate, mkfs, losetup, mount, fio layout, sync, fio, umount,
    losetup -d, for every run, no collectors), alternating, N pairs. Prints
    the wall time per run over (runtime + ramp) for both (goal for fslab:
    <= 1.10) and the campaign's own breakdown: measuring, setup, teardown,
    post-processing and how much of that overlapped the next point's setup.

The figure of (b) is per run: the campaign's wall time (planning to the last
point's post-processing) divided by its runs, evidence runs included, over
runtime + ramp. A pair takes ~8 min with the defaults; each `wall` or
`fidelity` call appends its records to the results file as they finish, and
`table` prints both parts from it. Run as root under the machine lock, a pair
at a time:
  flock -x /work/machine.lock .venv/bin/python bench/harness_overhead.py wall --pairs 1
  flock -x /work/machine.lock .venv/bin/python bench/harness_overhead.py fidelity --pairs 5
  .venv/bin/python bench/harness_overhead.py table
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from fslab.analyze.campaign.stats import bootstrap_median_ci, interval_verdict
from fslab.base.hostfacts import HostFacts, collect_host_facts
from fslab.base.timing import CampaignTiming
from fslab.measure.point import RunOptions, run_point
from fslab.run.campaign import run_campaign, start_campaign
from fslab.spec.load import load_spec
from fslab.spec.model import Spec
from fslab.spec.points import Point, expand_points
from fslab.store.db import Store
from fslab.target.loop import image_name

NUMJOBS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]  # 10 sweep points of the seed workload
WALL_GOAL = 1.10  # per run, over runtime + ramp
FIDELITY_GOAL = 0.98  # fslab's clean IOPS over the same commands by hand
DEFAULT_RESULTS = Path("harness_overhead.jsonl")
DESCRIBE = ("dumpe2fs", "xfs_info", "btrfs")  # fslab's record of what mkfs built: not by hand


def bench_spec(numjobs: list[int], runtime_s: float, ramp_s: float) -> Spec:
    """The ext4-fsync-storm preset's reporter configuration over the given job counts."""
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            f"sweep.numjobs={json.dumps(numjobs)}",
            "run.adaptive=false",  # the grid's points (the preset scans)
            f'run.runtime="{runtime_s:g}s"',
            f'run.ramp="{ramp_s:g}s"',
        ],
    )
    keep = [fs for fs in spec.filesystems if fs.label == "ext4-default"]
    return spec.model_copy(update={"filesystems": keep})


def replay_by_hand(commands: list[list[str]], size_bytes: int) -> float:
    """Run one point's recorded commands on a fresh image and mount point; return IOPS.

    The image, loop device and mount point are new ones; everything else is
    the argv fslab stored, in its order.
    """
    old_image = next(argv[-1] for argv in commands if argv[:1] == ["losetup"] and "--find" in argv)
    old_device = next(argv[-2] for argv in commands if argv[:1] == ["mount"])
    old_mountpoint = next(argv[-1] for argv in commands if argv[:1] == ["mount"])
    image = os.path.join("/dev/shm", image_name())
    mountpoint = tempfile.mkdtemp(prefix="fslab-hand-")
    device = ""
    iops = 0.0
    try:
        subprocess.run(["truncate", "-s", str(size_bytes), image], check=True)
        for argv in commands:
            if argv[0] in DESCRIBE:
                continue
            argv = [
                a.replace(old_image, image)
                .replace(old_mountpoint, mountpoint)
                .replace(old_device, device or old_device)
                for a in argv
            ]
            proc = subprocess.run(argv, capture_output=True, text=True, check=True)
            if argv[0] == "losetup" and "--find" in argv:
                device = proc.stdout.strip()
            if argv[0] == "fio" and "--create_only=1" not in argv:
                job = json.loads(proc.stdout[proc.stdout.index("{") :])["jobs"][0]
                iops = float(job["write"]["iops"])
    finally:
        subprocess.run(["umount", mountpoint], capture_output=True, check=False)
        if device:
            subprocess.run(["losetup", "--detach", device], capture_output=True, check=False)
        os.rmdir(mountpoint)
        if os.path.exists(image):
            os.unlink(image)
    return iops


@dataclass
class Campaign:
    """One campaign as the bench saw it."""

    wall_s: float
    timing: CampaignTiming
    commands: list[list[list[str]]]  # every run's argv
    collector_s: dict[str, float]  # "<name>.start_s" / ".stop_s": summed over the runs


def campaign(spec: Spec, mode: str) -> Campaign:
    """Run one campaign in a scratch store."""
    options = RunOptions(collect=mode)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        cid = start_campaign(store, spec, "", overrides={}, options=options)
        start = time.monotonic()
        run_campaign(store, cid, options=options)
        wall_s = time.monotonic() - start
        points = store.points(cid)
        bad = [p for p in points if p.status != "ok"]
        assert not bad, [p.error for p in bad]
        timing = CampaignTiming.total(t for p in points if (t := p.facts.point_timing))
        commands = [[argv for argv, _, _ in store.command_records(p.id)] for p in points]
        collector_s: dict[str, float] = {}
        for p in points:
            for name, phases in (p.facts.collector_seconds or {}).items():
                for phase, seconds in phases.items():
                    key = f"{name}.{phase}"
                    collector_s[key] = collector_s.get(key, 0.0) + seconds
    return Campaign(wall_s, timing, commands, collector_s)


def by_hand(all_commands: list[list[list[str]]], spec: Spec) -> float:
    start = time.monotonic()
    for commands in all_commands:
        replay_by_hand(commands, spec.target.size_bytes)
    return time.monotonic() - start


@dataclass
class Record:
    """One measured campaign or by-hand replay (wall) or one fidelity run, as appended."""

    kind: str  # wall | fidelity
    who: str  # fslab | hand
    pair: int  # pair number within its kind and settings; even: fslab went first
    runtime_s: float
    ramp_s: float
    mode: str  # the campaign's --collect
    runs: int  # runs in the campaign (clean and evidence), 1 for fidelity
    wall_s: float = 0.0
    iops: float = 0.0
    numjobs: int = 0  # fidelity only
    timing: dict[str, float] = field(default_factory=dict)  # fslab campaigns: CampaignTiming
    collector_s: dict[str, float] = field(default_factory=dict)  # fslab: Campaign.collector_s
    commands: list[list[list[str]]] = field(default_factory=list)  # fslab: every run's argv
    at: str = ""

    def settings(self) -> tuple[str, float, float, str, int]:
        return (self.kind, self.runtime_s, self.ramp_s, self.mode, self.numjobs)


def load_records(path: Path) -> list[Record]:
    if not path.exists():
        return []
    return [Record(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def append(path: Path, record: Record) -> None:
    record.at = time.strftime("%Y-%m-%dT%H:%M:%S")
    with path.open("a") as fh:
        fh.write(json.dumps(asdict(record)) + "\n")


def pairs_done(records: list[Record], like: Record) -> int:
    return len({r.pair for r in records if r.settings() == like.settings()})


def run_fidelity(args: argparse.Namespace) -> None:
    spec = bench_spec([args.numjobs], args.runtime, args.ramp)
    point = expand_points(spec)[0]
    host = collect_host_facts()
    like = Record("fidelity", "", 0, args.runtime, args.ramp, "off", 1, numjobs=args.numjobs)
    first = pairs_done(load_records(args.results), like)
    commands: list[list[str]] = []
    for i in range(first, first + args.pairs):
        # an odd pair starts by hand: replay the commands of a fslab run made just before
        order = ("fslab", "hand") if i % 2 == 0 else ("hand", "fslab")
        if order[0] == "hand" and not commands:
            commands = _fslab_point(spec, point, host)[1]
        for who in order:
            if who == "fslab":
                iops, commands = _fslab_point(spec, point, host)
            else:
                iops = replay_by_hand(commands, spec.target.size_bytes)
            append(args.results, replace(like, who=who, pair=i, iops=iops))
            print(f"    fidelity pair {i}: {who:5s} {iops:.0f} IOPS", flush=True)
    print_table(load_records(args.results))


def _fslab_point(spec: Spec, point: Point, host: HostFacts) -> tuple[float, list[list[str]]]:
    outcome = run_point(spec, point, options=RunOptions(), host=host, formatted_before=False)
    assert outcome.status == "ok", outcome.error
    return outcome.metrics["fio.write.iops"], [argv for argv, _, _ in outcome.commands]


def run_walls(args: argparse.Namespace) -> None:
    spec = bench_spec(NUMJOBS, args.runtime, args.ramp)
    runs = len(expand_points(spec, args.mode))
    like = Record("wall", "", 0, args.runtime, args.ramp, args.mode, runs)
    records = load_records(args.results)
    first = pairs_done(records, like)
    earlier = [r for r in records if r.settings() == like.settings() and r.commands]
    commands = earlier[-1].commands if earlier else []
    for i in range(first, first + args.pairs):
        order = ("fslab", "hand") if i % 2 == 0 else ("hand", "fslab")
        if order[0] == "hand" and not commands:  # nothing to replay yet: a campaign first
            commands = campaign(spec, args.mode).commands
        for who in order:
            if who == "fslab":
                ran = campaign(spec, args.mode)
                commands = ran.commands
                record = replace(like, who=who, pair=i, wall_s=ran.wall_s)
                record.timing, record.collector_s = asdict(ran.timing), ran.collector_s
                record.commands = commands
            else:
                record = replace(like, who=who, pair=i, wall_s=by_hand(commands, spec))
            append(args.results, record)
            per_run = record.wall_s / runs
            print(
                f"    pair {i}: {who:5s} {record.wall_s:.1f} s, {per_run:.2f} s a run "
                f"({per_run / (args.runtime + args.ramp):.3f} x runtime + ramp)",
                flush=True,
            )
    print_table(load_records(args.results))


def print_table(records: list[Record]) -> None:
    """Both parts from the results file: fidelity, then wall time per run."""
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault(r.settings(), []).append(r)
    for (kind, runtime_s, ramp_s, mode, numjobs), group in sorted(groups.items()):
        fslab = [r for r in group if r.who == "fslab"]
        hand = [r for r in group if r.who == "hand"]
        if not fslab or not hand:
            continue
        pairs = len({r.pair for r in group})
        if kind == "fidelity":
            ratio = statistics.median(r.iops for r in fslab) / statistics.median(
                r.iops for r in hand
            )
            print(
                f"(a) fidelity: a clean fslab point vs its commands by hand, {pairs} "
                f"alternating pairs, numjobs={numjobs}, {runtime_s:g} s after a {ramp_s:g} s ramp"
            )
            print(f"    fslab IOPS: {', '.join(f'{r.iops:.0f}' for r in fslab)}")
            print(f"    hand  IOPS: {', '.join(f'{r.iops:.0f}' for r in hand)}")
            print(f"    ratio of medians fslab/hand = {ratio:.3f}")
            ratios = pair_ratios(fslab, hand, lambda r: r.iops)
            print("    " + median_ci_line("fslab/hand IOPS per pair", ratios, FIDELITY_GOAL, ">="))
            continue
        runs = group[0].runs
        budget_s = runtime_s + ramp_s
        fslab_run = statistics.median(r.wall_s for r in fslab) / runs
        hand_run = statistics.median(r.wall_s for r in hand) / runs
        print(
            f"(b) wall time per run: a {len(NUMJOBS)}-point campaign (numjobs {NUMJOBS}), "
            f"--collect={mode}: {runs} runs (clean and evidence) of {runtime_s:g} s after a "
            f"{ramp_s:g} s ramp, vs the same commands by hand (no collectors); "
            f"{pairs} alternating pairs"
        )
        print("    figure: campaign wall time / runs / (runtime + ramp), median over pairs")
        print(f"    fslab walls: {', '.join(f'{r.wall_s:.1f}' for r in fslab)} s")
        print(f"    hand  walls: {', '.join(f'{r.wall_s:.1f}' for r in hand)} s")
        verdict = "meets" if fslab_run / budget_s <= WALL_GOAL else "misses"
        print(
            f"    per run: fslab {fslab_run:.2f} s = {fslab_run / budget_s:.3f} x (runtime + ramp) "
            f"(goal <= {WALL_GOAL:.2f}: {verdict}); by hand {hand_run:.2f} s = "
            f"{hand_run / budget_s:.3f} x; fslab/hand = {fslab_run / hand_run:.3f}"
        )
        per_run = [r.wall_s / runs / budget_s for r in fslab]
        print("    " + median_ci_line("fslab per run / (runtime + ramp)", per_run, WALL_GOAL, "<="))
        best = min(fslab, key=lambda r: r.wall_s)
        timing = CampaignTiming(**best.timing)
        outside_s = best.wall_s - timing.wall_s
        print(f"    where fslab's time went (fastest campaign): {timing.describe()}")
        print(
            "    per run: "
            + ", ".join(
                f"{name} {getattr(timing, name + '_s') / runs:.2f} s"
                for name in ("setup", "measure", "teardown", "post_wait")
            )
            + f"; outside the points (store, campaign loop) {outside_s / runs:.2f} s"
        )
        if best.collector_s:
            print(
                "    collectors' start and stop, s a run: "
                + ", ".join(f"{k} {v / runs:.3f}" for k, v in sorted(best.collector_s.items()))
            )


def pair_ratios(
    fslab: list[Record], hand: list[Record], value: Callable[[Record], float]
) -> list[float]:
    """fslab's value over hand's, pair by pair (pairs that have both sides)."""
    by_pair = {r.pair: value(r) for r in hand}
    return [value(r) / by_pair[r.pair] for r in fslab if by_pair.get(r.pair)]


def median_ci_line(what: str, values: list[float], goal: float, sense: str) -> str:
    """The median of `values`, its 95% percentile-bootstrap interval and its verdict
    against the goal (analyze.stats.interval_verdict)."""
    if len(values) < 2:
        median = statistics.median(values)
        return f"{what}: median {median:.3f} over {len(values)} pair(s), no interval (needs 2)"
    low, high = bootstrap_median_ci(values, rng=0)
    verdict = interval_verdict(low, high, goal, at_least=sense == ">=")
    return (
        f"{what}: median {statistics.median(values):.3f} [{low:.3f}, {high:.3f}] over "
        f"{len(values)} pairs, 95% bootstrap CI (goal {sense} {goal:.2f}: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("wall", "(b): campaign vs by-hand pairs (as root, under the machine lock)"),
        ("fidelity", "(a): clean point vs by-hand pairs (as root, under the machine lock)"),
    ):
        run = sub.add_parser(name, help=helptext)
        run.add_argument("--pairs", type=int, default=1, help="pairs to add")
        run.add_argument("--runtime", type=float, default=8.0)
        run.add_argument("--ramp", type=float, default=2.0)
        run.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
        if name == "wall":
            run.add_argument("--mode", choices=["separate", "inline"], default="separate")
        else:
            run.add_argument("--numjobs", type=int, default=16)
    table = sub.add_parser("table", help="print both parts from a results file")
    table.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args()
    if args.command == "wall":
        run_walls(args)
    elif args.command == "fidelity":
        run_fidelity(args)
    else:
        print_table(load_records(args.results))


if __name__ == "__main__":
    main()
