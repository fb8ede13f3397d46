#!/usr/bin/env python3
"""Does the host's steal time explain how much one run's IOPS differs from the next?

A guest's /proc/stat counts `steal`: time its vCPUs were runnable while the
hypervisor ran someone else. fslab stores it with every run (facts.host_cpu)
and comparisons warn when the two sides' steal differs (fslab.analyze.noise.drift);
this bench measures what steal costs, so the warning rests on a figure.

N clean single-point runs of the fsync storm (ext4, the reporter's default
journal, 8 jobs, short runs), through fslab's runner as a campaign runs
them; per run its write IOPS and its steal in percent of the CPUs. It prints
the correlation of log IOPS with steal, the slope (IOPS per point of steal,
95% CI) and how much of the runs' variance steal accounts for.

  flock -x /work/machine.lock .venv/bin/python bench/steal_noise.py --runs 60

With --campaigns DB it measures nothing: it reads a database of spaced
campaigns (bench/spaced/record.sh) whose runs carry their steal and asks the
same of whole campaigns: per spec, how the campaigns' median headline follows
their median steal, the between-campaign spread before and after taking steal
out, and, for two specs, the difference between them with and without steal
as a covariate (ordinary least squares over the campaigns).
"""

from __future__ import annotations

import argparse
import math
import statistics

import numpy as np
from scipy import stats

from fslab.analyze.campaign.dataset import load_campaign
from fslab.base.hostfacts import collect_host_facts
from fslab.measure.point import RunOptions, run_point
from fslab.spec.load import load_spec
from fslab.spec.points import expand_points
from fslab.store.db import Store

MIN_CAMPAIGNS = 4  # a slope and its residual spread need a few


def campaign_levels(db: str) -> dict[str, list[tuple[float, float]]]:
    """{spec name: [(median steal %, median headline)]} over the database's campaigns
    whose headline runs all carry their steal."""
    by_spec: dict[str, list[tuple[float, float]]] = {}
    with Store(db) as store:
        for row in store.campaigns():
            data = load_campaign(store, row.id)
            runs = data.ok_points()
            steal = [p.facts.host_cpu.steal_pct for p in runs if p.facts.host_cpu]
            values = [data.metrics[p.id][data.headline] for p in runs if data.headline]
            if runs and len(steal) == len(runs) and values:
                level = (
                    statistics.median(s for s in steal if s is not None),
                    statistics.median(values),
                )
                by_spec.setdefault(row.name, []).append(level)
    return by_spec


def report_campaigns(db: str) -> None:
    by_spec = campaign_levels(db)
    if any(len(levels) < MIN_CAMPAIGNS for levels in by_spec.values()) or not by_spec:
        counts = ", ".join(f"{n} {len(v)}" for n, v in by_spec.items()) or "none"
        raise SystemExit(f"need {MIN_CAMPAIGNS} campaigns a spec with steal recorded: {counts}")
    print(f"steal vs campaign level: {db}")
    for name, levels in by_spec.items():
        steal, logs = np.array([s for s, _ in levels]), np.log([v for _, v in levels])
        fit = stats.linregress(steal, logs)
        residual = logs - (fit.intercept + fit.slope * steal)
        print(
            f"  {name}: {len(levels)} campaigns, steal median {np.median(steal):.2f}% "
            f"(range {steal.min():.2f} to {steal.max():.2f}); "
            f"r {fit.rvalue:.2f} (p {fit.pvalue:.2g}), "
            f"{math.expm1(fit.slope):+.1%} a point; between-campaign SD of log headline "
            f"{logs.std(ddof=1):.3f}, {residual.std(ddof=2):.3f} with steal taken out"
        )
    if len(by_spec) == 2:
        (base, base_levels), (cand, cand_levels) = by_spec.items()
        rows = [(0.0, s, v) for s, v in base_levels] + [(1.0, s, v) for s, v in cand_levels]
        y = np.log([v for *_, v in rows])
        for label, columns in (("without steal", [0]), ("with steal as a covariate", [0, 1])):
            x = np.column_stack([np.ones(len(rows)), *([r[c] for r in rows] for c in columns)])
            beta, *_ = np.linalg.lstsq(x, y, rcond=None)
            resid = y - x @ beta
            dof = len(rows) - x.shape[1]
            cov = (resid @ resid / dof) * np.linalg.inv(x.T @ x)
            half = stats.t.ppf(0.975, dof) * math.sqrt(cov[1, 1])
            p_value = 2 * stats.t.sf(abs(beta[1]) / math.sqrt(cov[1, 1]), dof)
            print(
                f"  {cand} vs {base}, {label}: {math.expm1(beta[1]):+.1%} "
                f"[{math.expm1(beta[1] - half):+.1%}, {math.expm1(beta[1] + half):+.1%}] "
                f"(95% CI, p {p_value:.2g})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", metavar="DB", help="read spaced campaigns; run nothing")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--numjobs", type=int, default=8)
    parser.add_argument("--runtime", default="3s")
    parser.add_argument("--ramp", default="1s")
    args = parser.parse_args()
    if args.campaigns:
        report_campaigns(args.campaigns)
        return
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            f"sweep.numjobs=[{args.numjobs}]",
            "run.adaptive=false",  # the grid's points (the preset scans)
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
        cpu = outcome.facts.host_cpu
        steal.append((cpu.steal_pct or 0.0) if cpu else 0.0)
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
