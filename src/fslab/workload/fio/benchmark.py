"""fio as a benchmark: its declaration (workload/base.py's contract) and its behaviour."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

from fslab.base.errors import FslabError, ToolError, UsageError
from fslab.base.units import parse_duration_s
from fslab.base.vocab import ScalarValue
from fslab.workload.base import (
    Axes,
    Benchmark,
    Command,
    Complaint,
    Metric,
    OptedIn,
    Output,
    Plan,
    RunShape,
    Sweep,
    WorkloadOutcome,
    WorkloadSpec,
    one_paragraph,
)
from fslab.workload.fio import plan as fio_plan
from fslab.workload.fio import trust as fio_trust
from fslab.workload.fio.options import FioOptions, validate_with_fio
from fslab.workload.fio.parse import parse_fio_json
from fslab.workload.fio.spec import MAX_NUMJOBS, FioWorkload

MAX_COMBINATIONS = 64  # beyond this, sweep values are tried one axis at a time only
FIO_WORKERS = 4
FSLAB_SET = ("directory", "output-format", "output", "filename", "filename_format")


def _fio(workload: WorkloadSpec) -> FioWorkload:
    assert isinstance(workload, FioWorkload), workload
    return workload


class FioBenchmark(Benchmark):
    kind = "fio"
    Spec = FioWorkload
    summary = "fio: any job, given as options, a pasted command line or a job file"
    package = "fio"
    binary = "fio"
    axes = ("numjobs", "bs", "iodepth", "rw", "size", "fsync", "ioengine")
    open_axes = "any other fio option"
    metrics = (
        # per direction (read, write, trim, total) and fsync
        Metric("fio.*.iops", "IO/s", "higher", "I/O operations per second, summed over jobs"),
        Metric("fio.*.bw_bytes_s", "B/s", "higher", "bytes per second, summed over jobs"),
        Metric("fio.*.clat_ns_*", "ns", "lower", "completion latency (merged histogram)"),
        Metric("fio.*.slat_ns_*", "ns", "lower", "submission latency"),
        Metric("fio.*.lat_ns_*", "ns", "lower", "total latency (fsync: time per fsync call)"),
        Metric("fio.*.io_bytes", "B", "none", "bytes moved; set by runtime, not a score"),
        Metric("fio.sync.count", "calls", "none", "fsync/fdatasync calls issued"),
        Metric("fio.cpu.*_pct", "%", "none", "fio's CPU time share (user or system)"),
        Metric("fio.cpu.ctx", "switches", "none", "context switches of fio jobs"),
        Metric("fio.runtime_s", "s", "none", "measured run time"),
        Metric("fio.jobs", "jobs", "none", "worker count fio reports"),
    )
    headline = ("fio.total.iops", "fio.write.iops", "fio.read.iops", "fio.trim.iops")
    per_io_axes = ("bs", "blocksize", "bsrange", "blocksize_range")
    sized_headline = ("fio.total.bw_bytes_s", "fio.write.bw_bytes_s", "fio.read.bw_bytes_s")
    latency = ("fio.sync.lat_ns_p99", "fio.write.clat_ns_p99", "fio.read.clat_ns_p99")
    labels: ClassVar[Mapping[str, str]] = {
        "fio.total.iops": "IOPS",
        "fio.write.iops": "write IOPS",
        "fio.read.iops": "read IOPS",
        "fio.trim.iops": "trim IOPS",
        "fio.total.bw_bytes_s": "throughput",
        "fio.write.bw_bytes_s": "write throughput",
        "fio.read.bw_bytes_s": "read throughput",
        "fio.sync.lat_ns": "fsync latency",
        "fio.write.clat_ns": "write completion latency",
        "fio.read.clat_ns": "read completion latency",
    }
    percentile_words: ClassVar[Mapping[str, str]] = {
        "fio.sync.lat_ns": "fsync",
        "fio.write.clat_ns": "write",
        "fio.read.clat_ns": "read",
    }

    # ------------------------------------------------------------- the spec

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        if axis in FSLAB_SET:
            raise ValueError(f"sweep.{axis}: fslab sets '{axis}' itself; it cannot be swept")
        if axis == "numjobs":
            for value in values:
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int)
                    or not 1 <= value <= MAX_NUMJOBS
                ):
                    raise ValueError(
                        f"sweep.numjobs values must be integers from 1 to {MAX_NUMJOBS} "
                        f"(fio's limit): {value!r}"
                    )

    def own_runtime_s(self, workload: WorkloadSpec) -> float | None:
        runtime = _fio(workload).options.get("runtime")
        return None if runtime is None else parse_duration_s(str(runtime))

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        return workload  # swept values are fio options, applied by plan()

    # ------------------------------------------------------------- one point

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        fio = _fio(workload)
        argv = fio_plan.fio_argv(fio, sweep, run, directory)
        commands = [Command("run", tuple(argv))]
        if fio_plan.needs_separate_layout(fio_plan.fio_options(fio, sweep, run)):
            commands[:0] = [
                Command("prepare", tuple(fio_plan.layout_argv(argv)), "fio file layout"),
                Command("prepare", ("sync", "--file-system", directory), "sync"),
            ]
        return Plan(tuple(commands))

    def check(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> None:
        fio_plan.fio_options(_fio(workload), sweep, run)

    def timing(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> tuple[float, float]:
        """The runtime and ramp fio is given: a --runtime pasted in a command line is
        kept when run.runtime is unset, and either may be swept."""
        options = fio_plan.fio_options(_fio(workload), sweep, run)
        runtime_s = fio_plan.fio_seconds(options.get("runtime")) or run.runtime_s
        return runtime_s, fio_plan.fio_seconds(options.get("ramp_time"))

    def files_bytes(
        self, workload: WorkloadSpec, sweep: Sweep, run: RunShape
    ) -> tuple[int | None, str]:
        options = fio_plan.fio_options(_fio(workload), sweep, run)
        size_text = options.get("filesize") or options.get("size")
        numjobs = int(options.get("numjobs") or 1)
        return fio_plan.file_bytes_total(options), f"{numjobs} job(s) x {size_text}"

    def reused_files(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> list[str]:
        """The job's filename= (fio joins several with ':'), when it names its own file."""
        named = str(fio_plan.fio_options(_fio(workload), sweep, run).get("filename") or "")
        return [n for n in named.split(":") if n and not n.startswith("/")]

    def opted_in(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> list[OptedIn]:
        fio = _fio(workload)
        if not fio.allow_commands:
            return []
        found = fio_trust.needs_opt_in(fio_trust.findings(fio_plan.fio_options(fio, sweep, run)))
        return [OptedIn(f.shown, f.reason) for f in found]

    # ------------------------------------------------------------- its output

    def parse(self, out: Output) -> dict[str, float]:
        return parse_fio_json(out.stdout).metrics

    def artifacts(self, out: Output) -> dict[str, str]:
        return {"fio.json": out.stdout, "fio.stderr": out.stderr} if out.stdout else {}

    def judge(self, out: Output) -> WorkloadOutcome:
        artifacts = self.artifacts(out)
        if out.timed_out:
            return WorkloadOutcome(
                ok=False,
                artifacts=artifacts,
                error=f"fio hung: killed after the point timeout of {out.timeout_s:.0f} s",
                stderr=out.stderr,
            )
        try:
            result = parse_fio_json(out.stdout)
        except FslabError as exc:
            return WorkloadOutcome(
                ok=False,
                artifacts=artifacts,
                error=f"fio exited {out.returncode}: {exc}",
                stderr=out.stderr or out.stdout[-4000:],
            )
        if out.returncode != 0 or result.error:
            return WorkloadOutcome(
                ok=False,
                metrics=result.metrics,
                artifacts=artifacts,
                error=f"fio exited {out.returncode} (job error {result.error})",
                stderr=out.stderr,
            )
        return WorkloadOutcome(ok=True, metrics=result.metrics, artifacts=artifacts)

    # ------------------------------------------------------------- preflight

    def preflight(self, workload: WorkloadSpec, axes: Axes, run: RunShape) -> list[Complaint]:
        """`fio --parse-only` on the base options, each sweep value and each combination."""
        fio = _fio(workload)
        base_field = _workload_field(fio)
        try:
            base = fio_plan.fio_options(fio, {}, run)
        except (UsageError, ValueError) as exc:
            return [Complaint(base_field, str(exc))]
        numjobs = _numjobs_problem(base, base_field)
        if numjobs is not None:
            return [numjobs]
        complaint = _fio_complaint(base)
        if complaint is not None:
            return [Complaint(base_field, f"fio rejected it: {one_paragraph(complaint)}")]
        candidates = []
        problems = []
        for where, what, sweep in _fio_candidates(axes):
            try:
                candidates.append((where, what, fio_plan.fio_options(fio, sweep, run)))
            except (UsageError, ValueError) as exc:
                problems.append(Complaint(where, f"{what}: {exc}"))
        with ThreadPoolExecutor(max_workers=FIO_WORKERS) as pool:
            complaints = list(pool.map(lambda c: _fio_complaint(c[2]), candidates))
        axis_failed = False
        for (where, what, _options), complaint in zip(candidates, complaints, strict=True):
            if complaint is None or (where == "sweep" and axis_failed):
                continue
            axis_failed = axis_failed or where != "sweep"
            problems.append(Complaint(where, f"fio rejected {what}: {one_paragraph(complaint)}"))
        return problems

    # ------------------------------------------------------------- the report

    def describe(self, workload: WorkloadSpec) -> list[str]:
        fio = _fio(workload)
        if fio.command_line:
            return [
                " ".join(fio.command_line.split()),
                "(as written in the spec: fslab sets --directory, the swept options, "
                "--runtime and --ramp_time per point; the commands below are what ran)",
            ]
        if fio.job_file:
            return [f"fio job file {fio.job_file}"]
        return ["fio " + " ".join(f"--{k}={v}" for k, v in fio.options.items())]


def _workload_field(workload: FioWorkload) -> str:
    if workload.command_line is not None:
        return "workload.command_line"
    if workload.job_file is not None:
        return "workload.job_file"
    return "workload.options"


def _fio_candidates(axes: Axes) -> list[tuple[str, str, dict[str, ScalarValue]]]:
    """(field, what, sweep values) for each option set fio is asked to parse."""
    # numjobs values are checked by the spec (integers 1..4096); fio's parse adds nothing
    tried = {k: v for k, v in axes.items() if k != "numjobs"}
    candidates = [
        (f"sweep.{axis}", f"{axis}={value}", {axis: value})
        for axis, values in tried.items()
        for value in values
    ]
    combos = [
        tuple(zip(tried, values, strict=True)) for values in itertools.product(*tried.values())
    ]
    if len(tried) > 1 and len(combos) <= MAX_COMBINATIONS:
        for combo in combos:
            what = ", ".join(f"{k}={v}" for k, v in combo)
            candidates.append(("sweep", f"the combination {what}", dict(combo)))
    return candidates


def _fio_complaint(options: FioOptions) -> str | None:
    try:
        return validate_with_fio(options)
    except (UsageError, ToolError) as exc:
        return str(exc)


def _numjobs_problem(options: Mapping[str, str | None], where: str) -> Complaint | None:
    """fio --parse-only accepts numjobs=0 and 10^9; the run would not."""
    text = options.get("numjobs")
    if text is None:
        return None
    try:
        numjobs = int(text)
    except ValueError:
        return None  # fio's own parse says what is wrong with it
    if not 1 <= numjobs <= MAX_NUMJOBS:
        return Complaint(where, f"numjobs={text}: must be from 1 to {MAX_NUMJOBS} (fio's limit)")
    return None
