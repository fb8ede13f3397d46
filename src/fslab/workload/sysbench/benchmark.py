"""sysbench fileio as a benchmark: its declaration (workload/base.py's contract) and argv.

sysbench fileio has no directory option: it creates test_file.N in its
working directory. Every phase runs as `env -C <scratch mount> sysbench ...`,
so the files are on the filesystem under test and the recorded commands
replay by hand as they ran. `prepare` lays the files out before the measured
window (a run without them fails with FATAL), `run` is measured for the
runtime (--time, whole seconds), and `cleanup` removes them after each run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import ClassVar

from fslab.base.units import parse_size_bytes
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
from fslab.workload.sysbench import parse as sysbench_parse
from fslab.workload.sysbench import report as sysbench_report
from fslab.workload.sysbench.spec import SysbenchWorkload


def _sysbench(workload: WorkloadSpec) -> SysbenchWorkload:
    assert isinstance(workload, SysbenchWorkload), workload
    return workload


def _on_off(value: bool) -> str:
    return "on" if value else "off"


def file_options(w: SysbenchWorkload) -> list[str]:
    """The options prepare, run and cleanup must agree on (the files' names and sizes)."""
    return [
        f"--file-num={w.file_num}",
        f"--file-total-size={parse_size_bytes(w.file_total_size)}",
        f"--file-test-mode={w.test_mode}",
    ]


def run_options(w: SysbenchWorkload, seconds: int) -> list[str]:
    options = [
        f"--file-block-size={w.file_block_size}",
        f"--file-io-mode={w.io_mode}",
        f"--file-fsync-freq={w.fsync_freq}",
        f"--file-fsync-all={_on_off(w.fsync_all)}",
        f"--file-fsync-end={_on_off(w.fsync_end)}",
        f"--file-fsync-mode={w.fsync_mode}",
    ]
    if w.extra_flags:
        options.append("--file-extra-flags=" + ",".join(w.extra_flags))
    if w.test_mode == "rndrw":
        options.append(f"--file-rw-ratio={w.rw_ratio:g}")
    return [
        *options,
        f"--threads={w.threads}",
        f"--time={seconds}",
        f"--percentile={w.percentile}",
        "--histogram=off",
    ]


def run_seconds(run: RunShape) -> int:
    """sysbench's --time takes whole seconds."""
    return max(1, math.ceil(run.runtime_s))


class SysbenchBenchmark(Benchmark):
    kind = "sysbench"
    Spec = SysbenchWorkload
    summary = "sysbench fileio: prepared files written or read by N threads, periodic fsync"
    package = "sysbench"
    binary = "sysbench"
    axes = ("threads", "test_mode", "fsync_freq", "file_block_size", "file_num", "io_mode")
    metrics = tuple(
        Metric(name, d.unit, d.direction, d.description) for name, d in sysbench_parse.METRICS
    )
    headline = (
        sysbench_parse.HEADLINE,
        "sysbench.read.ops_per_s",
    )
    latency = ("sysbench.lat_ms_p99", "sysbench.lat_ms_p95", "sysbench.lat_ms_max")
    labels: ClassVar[Mapping[str, str]] = {
        "sysbench.write.ops_per_s": "writes/s",
        "sysbench.read.ops_per_s": "reads/s",
        "sysbench.fsync.ops_per_s": "fsyncs/s",
        "sysbench.lat_ms_max": "event max latency",
    }
    percentile_words: ClassVar[Mapping[str, str]] = {"sysbench.lat_ms": "event"}

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        super().check_axis(axis, values)
        check_field_values(SysbenchWorkload, self.kind, axis, values)

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        return validated_swept(workload, sweep)

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        w = _sysbench(self.swept(workload, sweep))
        head = ("env", "-C", directory, "sysbench", "fileio", *file_options(w))
        return Plan(
            (
                Command("prepare", (*head, "prepare"), "sysbench fileio prepare"),
                Command("run", (*head, *run_options(w, run_seconds(run)), "run")),
                Command("cleanup", (*head, "cleanup"), "sysbench fileio cleanup"),
            ),
            env={**os.environ, "LC_ALL": "C"},
        )

    def timing(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> tuple[float, float]:
        """sysbench 1.0 has no warm-up: its --time is all measured (run.ramp is not used)."""
        return float(run_seconds(run)), 0.0

    def files_bytes(
        self, workload: WorkloadSpec, sweep: Sweep, run: RunShape
    ) -> tuple[int | None, str]:
        w = _sysbench(self.swept(workload, sweep))
        return parse_size_bytes(w.file_total_size), (
            f"sysbench file_total_size={w.file_total_size} ({w.file_num} files)"
        )

    def from_report(self, options: ReportOptions) -> FromReport:
        return sysbench_report.from_report(options)

    def parse(self, out: Output) -> dict[str, float]:
        return sysbench_parse.parse(out.stdout)

    def judge(self, out: Output) -> WorkloadOutcome:
        """sysbench says why it stopped on stdout (FATAL: ...), not on stderr."""
        if out.returncode != 0 and not out.timed_out:
            fatal = [line for line in out.stdout.splitlines() if line.startswith("FATAL:")]
            last = (fatal or out.stderr.strip().splitlines() or [""])[-1]
            error = f"sysbench exited {out.returncode}: {last}".rstrip(": ")
            return WorkloadOutcome(ok=False, error=error, stderr=out.stderr or out.stdout)
        return super().judge(out)

    def describe(self, workload: WorkloadSpec) -> list[str]:
        w = _sysbench(workload)
        given = w.model_dump(exclude_unset=True, exclude={"kind"})
        words = [f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in given.items()]
        return [
            " ".join(["sysbench fileio", *words]),
            "(in the scratch filesystem: prepare, then run for the runtime, then cleanup)",
        ]
