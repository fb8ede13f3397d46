#!/usr/bin/env python3
"""What does each collector cost? IOPS with it on vs no collector, in alternating pairs.

The ext4-fsync-storm workload (16 KiB random buffered writes + fsync, 16 GiB
sparse RAM image) at 64 jobs on the reporter's ext4 (ext4-default) and at 1024
jobs on ext4-journal1g. At 1024 jobs the default journal is bimodal (it runs
out of reserved credits in some runs and not others: clean runs of 8 s after
a 2 s ramp gave 7424, 4677 and 8738 IOPS, and 2684 and 8585 with 15 s after
5 s), so pairs there would measure that, not the collectors; with the 1 GiB
journal the same runs vary by ~4% (16966, 17543, 18534). --config overrides
the choice. A cell is a set
of collectors: each one alone, `all` (the evidence run fslab makes by
default), and `clean` (a clean repetition as a campaign runs it against a run
with collectors off: the same code path, so its ratio is 1.00 by construction
and its interval is the bench's own noise floor). Each pair is one run with
the cell's collectors (an evidence run) and one without (a clean run), on
fresh filesystems, order alternated between pairs. The ratio of a pair is
IOPS on / IOPS off; the table gives the median ratio over the pairs with a
95% percentile-bootstrap interval and says whether the interval clears the
goal (the evidence run perturbs by at most 5% at 64 jobs, 10% at 1024):

  meets         the whole interval is at or above the goal
  fails         the whole interval is below it
  inconclusive  the interval straddles it (more pairs would decide)

Long: a 1024-job pair takes ~50 s. Run it cell by cell (each `run` appends
its pairs to the results file as they finish) and print the combined table:

  flock -x /work/machine.lock .venv/bin/python bench/collector_overhead.py run \
      --numjobs 64 --cells clean all perf --pairs 10
  .venv/bin/python bench/collector_overhead.py table

`profile` runs one evidence run of a cell and prints where its CPU went, from
the run's own on-CPU profile (samples by comm, tracing code in other threads)
and the collectors' own CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fslab.analyze.stats import bootstrap_median_ci, interval_verdict
from fslab.hostfacts import collect_host_facts
from fslab.runner import RunOptions, run_point
from fslab.spec import CollectSpec, expand_points, load_spec

COLLECTORS = tuple(CollectSpec().enabled())  # perf, offcpu, workqueue, tpcounters, jbd2, sysstat
CELLS = ("clean", "all", *COLLECTORS)
GOALS = {64: 0.95, 1024: 0.90}  # lowest acceptable ratio on/off
DEFAULT_RESULTS = Path("collector_overhead.jsonl")
MIN_PAIRS = 10  # fewer and the table gives no verdict
CONFIGS = {64: "ext4-default", 1024: "ext4-journal1g"}  # see the module docstring


@dataclass
class Pair:
    """One alternating pair of runs, as appended to the results file."""

    cell: str
    numjobs: int
    config: str
    index: int  # pair number within (cell, numjobs); even: the instrumented run went first
    on_iops: float
    off_iops: float
    runtime_s: float
    ramp_s: float
    collector_cpu_s: dict[str, float]  # the collectors' own CPU time in the instrumented run
    not_ok: dict[str, str]  # collectors that did not end ok: name -> status
    kernel: str
    at: str
    # where the instrumented run's wall time went: facts.timing and facts.collector_seconds
    on_timing: dict[str, float] = field(default_factory=dict)
    on_collector_seconds: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.on_iops / self.off_iops


def cell_spec(cell: str, numjobs: int, runtime_s: float, ramp_s: float):
    """The preset with only the cell's collectors enabled."""
    wanted = set(COLLECTORS) if cell == "all" else {cell} & set(COLLECTORS)
    overrides = [
        f"sweep.numjobs=[{numjobs}]",
        f'run.runtime="{runtime_s:g}s"',
        f'run.ramp="{ramp_s:g}s"',
        *(f"collect.{name}={'true' if name in wanted else 'false'}" for name in COLLECTORS),
    ]
    spec, _ = load_spec("ext4-fsync-storm", overrides=overrides)
    return spec


@dataclass
class Run:
    """One fresh point as the pair needs it."""

    iops: float
    collector_cpu_s: dict[str, float]
    not_ok: dict[str, str]
    timing: dict[str, float]
    collector_seconds: dict[str, dict[str, float]]


def one_run(spec, config: str, instrumented: bool, host) -> Run:
    """Run one fresh point: the clean or the evidence run of the cell's spec."""
    role = "evidence" if instrumented else "clean"
    point = next(
        p
        for p in expand_points(spec, "separate")
        if p.filesystem.label == config and p.role == role
    )
    outcome = run_point(spec, point, options=RunOptions(), host=host, formatted_before=False)
    if outcome.status != "ok":
        raise SystemExit(f"point failed: {outcome.error}")
    cpu = {k: v for k, v in outcome.metrics.items() if k.endswith("collector_cpu_s")}
    not_ok = {n: f"{s}: {r}" for n, (s, r) in outcome.collectors.items() if s != "ok"}
    return Run(
        outcome.metrics["fio.write.iops"],
        cpu,
        not_ok,
        outcome.facts.get("timing", {}),
        outcome.facts.get("collector_seconds", {}),
    )


def load_pairs(path: Path) -> list[Pair]:
    if not path.exists():
        return []
    return [Pair(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def run_cells(args: argparse.Namespace) -> None:
    host = collect_host_facts()
    for numjobs in args.numjobs:
        config = args.config or CONFIGS.get(numjobs, "ext4-default")
        for cell in args.cells:
            done = [
                p
                for p in load_pairs(args.results)
                if (p.cell, p.numjobs, p.config) == (cell, numjobs, config)
            ]
            on_spec = cell_spec(cell, numjobs, args.runtime, args.ramp)
            for index in range(len(done), len(done) + args.pairs):
                runs: dict[str, Run] = {}
                order = ("on", "off") if index % 2 == 0 else ("off", "on")
                for which in order:
                    instrumented = which == "on" and cell != "clean"
                    runs[which] = one_run(on_spec, config, instrumented, host)
                pair = Pair(
                    cell=cell,
                    numjobs=numjobs,
                    config=config,
                    index=index,
                    on_iops=runs["on"].iops,
                    off_iops=runs["off"].iops,
                    runtime_s=args.runtime,
                    ramp_s=args.ramp,
                    collector_cpu_s=runs["on"].collector_cpu_s,
                    not_ok=runs["on"].not_ok,
                    kernel=host.kernel_release,
                    at=time.strftime("%Y-%m-%dT%H:%M:%S"),
                    on_timing=runs["on"].timing,
                    on_collector_seconds=runs["on"].collector_seconds,
                )
                with args.results.open("a") as fh:
                    fh.write(json.dumps(asdict(pair)) + "\n")
                note = f"  not ok: {pair.not_ok}" if pair.not_ok else ""
                print(
                    f"  {cell:10s} numjobs={numjobs:<5d} pair {index:2d} ({order[0]} first): "
                    f"on {pair.on_iops:7.0f}  off {pair.off_iops:7.0f}  "
                    f"ratio {pair.ratio:.3f}{note}",
                    flush=True,
                )
    print_table(load_pairs(args.results))


def print_table(pairs: list[Pair]) -> None:
    cells: dict[tuple[str, int, str], list[Pair]] = {}
    for p in pairs:
        cells.setdefault((p.cell, p.numjobs, p.config), []).append(p)
    if not cells:
        print("no pairs recorded yet")
        return
    settings = sorted({(p.runtime_s, p.ramp_s) for p in pairs})
    timing = ", ".join(f"{r:g} s after a {m:g} s ramp" for r, m in settings)
    print(f"\ncollector cost: write IOPS with the collectors / without, ext4-fsync-storm, {timing}")
    print("median of the pair ratios, 95% bootstrap CI; goal: the lowest acceptable ratio")
    header = (
        f"{'cell':<11s}{'config':<15s}{'numjobs':>8s}{'pairs':>6s}{'median':>8s}{'95% CI':>16s}"
        f"{'goal':>6s}  {'verdict':<13s}{'on IOPS':>9s}{'off IOPS':>9s}  collector CPU s"
    )
    print(header)
    print("-" * len(header))
    order = {c: i for i, c in enumerate(CELLS)}
    for (cell, numjobs, config), group in sorted(
        cells.items(), key=lambda kv: (kv[0][1], kv[0][2], order[kv[0][0]])
    ):
        ratios = [p.ratio for p in group]
        low, high = bootstrap_median_ci(ratios, rng=0)
        goal = GOALS.get(numjobs, 0.95)
        cpu: dict[str, list[float]] = {}
        for p in group:
            for name, value in p.collector_cpu_s.items():
                cpu.setdefault(name.split(".")[0], []).append(value)
        cpu_text = " ".join(f"{k} {statistics.median(v):.2f}" for k, v in sorted(cpu.items()))
        if len(cpu) > 1:  # the instruments' own CPU in all, median over the pairs
            total = statistics.median(sum(p.collector_cpu_s.values()) for p in group)
            cpu_text += f" = {total:.2f}"
        if cell == "clean":
            cpu_text = "(none: 1.00 by construction)"
        judged = interval_verdict(low, high, goal) if len(group) >= MIN_PAIRS else "too few pairs"
        print(
            f"{cell:<11s}{config:<15s}{numjobs:>8d}{len(group):>6d}{statistics.median(ratios):>8.3f}"
            f"{f'[{low:.3f}, {high:.3f}]':>16s}{goal:>6.2f}  {judged:<13s}"
            f"{statistics.median(p.on_iops for p in group):>9.0f}"
            f"{statistics.median(p.off_iops for p in group):>9.0f}  {cpu_text}"
        )
    short = sorted({f"{c}@{n}" for (c, n, _), g in cells.items() if len(g) < MIN_PAIRS})
    if short:
        print(f"fewer than {MIN_PAIRS} pairs (add more with `run`): {', '.join(short)}")


TRACING_FRAMES = (
    "trace_event",
    "ring_buffer",
    "tracing_",
    "filter_match",
    "perf_",
)  # probes, samples


def profile_cell(args: argparse.Namespace) -> None:
    """One evidence run of the cell; where its CPU went, from its own on-CPU profile."""
    config = args.config or CONFIGS.get(args.numjobs, "ext4-default")
    spec = cell_spec(args.cell, args.numjobs, args.runtime, args.ramp)
    point = next(
        p
        for p in expand_points(spec, "separate")
        if p.filesystem.label == config and p.role == "evidence"
    )
    outcome = run_point(
        spec, point, options=RunOptions(), host=collect_host_facts(), formatted_before=False
    )
    if outcome.status != "ok":
        raise SystemExit(f"point failed: {outcome.error}")
    folded = outcome.artifacts.get("profile.oncpu.folded", "")
    if not folded:
        raise SystemExit("no on-CPU profile: the cell needs perf")
    by_comm: dict[str, int] = {}
    tracing = {"fio": 0, "other": 0}
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        by_comm[frames[0]] = by_comm.get(frames[0], 0) + int(count)
        if any(m in f for f in frames[1:] for m in TRACING_FRAMES):
            tracing["fio" if frames[0] == "fio" else "other"] += int(count)
    total = sum(by_comm.values())
    print(
        f"evidence run, cell {args.cell}, {config}, numjobs={args.numjobs}: "
        f"{outcome.metrics['fio.write.iops']:.0f} IOPS, {total} on-CPU samples"
    )
    for comm, count in sorted(by_comm.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {comm:<20s}{count:>7d}  {100 * count / total:5.1f}%")
    for where, count in tracing.items():
        print(f"  tracing code in {where} threads: {100 * count / total:.2f}%")
    cpu = {k: v for k, v in outcome.metrics.items() if k.endswith("collector_cpu_s")}
    print("  collectors' own CPU s: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(cpu.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="measure cells (as root, under the machine lock)")
    run.add_argument("--cells", nargs="+", choices=CELLS, default=list(CELLS))
    run.add_argument("--numjobs", nargs="+", type=int, default=[64, 1024])
    run.add_argument("--pairs", type=int, default=10, help="pairs to add per cell")
    run.add_argument("--runtime", type=float, default=8.0)
    run.add_argument("--ramp", type=float, default=2.0)
    run.add_argument("--config", help="preset configuration (default: see CONFIGS)")
    run.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    prof = sub.add_parser("profile", help="one evidence run: its CPU by comm (root, lock)")
    prof.add_argument("--cell", choices=CELLS[1:], default="all")
    prof.add_argument("--numjobs", type=int, default=1024)
    prof.add_argument("--runtime", type=float, default=8.0)
    prof.add_argument("--ramp", type=float, default=2.0)
    prof.add_argument("--config", help="preset configuration (default: see CONFIGS)")
    table = sub.add_parser("table", help="print the combined table of a results file")
    table.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args()
    if args.command == "run":
        run_cells(args)
    elif args.command == "profile":
        profile_cell(args)
    else:
        print_table(load_pairs(args.results))


if __name__ == "__main__":
    sys.exit(main())
