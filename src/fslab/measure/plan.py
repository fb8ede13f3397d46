"""From a spec's workload and a point's sweep values to a run and its metrics.

The workload's benchmark (workload/registry.py) says what a sweep value
means and which commands a point runs; this module applies it to a spec's
points, runs the commands in their phases, and decides how long a point may
take before it is declared hung and whether its files fit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from fslab.base.errors import FslabError
from fslab.base.format import format_bytes
from fslab.base.proc import CommandLog, CommandRecord, run_interruptible
from fslab.base.units import parse_duration_s, parse_size_bytes
from fslab.spec.model import ScalarValue, Spec, sweep_combinations, workload_axes
from fslab.workload.base import Benchmark, Command, OptedIn, Output, Plan, WorkloadOutcome
from fslab.workload.registry import benchmark_for

__all__ = ["WorkloadOutcome"]


def benchmark(spec: Spec) -> Benchmark:
    """The benchmark of the spec's workload."""
    return benchmark_for(spec.workload)


def workload_plan(spec: Spec, sweep: Mapping[str, ScalarValue], directory: str) -> Plan:
    """The point's commands, in phases (`directory`: the mounted scratch filesystem)."""
    return benchmark(spec).plan(spec.workload, workload_axes(sweep), spec.run_shape, directory)


def opted_in_commands(spec: Spec) -> list[OptedIn]:
    """What a spec that opted in (allow_commands) will run or touch outside the scratch,
    over all its points, for `fslab run` to print before it starts."""
    bench = benchmark(spec)
    seen: dict[str, OptedIn] = {}
    for sweep in _distinct_sweeps(spec):
        for found in bench.opted_in(spec.workload, workload_axes(sweep), spec.run_shape):
            seen.setdefault(found.shown, found)
    return list(seen.values())


def check_workload(spec: Spec) -> None:
    """Build every point's workload once, so a refusal comes before anything is created
    (also with --no-preflight)."""
    bench = benchmark(spec)
    for sweep in _distinct_sweeps(spec):
        bench.check(spec.workload, workload_axes(sweep), spec.run_shape)


def _distinct_sweeps(spec: Spec) -> list[dict[str, ScalarValue]]:
    """Every combination of the sweep (an adaptive campaign may run any of them)."""
    return [dict(combo) for combo in sweep_combinations(spec.sweep)]


def runtime_and_ramp_s(
    spec: Spec, sweep: Mapping[str, ScalarValue] | None = None
) -> tuple[float, float]:
    """The measured runtime and ramp the point's workload will really have (for fio the
    options it is given: a --runtime pasted in a command line, or swept)."""
    return benchmark(spec).timing(spec.workload, workload_axes(sweep or {}), spec.run_shape)


def point_timeout_s(spec: Spec, sweep: Mapping[str, ScalarValue] | None = None) -> float:
    """When a point is declared hung: (runtime + ramp) x run.timeout_factor + run.setup_timeout.

    The runtime is the one the workload will really run (runtime_and_ramp_s),
    not just spec.runtime_s.
    """
    runtime_s, ramp_s = runtime_and_ramp_s(spec, sweep)
    setup_s = parse_duration_s(spec.run.setup_timeout)
    return (runtime_s + ramp_s) * spec.run.timeout_factor + setup_s


FIT_MARGIN = 0.95  # the workload's files may use 95% of the free space


@dataclass(frozen=True)
class FillRequest:
    """How a point fills its filesystem before the workload, and the field that says so."""

    field: str  # "sweep.fill_percent", "sweep.fill_leave_free", "fill.percent", ...
    percent: float | None
    leave_free_bytes: int | None

    @property
    def fills(self) -> bool:
        return self.percent is not None or self.leave_free_bytes is not None


def fill_request(spec: Spec, sweep: Mapping[str, ScalarValue]) -> FillRequest:
    """The fill from the sweep axes, else from [fill]; an empty or 'none' value: no fill."""
    if "fill_percent" in sweep:
        value = float(sweep["fill_percent"])
        return FillRequest("sweep.fill_percent", value if value > 0 else None, None)
    if "fill_leave_free" in sweep:
        text = str(sweep["fill_leave_free"])
        leave = parse_size_bytes(text) if text not in ("", "none") else None
        return FillRequest("sweep.fill_leave_free", None, leave)
    leave_text = spec.fill.leave_free
    return FillRequest(
        "fill.leave_free" if leave_text else "fill.percent",
        spec.fill.percent,
        parse_size_bytes(leave_text) if leave_text else None,
    )


def files_bytes(spec: Spec, sweep: Mapping[str, ScalarValue]) -> tuple[int | None, str]:
    """Bytes the workload writes up front at this point, and how that was computed
    ("4 job(s) x 4m", "dd bs=1M x count=10"); None when the workload says nothing."""
    return benchmark(spec).files_bytes(spec.workload, workload_axes(sweep), spec.run_shape)


def reused_bytes(spec: Spec, sweep: Mapping[str, ScalarValue], mountpoint: str) -> int:
    """Space already held by files the workload writes into (a setup step fallocated the
    file fio then writes): free for the workload, though not free on the filesystem."""
    root = os.path.realpath(mountpoint)
    held = 0
    for name in benchmark(spec).reused_files(spec.workload, workload_axes(sweep), spec.run_shape):
        path = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([root, path]) == root and os.path.isfile(path):
            held += os.stat(path).st_blocks * 512
    return held


def fits(needed_bytes: int | None, available_bytes: int) -> bool:
    return needed_bytes is None or needed_bytes <= available_bytes * FIT_MARGIN


def check_fits(spec: Spec, sweep: Mapping[str, ScalarValue], fs_bytes: int) -> None:
    """Refuse a point whose files cannot fit the filesystem (before laying them out)."""
    needed, how = files_bytes(spec, sweep)
    if not fits(needed, fs_bytes):
        raise FslabError(
            f"{how} = {format_bytes(needed or 0)} does not fit the filesystem's "
            f"{format_bytes(fs_bytes)} free; lower the per-job filesize or grow target.size"
        )


def run_prepare(plan: Plan, *, timeout_s: float, log: CommandLog) -> WorkloadOutcome | None:
    """The prepare phase, before the measured window; the failure, or None."""
    for command in plan.phase("prepare"):
        record = run_interruptible(
            list(command.argv),
            timeout_s=timeout_s,
            log=log if command.record else None,
            env=plan.env,
        )
        if record.returncode != 0 or record.timed_out:
            return _failed(command, record)
    return None


def run_measured(
    bench: Benchmark, plan: Plan, *, runtime_s: float, timeout_s: float, log: CommandLog
) -> WorkloadOutcome:
    """The run phase (the measured window), each run followed by the cleanup phase;
    a repeated plan runs again until runtime_s has passed. Only the first run's
    commands are recorded."""
    deadline = time.monotonic() + runtime_s
    outcomes: list[WorkloadOutcome] = []
    iteration = 0
    while True:
        for command in plan.phase("run"):
            record = run_interruptible(
                list(command.argv),
                timeout_s=timeout_s,
                log=log if iteration == 0 and command.record else None,
                env=plan.env,
            )
            output = Output(
                command.argv,
                record.stdout,
                record.stderr,
                record.returncode,
                record.timed_out,
                timeout_s,
                iteration,
                record.seconds,
                plan.workload,
            )
            outcome = bench.judge(output)
            if not outcome.ok:
                return outcome
            outcomes.append(outcome)
        for command in plan.phase("cleanup"):
            record = run_interruptible(
                list(command.argv),
                timeout_s=timeout_s,
                log=log if iteration == 0 and command.record else None,
                env=plan.env,
            )
            if record.returncode != 0 or record.timed_out:
                return _failed(command, record)
        iteration += 1
        if not plan.repeat or time.monotonic() >= deadline:
            break
    return bench.combine(outcomes)


def preset_argv(
    preset: str, directory: str, sweep: Mapping[str, ScalarValue], runtime_s: float
) -> list[str]:
    """A built-in preset's measured command at one sweep point, without ramp.

    Tests, captures and benchmarks that need "the seed workload" take it from
    the preset, so there is one definition of it.
    """
    from fslab.spec.load import load_spec

    spec, _ = load_spec(preset, overrides=[f'run.runtime="{runtime_s:g}s"', 'run.ramp="0s"'])
    return workload_plan(spec, sweep, directory).run_argv


def _failed(command: Command, record: CommandRecord) -> WorkloadOutcome:
    """A command of the workload that failed or timed out: the point fails with its output."""
    output = record.stderr or record.stdout
    said = next((x.strip() for x in output.splitlines() if x.strip()), "")
    return WorkloadOutcome(
        ok=False,
        # the tool's own first word on it: "smalloc: OOM. Consider using --alloc-size ..."
        error=f"{command.what or command.argv[0]} failed" + (f": {said[:160]}" if said else ""),
        stderr=output,
    )
