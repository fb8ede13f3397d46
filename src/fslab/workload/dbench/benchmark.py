"""dbench as a benchmark: its declaration (workload/base.py's contract) and its argv.

dbench runs for -t seconds in all, the first fifth of them (whole seconds,
rounded down) a warm-up whose operations are not counted: fslab gives it
-t = the runtime rounded up, and tells the collectors that the warm-up is
the ramp and the rest the measured window. Its clients work in
<scratch mount>/clients (-D), which dbench removes at the end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from fslab.base.vocab import ScalarValue
from fslab.workload.base import (
    Benchmark,
    Command,
    FromReport,
    Metric,
    Output,
    Plan,
    ReportOptions,
    RunShape,
    Sweep,
    WorkloadOutcome,
    WorkloadSpec,
    check_field_values,
    validated_swept,
)
from fslab.workload.dbench import parse as dbench_parse
from fslab.workload.dbench import report as dbench_report
from fslab.workload.dbench.spec import DbenchWorkload


def _dbench(workload: WorkloadSpec) -> DbenchWorkload:
    assert isinstance(workload, DbenchWorkload), workload
    return workload


def time_limit_s(run: RunShape) -> int:
    """dbench's -t: whole seconds, warm-up included."""
    return max(1, math.ceil(run.runtime_s))


def dbench_argv(w: DbenchWorkload, directory: str, seconds: int) -> list[str]:
    flags = [flag for flag, on in (("-s", w.sync), ("-S", w.sync_dirs), ("-F", w.fsync)) if on]
    return ["dbench", "-D", directory, "-t", str(seconds), *flags, "-c", w.loadfile, str(w.clients)]


class DbenchBenchmark(Benchmark):
    kind = "dbench"
    Spec = DbenchWorkload
    summary = "dbench: N clients replay a file server's operations (loadfile client.txt)"
    package = "dbench"
    binary = "dbench"
    axes = ("clients", "sync", "sync_dirs", "fsync")
    metrics = tuple(
        Metric(name, d.unit, d.direction, d.description) for name, d in dbench_parse.METRICS
    )
    headline = (dbench_parse.HEADLINE,)
    # no latency candidate: max_latency is one longest wait, not a percentile, and the
    # reports' latency column and percentile table are of p99s
    labels: ClassVar[Mapping[str, str]] = {
        "dbench.bw_bytes_s": "dbench throughput",
        "dbench.max_latency_ms": "max latency",
    }

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        super().check_axis(axis, values)
        check_field_values(DbenchWorkload, self.kind, axis, values)

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        return validated_swept(workload, sweep)

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        w = _dbench(self.swept(workload, sweep))
        return Plan((Command("run", tuple(dbench_argv(w, directory, time_limit_s(run)))),))

    def timing(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> tuple[float, float]:
        """dbench's own warm-up (a fifth of -t) is the ramp; run.ramp is not used."""
        seconds = time_limit_s(run)
        warmup = seconds // 5
        return float(seconds - warmup), float(warmup)

    def from_report(self, options: ReportOptions) -> FromReport:
        return dbench_report.from_report(options)

    def parse(self, out: Output) -> dict[str, float]:
        return dbench_parse.parse(out.stdout)

    def judge(self, out: Output) -> WorkloadOutcome:
        """dbench prints a client's failure on stdout; say it when it exits non-zero."""
        if out.returncode != 0 and not out.timed_out and not out.stderr.strip():
            last = (out.stdout.strip().splitlines() or [""])[-1]
            error = f"dbench exited {out.returncode}: {last}".rstrip(": ")
            return WorkloadOutcome(ok=False, error=error, stderr=out.stdout[-4000:])
        return super().judge(out)

    def describe(self, workload: WorkloadSpec) -> list[str]:
        w = _dbench(workload)
        flags = [flag for flag, on in (("-s", w.sync), ("-S", w.sync_dirs), ("-F", w.fsync)) if on]
        clients = str(w.clients) if "clients" in w.model_fields_set else "CLIENTS"
        shown = " ".join(["dbench -D MNT -t RUNTIME", *flags, "-c", w.loadfile, clients])
        return [shown + " (a fifth of -t is dbench's warm-up)"]
