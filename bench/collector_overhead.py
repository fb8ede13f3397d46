#!/usr/bin/env python3
"""What does each collector cost? IOPS with it on vs no collector, in alternating pairs.

The ext4-fsync-storm workload (16 KiB random buffered writes + fsync, 16 GiB
sparse RAM image) at 64 jobs on the reporter's ext4 (ext4-default) and at 1024
jobs on ext4-journal1g. At 1024 jobs the default journal is bimodal (it runs
out of reserved credits in some runs and not others: clean runs of 8 s after
a 2 s ramp gave 7424, 4677 and 8738 IOPS, and 2684 and 8585 with 15 s after
5 s), so pairs there would measure that, not the collectors; with the 1 GiB
journal the same runs vary by ~4% (16966, 17543, 18534). --config overrides
the choice. A cell is a set of collectors: each one alone, `all` (the
evidence run fslab makes by default), all but one (`all-workqueue`), and
`clean` (a clean repetition as a campaign runs it against a run with
collectors off: the same code path, so its ratio is 1.00 by construction
and its interval is the bench's own noise floor). Each pair is one run with
the cell's collectors (an evidence run) and one without (a clean run), on
fresh filesystems, order alternated between pairs. The ratio of a pair is
IOPS on / IOPS off; the table gives the median ratio over the pairs with a
95% percentile-bootstrap interval and says whether the interval clears the
goal (the evidence run perturbs by at most 5% at 64 jobs, 10% at 16 and 1024):

  meets         the whole interval is at or above the goal
  fails         the whole interval is below it
  inconclusive  the interval straddles it (more pairs would decide)

Long: a 1024-job pair takes ~50 s. Run it cell by cell (each `run` appends
its pairs to the results file as they finish) and print the combined table:

  flock -x /work/machine.lock .venv/bin/python bench/collector_overhead.py run \
      --numjobs 64 --cells clean all perf --pairs 10
  .venv/bin/python bench/collector_overhead.py table

`windows` alternates on and off windows of a cell's collectors inside one
long fio run (write calls/s), to keep run-to-run drift out of a pair;
`noise` prints how one clean run's IOPS spread over windows of 1 to 16 s.

`profile` runs one evidence run of a cell and prints where its CPU went, from
the run's own on-CPU profile (samples by comm, tracing code in other threads)
and the collectors' own CPU seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fslab.analyze.campaign.stats import bootstrap_median_ci, interval_verdict
from fslab.base.hostfacts import collect_host_facts
from fslab.base.proc import CommandLog, process_cpu_s, run
from fslab.collect.base import PendingResult, PointContext
from fslab.collect.sysstat import parse_proc_stat
from fslab.measure import plan
from fslab.measure.point import RunOptions, collecting, collector_classes, run_point
from fslab.spec.load import load_spec
from fslab.spec.model import CollectSpec
from fslab.spec.points import expand_points
from fslab.target.fs import Mount, make_filesystem
from fslab.target.loop import LoopImage
from fslab.workload.fio import plan as fio_plan

COLLECTORS = tuple(CollectSpec().enabled())  # perf, offcpu, workqueue, tpcounters, jbd2, sysstat
# a cell: none (clean), all, one collector alone, or all but one ("all-workqueue")
CELLS = ("clean", "all", *COLLECTORS, *(f"all-{name}" for name in COLLECTORS))
GOALS = {16: 0.90, 64: 0.95, 1024: 0.90}  # lowest acceptable ratio on/off
DEFAULT_RESULTS = Path("collector_overhead.jsonl")
MIN_PAIRS = 10  # fewer and the table gives no verdict
CONFIGS = {64: "ext4-default", 1024: "ext4-journal1g"}  # see the module docstring
BTRFS, XFS_INDEX = "btrfs", 4  # --config btrfs: the preset's xfs configuration as btrfs


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
    # "runs": a fresh point each side; "windows": on and off windows of one fio run
    method: str = "runs"
    # windows only: where each window's CPU went (window_cpu), in CPUs
    on_cpu: dict[str, float] = field(default_factory=dict)
    off_cpu: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.on_iops / self.off_iops


def cell_spec(cell: str, numjobs: int, runtime_s: float, ramp_s: float, config: str = ""):
    """The preset with only the cell's collectors enabled, and a btrfs configuration
    (BTRFS: the preset's xfs one, retyped) for the filesystems the preset leaves out."""
    if cell.startswith("all"):
        wanted = set(COLLECTORS) - {cell.removeprefix("all-")}
    else:
        wanted = {cell} & set(COLLECTORS)
    overrides = [
        f"sweep.numjobs=[{numjobs}]",
        "run.adaptive=false",  # every configuration at the point (the preset scans one)
        f'run.runtime="{runtime_s:g}s"',
        f'run.ramp="{ramp_s:g}s"',
        *(f"collect.{name}={'true' if name in wanted else 'false'}" for name in COLLECTORS),
    ]
    if config == BTRFS:
        overrides += [
            f'filesystems.{XFS_INDEX}.label="{BTRFS}"',
            f'filesystems.{XFS_INDEX}.type="btrfs"',
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


def config_point(spec, config: str, role: str):
    """The spec's one point of `config` in the given role ("clean" or "evidence")."""
    return next(
        p
        for p in expand_points(spec, "separate")
        if p.filesystem.label == config and p.role == role
    )


def one_run(spec, config: str, instrumented: bool, host) -> Run:
    """Run one fresh point: the clean or the evidence run of the cell's spec."""
    point = config_point(spec, config, "evidence" if instrumented else "clean")
    outcome = run_point(spec, point, options=RunOptions(), host=host, formatted_before=False)
    if outcome.status != "ok":
        raise SystemExit(f"point failed: {outcome.error}")
    cpu = {k: v for k, v in outcome.metrics.items() if k.endswith("collector_cpu_s")}
    not_ok = {n: f"{s}: {r}" for n, (s, r) in outcome.collectors.items() if s != "ok"}
    return Run(
        outcome.metrics["fio.write.iops"],
        cpu,
        not_ok,
        outcome.facts.timing or {},
        outcome.facts.collector_seconds or {},
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
            on_spec = cell_spec(cell, numjobs, args.runtime, args.ramp, config)
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


FIO_RUN_S = 7200  # the windows' fio runs until stopped; this only bounds it


def fio_writes(pid: int) -> int:
    """Write calls fio's threads have made so far (/proc/<pid>/io syscw): with the
    sync engine one per 16 KiB write, and fio makes no others while it runs."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise SystemExit(f"no syscw in /proc/{pid}/io")


@contextlib.contextmanager
def fio_running(
    spec, point, artifacts: str
) -> Iterator[tuple[subprocess.Popen[bytes], PointContext]]:
    """The point's filesystem, laid out, with its fio job running until the block ends
    (`artifacts`: the collectors' scratch directory, kept for their post-processing)."""
    fs = point.filesystem
    log = CommandLog()

    def make(path: str) -> None:
        make_filesystem(fs.type, path, fs.mkfs_options, label=None, log=log)

    with (
        LoopImage(spec.target.size_bytes, directory="/dev/shm", log=log, prepare=make) as image,
        Mount(image.device, fs.type, fs.mount_options, log=log) as mount,
    ):
        argv = plan.workload_plan(spec, point.sweep_dict, mount.mountpoint).run_argv
        if run(fio_plan.layout_argv(argv), log=log, check=False).returncode != 0:
            raise SystemExit("fio layout failed")
        run(["sync", "--file-system", mount.mountpoint], log=log)
        fio = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ctx = PointContext(
            device=image.device,
            device_name=Path(os.path.realpath(image.device)).name,
            mountpoint=mount.mountpoint,
            fs_type=fs.type,
            workload_comm="fio",
            ramp_s=0.0,
            runtime_s=0.0,  # set per window
            artifact_dir=Path(artifacts),
        )
        try:
            yield fio, ctx
        finally:
            fio.send_signal(signal.SIGINT)  # fio stops its jobs and exits
            try:
                fio.wait(timeout=60)
            except subprocess.TimeoutExpired:
                fio.kill()
                fio.wait()


def descendants(pid: int) -> list[int]:
    """Every live descendant of a process (through each of its threads' children)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in map(int, (task / "children").read_text().split()):
                found += [child, *descendants(child)]
    return found


@dataclass(frozen=True)
class CpuSnapshot:
    """What a window's CPU accounting needs, read at one instant."""

    at_s: float
    fio_writes: int
    fio_cpu_s: float
    collectors_cpu_s: float  # this process (its collector threads) and its helpers but fio
    box: dict[str, float]  # /proc/stat's cpu line, ticks

    @classmethod
    def take(cls, fio_pid: int) -> CpuSnapshot:
        helpers = [d for d in descendants(os.getpid()) if d != fio_pid]
        return cls(
            at_s=time.monotonic(),
            fio_writes=fio_writes(fio_pid),
            fio_cpu_s=process_cpu_s(fio_pid),
            collectors_cpu_s=process_cpu_s(os.getpid()) + sum(map(process_cpu_s, helpers)),
            box=parse_proc_stat(Path("/proc/stat").read_text()),
        )


def window_cpu(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, float]:
    """Where a window's CPU went, in CPUs (CPU-seconds per second): fio's threads, the
    collectors' own processes and threads, everything else busy (kworkers, jbd2, irqs),
    and steal; plus fio's CPU per write, which tracing in fio's context raises."""
    elapsed_s = after.at_s - before.at_s
    ticks = {k: after.box[k] - before.box.get(k, 0.0) for k in after.box if k.startswith("cpu_")}
    hz = os.sysconf("SC_CLK_TCK")
    busy_s = sum(v for k, v in ticks.items() if k not in IDLE_TICKS) / hz
    fio_s = after.fio_cpu_s - before.fio_cpu_s
    collectors_s = after.collectors_cpu_s - before.collectors_cpu_s
    writes = after.fio_writes - before.fio_writes
    return {
        "fio_cpus": fio_s / elapsed_s,
        "collectors_cpus": collectors_s / elapsed_s,
        "other_busy_cpus": (busy_s - fio_s - collectors_s - ticks["cpu_steal"] / hz) / elapsed_s,
        "steal_cpus": ticks["cpu_steal"] / hz / elapsed_s,
        "idle_cpus": sum(ticks.get(k, 0.0) for k in IDLE_TICKS) / hz / elapsed_s,
        "fio_cpu_us_per_write": 1e6 * fio_s / writes if writes else 0.0,
    }


IDLE_TICKS = ("cpu_idle", "cpu_iowait", "cpu_guest", "cpu_guest_nice")  # guest: in user too


def window_rate(pid: int, window_s: float) -> tuple[float, dict[str, float]]:
    """fio's write calls per second over the next `window_s` seconds, and where the
    window's CPU went."""
    before = CpuSnapshot.take(pid)
    time.sleep(window_s)
    after = CpuSnapshot.take(pid)
    return (after.fio_writes - before.fio_writes) / (after.at_s - before.at_s), window_cpu(
        before, after
    )


def window_pair(
    index: int, cell: str, config: str, classes, spec, ctx: PointContext, pid: int, window_s: float
) -> tuple[Pair, dict[str, PendingResult]]:
    """An on and an off window (order alternated by `index`); the collectors' start and
    stop stay outside the on window, their post-processing is handed back."""
    rates: dict[str, float] = {}
    cpu: dict[str, dict[str, float]] = {}
    results: dict[str, PendingResult] = {}
    seconds: dict[str, dict[str, float]] = {}
    for which in ("on", "off") if index % 2 == 0 else ("off", "on"):
        if which == "on" and classes:
            scratch = ctx.artifact_dir / f"window-{index}"  # perf.data etc. of this window
            scratch.mkdir()
            window_ctx = dataclasses.replace(ctx, runtime_s=window_s, artifact_dir=scratch)
            with collecting(classes, spec, window_ctx, results, seconds):
                rates[which], cpu[which] = window_rate(pid, window_s)
        else:
            rates[which], cpu[which] = window_rate(pid, window_s)
    pair = Pair(
        cell=cell,
        numjobs=int(spec.sweep["numjobs"][0]),
        config=config,
        index=index,
        on_iops=rates["on"],
        off_iops=rates["off"],
        runtime_s=window_s,
        ramp_s=0.0,
        collector_cpu_s={},
        not_ok={},
        kernel=os.uname().release,
        at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        on_collector_seconds=seconds,
        method="windows",
        on_cpu=cpu["on"],
        off_cpu=cpu["off"],
    )
    return pair, results


def run_windows(args: argparse.Namespace) -> None:
    """Pairs of on and off windows inside one long fio run per cell, so that the
    drift between two fresh runs stays out of a pair (it did not help here: the
    IOPS of 8 s windows spread as much as whole runs, docs/collectors.md)."""
    for numjobs in args.numjobs:
        config = args.config or CONFIGS.get(numjobs, "ext4-default")
        for cell in args.cells:
            first = sum(
                (p.cell, p.numjobs, p.config, p.method) == (cell, numjobs, config, "windows")
                for p in load_pairs(args.results)
            )
            spec = cell_spec(cell, numjobs, FIO_RUN_S, 0.0, config)
            point = config_point(spec, config, "evidence")
            classes = collector_classes(spec, point)  # none for `clean`: cell_spec
            pending: list[tuple[Pair, dict[str, PendingResult]]] = []
            with tempfile.TemporaryDirectory(prefix="fslab-windows-") as artifacts:
                with fio_running(spec, point, artifacts) as (fio, ctx):
                    time.sleep(args.ramp)
                    for index in range(first, first + args.pairs):
                        if fio.poll() is not None:
                            raise SystemExit(f"fio exited early ({fio.returncode})")
                        pair, post = window_pair(
                            index, cell, config, classes, spec, ctx, fio.pid, args.window
                        )
                        with args.results.open("a") as fh:
                            fh.write(json.dumps(asdict(pair)) + "\n")
                        print(
                            f"  {cell:10s} numjobs={numjobs:<5d} window pair {index:2d} "
                            f"({'on' if index % 2 == 0 else 'off'} first): "
                            f"on {pair.on_iops:7.0f}  off {pair.off_iops:7.0f}  "
                            f"ratio {pair.ratio:.3f}",
                            flush=True,
                        )
                        pending.append((pair, post))
                # after fio: post-processing inside no window, as a campaign does it
                finished = [finish_window(pair, post) for pair, post in pending]
            rewrite_pairs(args.results, finished)
    print_table(load_pairs(args.results))


def finish_window(pair: Pair, post: dict[str, PendingResult]) -> Pair:
    """The pair with its on window's collector CPU and any collector not ok, once the
    collectors' post-processing (after fio) has finished."""
    cpu: dict[str, float] = {}
    not_ok: dict[str, str] = {}
    for name, pending in post.items():
        result = pending.finish()
        cpu.update({k: v for k, v in result.metrics.items() if k.endswith("collector_cpu_s")})
        if result.status != "ok":
            not_ok[name] = f"{result.status}: {result.reason}"
            print(f"  {name} did not end ok in window pair {pair.index}: {not_ok[name]}")
    return dataclasses.replace(pair, collector_cpu_s=cpu, not_ok=not_ok)


def rewrite_pairs(path: Path, finished: list[Pair]) -> None:
    """Replace the pairs written as each pair ended (no CPU yet, so a crash loses
    nothing measured) with their finished versions."""
    key = {(p.cell, p.numjobs, p.config, p.method, p.index): p for p in finished}
    pairs = [key.get((p.cell, p.numjobs, p.config, p.method, p.index), p) for p in load_pairs(path)]
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(asdict(p)) + "\n" for p in pairs))
    tmp.replace(path)


def run_noise(args: argparse.Namespace) -> None:
    """How a clean fio run's IOPS spread over windows of 1 to 16 s: whether longer
    windows (or runs) would narrow a pair's ratio (docs/collectors.md)."""
    import numpy as np

    config = args.config or CONFIGS.get(args.numjobs, "ext4-default")
    spec = cell_spec("clean", args.numjobs, FIO_RUN_S, 0.0, config)
    with (
        tempfile.TemporaryDirectory(prefix="fslab-noise-") as artifacts,
        fio_running(spec, config_point(spec, config, "evidence"), artifacts) as (fio, _),
    ):
        time.sleep(args.ramp)
        rates = [window_rate(fio.pid, 1.0) for _ in range(args.seconds)]
    logged = np.log(np.asarray(rates))
    print(
        f"clean fio, {config}, numjobs={args.numjobs}: {args.seconds} one-second windows, "
        f"geometric mean {np.exp(logged.mean()):.0f} write calls/s"
    )
    for width in (1, 2, 4, 8, 16):
        n = len(logged) // width
        means = logged[: n * width].reshape(n, width).mean(axis=1)
        print(f"  SD of log IOPS over {width:2d} s windows: {means.std():.3f} ({n} windows)")
    for lag in (1, 2, 5):
        r = np.corrcoef(logged[:-lag], logged[lag:])[0, 1]
        print(f"  autocorrelation at a lag of {lag} s: {r:.2f}")


def print_table(pairs: list[Pair]) -> None:
    for method in sorted({p.method for p in pairs}, reverse=True):
        _print_method_table(method, [p for p in pairs if p.method == method])
    if not pairs:
        print("no pairs recorded yet")


def _print_method_table(method: str, pairs: list[Pair]) -> None:
    cells: dict[tuple[str, int, str], list[Pair]] = {}
    for p in pairs:
        cells.setdefault((p.cell, p.numjobs, p.config), []).append(p)
    if method == "windows":
        widths = ", ".join(sorted({f"{p.runtime_s:g} s" for p in pairs}))
        timing = f"on and off windows of {widths} inside one fio run (write syscalls/s)"
    else:
        settings = sorted({(p.runtime_s, p.ramp_s) for p in pairs})
        timing = ", ".join(f"{r:g} s after a {m:g} s ramp" for r, m in settings)
    print(f"\ncollector cost: write IOPS with the collectors / without, ext4-fsync-storm, {timing}")
    print("median of the pair ratios, 95% bootstrap CI; goal: the lowest acceptable ratio")
    header = (
        f"{'cell':<15s}{'config':<15s}{'numjobs':>8s}{'pairs':>6s}{'median':>8s}{'95% CI':>16s}"
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
            f"{cell:<15s}{config:<15s}{numjobs:>8d}{len(group):>6d}{statistics.median(ratios):>8.3f}"
            f"{f'[{low:.3f}, {high:.3f}]':>16s}{goal:>6.2f}  {judged:<13s}"
            f"{statistics.median(p.on_iops for p in group):>9.0f}"
            f"{statistics.median(p.off_iops for p in group):>9.0f}  {cpu_text}"
        )
    if method == "windows":
        print_cpu_split(cells)
        print_steal_adjusted(cells)
    short = sorted({f"{c}@{n}" for (c, n, _), g in cells.items() if len(g) < MIN_PAIRS})
    if short:
        print(f"fewer than {MIN_PAIRS} pairs (add more with `run`): {', '.join(short)}")


def print_cpu_split(cells: dict[tuple[str, int, str], list[Pair]]) -> None:
    """Where the on and off windows' CPU went, medians over the pairs that carry it: the
    collectors' share of a CPU-bound machine comes straight out of fio's."""
    for (cell, numjobs, _), group in sorted(cells.items()):
        group = [p for p in group if p.on_cpu and p.off_cpu]
        if not group:
            continue
        print(f"where the CPU went, {cell} at numjobs={numjobs}, {len(group)} pairs (in CPUs):")
        for key in group[0].on_cpu:
            on = statistics.median(p.on_cpu[key] for p in group)
            off = statistics.median(p.off_cpu[key] for p in group)
            diff = statistics.median(p.on_cpu[key] - p.off_cpu[key] for p in group)
            print(f"  {key:<22s} on {on:8.3f}  off {off:8.3f}  on-off per pair {diff:+8.3f}")


MIN_STEAL_SPREAD_POINTS = 1.0  # below it a slope on steal is a fit to rounding noise


def print_steal_adjusted(cells: dict[tuple[str, int, str], list[Pair]]) -> None:
    """The ratio at equal steal: the intercept of the pairs' log ratio regressed on their
    windows' steal difference (points of all CPUs). The hypervisor's steal is most of the
    noise here (bench/steal_noise.py) and does not depend on the collectors (its medians
    on and off agree), so taking it out narrows the interval without biasing it."""
    import numpy as np
    from scipy import stats

    for (cell, numjobs, _), group in sorted(cells.items()):
        group = [p for p in group if "steal_cpus" in p.on_cpu and "steal_cpus" in p.off_cpu]
        if len(group) < MIN_PAIRS:
            continue
        ncpu = os.cpu_count() or 1
        steal = [100 * (p.on_cpu["steal_cpus"] - p.off_cpu["steal_cpus"]) / ncpu for p in group]
        most = max(map(abs, steal))
        if most < MIN_STEAL_SPREAD_POINTS:
            print(
                f"steal-adjusted, {cell} at numjobs={numjobs}, {len(group)} pairs: nothing to "
                f"take out (the windows' steal differs by {most:.2f} points at most)"
            )
            continue
        fit = stats.linregress(steal, np.log([p.ratio for p in group]))
        half = stats.t.ppf(0.975, len(group) - 2) * fit.intercept_stderr
        low, high = (float(np.exp(fit.intercept + d)) for d in (-half, half))
        goal = GOALS.get(numjobs, 0.95)
        print(
            f"steal-adjusted, {cell} at numjobs={numjobs}, {len(group)} pairs: ratio at equal "
            f"steal {np.exp(fit.intercept):.3f} [{low:.3f}, {high:.3f}] (95% CI; goal {goal:.2f}: "
            f"{interval_verdict(low, high, goal)}); {np.expm1(fit.slope):+.1%} a point of steal "
            f"between the windows, r {fit.rvalue:.2f}"
        )


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
    spec = cell_spec(args.cell, args.numjobs, args.runtime, args.ramp, config)
    point = config_point(spec, config, "evidence")
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
    run.add_argument("--config", help="preset configuration, or btrfs (default: see CONFIGS)")
    run.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    win = sub.add_parser("windows", help="on/off windows inside one fio run per cell (root, lock)")
    win.add_argument("--cells", nargs="+", choices=CELLS, default=["all"])
    win.add_argument("--numjobs", nargs="+", type=int, default=[64])
    win.add_argument("--pairs", type=int, default=20, help="window pairs to add per cell")
    win.add_argument("--window", type=float, default=8.0, help="seconds per window")
    win.add_argument("--ramp", type=float, default=5.0, help="seconds before the first")
    win.add_argument("--config", help="preset configuration (default: see CONFIGS)")
    win.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    noise = sub.add_parser("noise", help="a clean run's IOPS spread by window width (root, lock)")
    noise.add_argument("--numjobs", type=int, default=64)
    noise.add_argument("--seconds", type=int, default=90)
    noise.add_argument("--ramp", type=float, default=5.0)
    noise.add_argument("--config", help="preset configuration (default: see CONFIGS)")
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
    elif args.command == "windows":
        run_windows(args)
    elif args.command == "noise":
        run_noise(args)
    elif args.command == "profile":
        profile_cell(args)
    else:
        print_table(load_pairs(args.results))


if __name__ == "__main__":
    sys.exit(main())
