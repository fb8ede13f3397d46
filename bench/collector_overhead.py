#!/usr/bin/env python3
"""What do the collectors cost? IOPS with all collectors on vs off, side by side.

The ext4-fsync-storm configuration (ext4 default journal, 16 KiB random
buffered writes + fsync) at 64 and 1024 jobs, alternating on/off for N pairs
on fresh filesystems; prints the ratio of median IOPS on/off per job count
(goal >= 0.95). Fold speed (goal: report samples/s on >= 1 million samples)
is measured by bench/fold_speed.py, which this script runs last unless
--skip-fold is given.

Run as root: .venv/bin/python bench/collector_overhead.py [--pairs 3] [--runtime 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from fslab.hostfacts import collect_host_facts
from fslab.runner import RunOptions, run_point
from fslab.spec import expand_points, load_spec


def measure(numjobs: int, pairs: int, runtime_s: float, ramp_s: float) -> dict[str, list[float]]:
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            f"sweep.numjobs=[{numjobs}]",
            f'run.runtime="{runtime_s:g}s"',
            f'run.ramp="{ramp_s:g}s"',
        ],
    )
    point = next(p for p in expand_points(spec) if p.filesystem.label == "ext4-default")
    host = collect_host_facts()
    iops: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(pairs):
        for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
            outcome = run_point(
                spec,
                point,
                options=RunOptions(collect=mode == "on"),
                host=host,
                formatted_before=False,
            )
            if outcome.status != "ok":
                raise SystemExit(f"point failed: {outcome.error}")
            iops[mode].append(outcome.metrics["fio.write.iops"])
            if mode == "on":
                bad = {n: s for n, (s, _) in outcome.collectors.items() if s != "ok"}
                if bad:
                    print(f"    note: collectors not ok: {bad}")
    return iops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--runtime", type=float, default=10.0)
    parser.add_argument("--ramp", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--skip-fold", action="store_true")
    args = parser.parse_args()

    print(
        f"collectors on vs off, ext4-default, {args.pairs} alternating pairs, "
        f"{args.runtime:g} s + {args.ramp:g} s ramp"
    )
    for numjobs in args.jobs:
        iops = measure(numjobs, args.pairs, args.runtime, args.ramp)
        ratio = statistics.median(iops["on"]) / statistics.median(iops["off"])
        print(
            f"  numjobs={numjobs}: on {', '.join(f'{v:.0f}' for v in iops['on'])}; "
            f"off {', '.join(f'{v:.0f}' for v in iops['off'])}"
        )
        print(f"  numjobs={numjobs}: ratio of medians on/off = {ratio:.3f}  (goal >= 0.95)")
    if not args.skip_fold:
        print("fold speed (bench/fold_speed.py):", flush=True)
        subprocess.run([sys.executable, str(Path(__file__).with_name("fold_speed.py"))], check=True)


if __name__ == "__main__":
    main()
