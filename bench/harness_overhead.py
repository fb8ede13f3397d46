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

Run as root under the machine lock:
  flock -x /work/machine.lock .venv/bin/python bench/harness_overhead.py [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from fslab.hostfacts import collect_host_facts
from fslab.runner import RunOptions, run_campaign, run_point, start_campaign
from fslab.spec import Spec, expand_points, load_spec
from fslab.store.db import Store
from fslab.target.loop import image_name
from fslab.timing import CampaignTiming, PointTiming

NUMJOBS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]  # 10 sweep points of the seed workload
DESCRIBE = ("dumpe2fs", "xfs_info", "btrfs")  # fslab's record of what mkfs built: not by hand


def bench_spec(numjobs: list[int], runtime_s: float, ramp_s: float) -> Spec:
    """The ext4-fsync-storm preset's reporter configuration over the given job counts."""
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            f"sweep.numjobs={json.dumps(numjobs)}",
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


def fidelity(pairs: int, spec: Spec) -> tuple[list[float], list[float]]:
    point = expand_points(spec)[0]
    host = collect_host_facts()
    fslab_iops, hand_iops = [], []
    commands: list[list[str]] = []
    for i in range(pairs):  # pair 0 starts with fslab, so there are commands to replay
        for who in ("fslab", "hand") if i % 2 == 0 else ("hand", "fslab"):
            if who == "fslab":
                outcome = run_point(
                    spec, point, options=RunOptions(), host=host, formatted_before=False
                )
                assert outcome.status == "ok", outcome.error
                commands = [argv for argv, _, _ in outcome.commands]
                fslab_iops.append(outcome.metrics["fio.write.iops"])
            else:
                hand_iops.append(replay_by_hand(commands, spec.target.size_bytes))
    return fslab_iops, hand_iops


def campaign(spec: Spec, mode: str) -> tuple[float, CampaignTiming, list[list[list[str]]]]:
    """(wall s, the campaign's own timing, every run's commands) of one campaign."""
    options = RunOptions(collect=mode)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.db") as store:
        cid = start_campaign(store, spec, "", overrides={}, options=options)
        start = time.monotonic()
        run_campaign(store, cid, options=options)
        wall_s = time.monotonic() - start
        points = store.points(cid)
        bad = [p for p in points if p.status != "ok"]
        assert not bad, [p.error for p in bad]
        timing = CampaignTiming.total(t for p in points if (t := PointTiming.from_facts(p.facts)))
        commands = [[argv for argv, _, _ in store.command_records(p.id)] for p in points]
    return wall_s, timing, commands


def by_hand(all_commands: list[list[list[str]]], size_bytes: int) -> float:
    start = time.monotonic()
    for commands in all_commands:
        replay_by_hand(commands, size_bytes)
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="campaign/by-hand pairs for (b)")
    parser.add_argument("--fidelity-pairs", type=int, default=5)
    parser.add_argument("--runtime", type=float, default=8.0)
    parser.add_argument("--ramp", type=float, default=2.0)
    parser.add_argument("--fidelity-numjobs", type=int, default=16)
    parser.add_argument("--mode", choices=["separate", "inline"], default="separate")
    parser.add_argument("--skip-fidelity", action="store_true")
    args = parser.parse_args()
    budget_s = args.runtime + args.ramp

    if not args.skip_fidelity:
        spec = bench_spec([args.fidelity_numjobs], args.runtime, args.ramp)
        fslab_iops, hand_iops = fidelity(args.fidelity_pairs, spec)
        ratio = statistics.median(fslab_iops) / statistics.median(hand_iops)
        print(
            f"(a) fidelity, {args.fidelity_pairs} alternating pairs, "
            f"numjobs={args.fidelity_numjobs}, {args.runtime:g} s after a {args.ramp:g} s ramp"
        )
        print(f"    fslab IOPS: {', '.join(f'{v:.0f}' for v in fslab_iops)}")
        print(f"    hand  IOPS: {', '.join(f'{v:.0f}' for v in hand_iops)}")
        print(f"    ratio of medians fslab/hand = {ratio:.3f}  (goal >= 0.98)", flush=True)

    spec = bench_spec(NUMJOBS, args.runtime, args.ramp)
    runs = len(expand_points(spec, args.mode))
    print(
        f"(b) wall time, {len(NUMJOBS)}-point campaign (numjobs {NUMJOBS}), "
        f"--collect={args.mode}: {runs} runs of {args.runtime:g} s after a {args.ramp:g} s "
        f"ramp, vs the same commands by hand; {args.pairs} alternating pairs",
        flush=True,
    )
    fslab_walls, hand_walls, timings = [], [], []
    commands: list[list[list[str]]] = []
    for i in range(args.pairs):
        for who in ("fslab", "hand") if i % 2 == 0 else ("hand", "fslab"):
            if who == "fslab":
                wall_s, timing, commands = campaign(spec, args.mode)
                fslab_walls.append(wall_s)
                timings.append(timing)
                print(f"    pair {i}: fslab {wall_s:.1f} s ({wall_s / runs / budget_s:.3f})")
            else:
                if not commands:  # pair 1 starts by hand: commands from a campaign first
                    _, _, commands = campaign(spec, args.mode)
                hand_s = by_hand(commands, spec.target.size_bytes)
                hand_walls.append(hand_s)
                print(f"    pair {i}: hand  {hand_s:.1f} s ({hand_s / runs / budget_s:.3f})")
    fslab_per_run = statistics.median(fslab_walls) / runs
    hand_per_run = statistics.median(hand_walls) / runs
    print(
        f"    per run: fslab {fslab_per_run:.2f} s = {fslab_per_run / budget_s:.3f} x "
        f"(runtime + ramp)  (goal <= 1.10); by hand {hand_per_run:.2f} s = "
        f"{hand_per_run / budget_s:.3f} x; fslab/hand = {fslab_per_run / hand_per_run:.3f}"
    )
    best = min(timings, key=lambda t: t.wall_s)
    print(f"    where fslab's time went (fastest campaign): {best.describe()}")


if __name__ == "__main__":
    main()
