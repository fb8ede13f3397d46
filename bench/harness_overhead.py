#!/usr/bin/env python3
"""Does fslab measure what fio measures, and what does orchestration cost?

(a) Fidelity: a fslab point vs. the identical commands replayed by hand (the
    mkfs, mount and fio argv fslab recorded, on a fresh loop image each time),
    alternating, N pairs; prints the ratio of median IOPS (goal >= 0.98).
(b) Overhead: a 10-point x 5 s sweep through `run_campaign`; prints
    (campaign wall time - sum of workload runtimes) / sum of runtimes
    (goal <= 0.10).

Run as root: .venv/bin/python bench/harness_overhead.py [--pairs 5] [--runtime 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fslab.hostfacts import collect_host_facts
from fslab.runner import RunOptions, run_campaign, run_point, start_campaign
from fslab.spec import expand_points, load_spec, validate_spec
from fslab.store.db import Store
from fslab.target.loop import LoopImage

# the seed workload, from the preset that defines it (runtime and numjobs set per point)
SEED_WORKLOAD = load_spec("ext4-fsync-storm")[0].workload.model_dump(mode="json")


def spec_for(runtime_s: float, numjobs: list[int]) -> dict:
    return {
        "name": "bench-harness",
        "target": {"kind": "ram", "size": "2GiB"},
        "filesystems": [
            {
                "label": "ext4",
                "type": "ext4",
                "mkfs_options": ["-E", "lazy_itable_init=0,lazy_journal_init=0"],
                "mount_options": ["noatime"],
            }
        ],
        "workload": SEED_WORKLOAD,
        "sweep": {"numjobs": numjobs},
        "run": {"runtime": f"{runtime_s:g}s"},
    }


def replay_by_hand(commands: list[list[str]], size_bytes: int) -> float:
    """Replay fslab's recorded mkfs/mount/fio commands on a fresh device; return IOPS."""
    old_device = next(argv[-1] for argv in commands if argv[0].startswith("mkfs"))
    mount_argv = next(argv for argv in commands if argv[0] == "mount")
    old_mountpoint = mount_argv[-1]
    with LoopImage(size_bytes) as image, tempfile.TemporaryDirectory() as mountpoint:

        def fix(argv: list[str]) -> list[str]:
            return [
                a.replace(old_device, image.device).replace(old_mountpoint, mountpoint)
                for a in argv
            ]

        iops = 0.0
        mounted = False
        try:
            for argv in commands:
                if argv[0] in ("losetup", "umount", "dumpe2fs"):
                    continue
                proc = subprocess.run(fix(argv), capture_output=True, text=True, check=True)
                mounted = mounted or argv[0] == "mount"
                if argv[0] == "fio" and "--create_only=1" not in argv:
                    job = json.loads(proc.stdout[proc.stdout.index("{") :])["jobs"][0]
                    iops = float(job["write"]["iops"])
                if argv[0] == "fio" and "--create_only=1" in argv:
                    subprocess.run(["sync"], check=True)
        finally:
            if mounted:
                subprocess.run(["umount", mountpoint], check=False)
    return iops


def fidelity(pairs: int, runtime_s: float, numjobs: int) -> tuple[list[float], list[float]]:
    spec = validate_spec(spec_for(runtime_s, [numjobs]))
    (point,) = expand_points(spec)
    host = collect_host_facts()
    options = RunOptions(collect=False)
    fslab_iops, hand_iops = [], []
    commands: list[list[str]] = []
    for i in range(pairs):  # pair 0 starts with fslab, so there are commands to replay
        for who in ("fslab", "hand") if i % 2 == 0 else ("hand", "fslab"):
            if who == "fslab":
                outcome = run_point(spec, point, options=options, host=host, formatted_before=False)
                assert outcome.status == "ok", outcome.error
                commands = [argv for argv, _, _ in outcome.commands]
                fslab_iops.append(outcome.metrics["fio.write.iops"])
            else:
                hand_iops.append(replay_by_hand(commands, spec.target.size_bytes))
    return fslab_iops, hand_iops


def overhead(points: int, runtime_s: float) -> tuple[float, float, float]:
    """(campaign wall s, sum of fio's measured runtimes s, sum of fio process wall s)."""
    spec = validate_spec(spec_for(runtime_s, list(range(1, points + 1))))
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        cid = start_campaign(store, spec, "", overrides={}, options=RunOptions(collect=False))
        start = time.monotonic()
        run_campaign(store, cid, options=RunOptions(collect=False))
        wall_s = time.monotonic() - start
        metrics = store.metrics(cid)
        fio_wall_s = sum(
            secs
            for p in store.points(cid)
            for argv, _, secs in store.command_records(p.id)
            if argv[0] == "fio"
        )
    runtimes = [m["fio.runtime_s"] for m in metrics.values()]
    return wall_s, sum(runtimes), fio_wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--runtime", type=float, default=5.0)
    parser.add_argument("--numjobs", type=int, default=16)
    parser.add_argument("--points", type=int, default=10)
    args = parser.parse_args()

    fslab_iops, hand_iops = fidelity(args.pairs, args.runtime, args.numjobs)
    ratio = statistics.median(fslab_iops) / statistics.median(hand_iops)
    print(
        f"(a) fidelity, {args.pairs} alternating pairs, numjobs={args.numjobs}, "
        f"{args.runtime:g} s each"
    )
    print(f"    fslab IOPS: {', '.join(f'{v:.0f}' for v in fslab_iops)}")
    print(f"    hand  IOPS: {', '.join(f'{v:.0f}' for v in hand_iops)}")
    print(f"    ratio of medians fslab/hand = {ratio:.3f}  (goal >= 0.98)")

    wall_s, work_s, fio_wall_s = overhead(args.points, args.runtime)
    print(f"(b) orchestration, {args.points} points x {args.runtime:g} s")
    print(f"    wall {wall_s:.1f} s, fio measured {work_s:.1f} s, fio processes {fio_wall_s:.1f} s")
    print(f"    overhead vs measured runtime = {(wall_s - work_s) / work_s:.3f}  (goal <= 0.10)")
    print(
        f"    of which fio's own start-up/teardown = {(fio_wall_s - work_s) / work_s:.3f}; "
        f"fslab's own = {(wall_s - fio_wall_s) / work_s:.3f}"
    )


if __name__ == "__main__":
    main()
