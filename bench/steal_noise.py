#!/usr/bin/env python3
"""Does the host's steal time explain how much one run's IOPS differs from the next?

A guest's /proc/stat counts `steal`: time its vCPUs were runnable while the
hypervisor ran someone else. fslab stores it with every run (facts.host_cpu)
and comparisons warn when the two sides' steal differs (fslab.analyze.drift);
this bench measures what steal costs, so the warning rests on a figure.

N clean single-point runs of the fsync storm (ext4, the reporter's default
journal, 8 jobs, short runs), through fslab's runner as a campaign runs
them; per run its write IOPS and its steal in percent of the CPUs. It prints
the correlation of log IOPS with steal, the slope (IOPS per point of steal,
95% CI) and how much of the runs' variance steal accounts for.

  flock -x /work/machine.lock .venv/bin/python bench/steal_noise.py --runs 60
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
from scipy import stats

from fslab.hostfacts import collect_host_facts
from fslab.runner import RunOptions, run_point
from fslab.spec import expand_points, load_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--numjobs", type=int, default=8)
    parser.add_argument("--runtime", default="3s")
    parser.add_argument("--ramp", default="1s")
    args = parser.parse_args()
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            f"sweep.numjobs=[{args.numjobs}]",
            f'run.runtime="{args.runtime}"',
            f'run.ramp="{args.ramp}"',
            'target.size="5GiB"',
        ],
    )
    point = next(
        p for p in expand_points(spec) if p.filesystem.label == "ext4-default" and p.role == "clean"
    )
    host = collect_host_facts()
    iops: list[float] = []
    steal: list[float] = []
    for index in range(args.runs):
        outcome = run_point(spec, point, options=RunOptions(), host=host, formatted_before=False)
        if outcome.status != "ok":
            raise SystemExit(f"run {index + 1} failed: {outcome.error}")
        iops.append(outcome.metrics["fio.write.iops"])
        steal.append(outcome.facts["host_cpu"]["steal_pct"])
        print(f"  run {index + 1:3d}: write IOPS {iops[-1]:8.0f}  steal {steal[-1]:5.2f}%")
    fit = stats.linregress(steal, logs := np.log(iops))
    half = stats.t.ppf(0.975, len(iops) - 2) * fit.stderr
    print(
        f"\nsteal vs write IOPS: {len(iops)} clean runs, ext4-default, numjobs={args.numjobs}, "
        f"{args.runtime} after a {args.ramp} ramp"
    )
    print(
        f"  write IOPS median {statistics.median(iops):.0f}, CV {np.std(logs):.1%} (SD of log); "
        f"steal median {statistics.median(steal):.2f}% (range {min(steal):.2f} to {max(steal):.2f})"
    )
    print(f"  correlation of log IOPS with steal: r {fit.rvalue:.2f}, p {fit.pvalue:.2g}")
    print(
        f"  IOPS per point of steal: {math.expm1(fit.slope):+.1%} "
        f"[{math.expm1(fit.slope - half):+.1%}, {math.expm1(fit.slope + half):+.1%}] (95% CI)"
    )
    print(f"  share of the runs' variance steal accounts for: {fit.rvalue**2:.0%}")


if __name__ == "__main__":
    main()
