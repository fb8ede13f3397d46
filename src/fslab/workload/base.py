"""What a benchmark declares: the contract every folder under workload/ keeps.

A benchmark is one folder, `workload/<tool>/`: its [workload] table (a
WorkloadSpec with `kind: Literal["<tool>"]`), the commands it runs (argv lists
in phases, never a shell), its output parser (a pure function in
`<tool>/parse.py`, whose docstring names a captured sample under tests/data/
and the script that captured it), its metrics and headline (data), the Debian
package and binary it needs, the axes a spec may sweep, and how a report
shows its setup. One line in workload/registry.py registers it; the spec's
workload union, the runner, preflight, `fslab doctor`, `fslab workloads`,
the report's setup text and the metric catalog follow from the declaration.
docs/workloads.md walks through one.

This layer sits below the spec: a benchmark sees the spec's [run] table only
as a RunShape, and a point only as its sweep values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from fslab.base.errors import FslabError, UsageError
from fslab.base.vocab import CatalogEntry, Direction, MetricDef, ScalarValue

Phase = Literal["prepare", "run", "cleanup"]
Sweep = Mapping[str, ScalarValue]  # a point's values of the workload's axes
Axes = Mapping[str, Sequence[ScalarValue]]  # the spec's sweep, workload axes only


class WorkloadSpec(BaseModel):
    """A benchmark's [workload] table: strict (unknown fields refused) and frozen.

    Each benchmark subclasses it with `kind: Literal["<tool>"]` and its own fields.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str


@dataclass(frozen=True)
class Metric:
    """One metric family the parser writes, declared once (fslab.base.vocab explains
    patterns and directions)."""

    name: str  # the metric name or a catalog pattern: "dd.bw_bytes_s", "fio.*.iops"
    unit: str  # "IO/s", "B/s", "ns", "s", ... (fslab.base.format spells values by it)
    direction: Direction  # "higher" or "lower" is better; "none": a fact, not a score
    description: str

    def catalog_entry(self) -> CatalogEntry:
        return self.name, MetricDef(self.direction, self.unit, self.description)


@dataclass(frozen=True)
class Command:
    """One command of a point's workload: an argv, never a shell line."""

    phase: Phase  # prepare: before the measured window; run: measured; cleanup: after each run
    argv: tuple[str, ...]
    what: str = ""  # its failure in words: "fio file layout" failed
    record: bool = True  # kept in the point's command log (the report's hand replay)


@dataclass(frozen=True)
class Plan:
    """A point's commands, in phase order."""

    commands: tuple[Command, ...]
    repeat: bool = False  # run (then cleanup) again until the runtime has passed
    env: dict[str, str] | None = None  # the commands' environment (None: fslab's own)
    workload: WorkloadSpec | None = None  # handed back in Output, for a parse that needs it

    def phase(self, phase: Phase) -> list[Command]:
        return [c for c in self.commands if c.phase == phase]

    @property
    def run_argv(self) -> list[str]:
        """The measured command (the first of the run phase)."""
        return list(self.phase("run")[0].argv)


@dataclass(frozen=True)
class RunShape:
    """What the spec's [run] table says about time, as a benchmark needs it."""

    runtime_s: float  # run.runtime, else the workload's own runtime, else 30 s
    ramp_s: float
    runtime_given: bool  # run.runtime is set: it overrides a runtime the workload gives


@dataclass(frozen=True)
class Output:
    """What one run-phase command printed, handed to the benchmark to judge."""

    argv: Sequence[str]
    stdout: str
    stderr: str
    returncode: int
    timed_out: bool
    timeout_s: float
    iteration: int = 0  # 0-based, for a repeated plan
    seconds: float = 0.0  # its wall time, start to exit (the command benchmark's figure)
    workload: WorkloadSpec | None = None  # the plan's workload, when the plan gave it


@dataclass
class WorkloadOutcome:
    """What a workload run produced: metrics, artifacts, or why it failed."""

    ok: bool
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    error: str = ""
    stderr: str = ""


@dataclass(frozen=True)
class OptedIn:
    """Something a spec opted in to (workload.allow_commands), said before the run."""

    shown: str
    reason: str


@dataclass(frozen=True)
class Complaint:
    """A spec field the tool itself rejects (preflight), in the tool's words."""

    field: str
    message: str


ReportOptions = Sequence[tuple[str, str | None]]
"""A command's options as a bug report wrote them, in the tool's own spelling ("-n", "96")
(a bare flag has None); reproduce/tools.py reads them."""


@dataclass(frozen=True)
class Dropped:
    """An option of a report's command that the [workload] leaves out, and why."""

    option: str  # as the report wrote it: "-D $MNT"
    reason: str
    ask: bool = True  # a question for the reader; False: a note (nothing to decide)
    assumed: str = ""  # what the spec does instead (default: the option is left out)


@dataclass(frozen=True)
class FromReport:
    """A report's command as the benchmark's [workload] fields (`Benchmark.from_report`).

    Only options the benchmark's allowlist knows to act inside its own files become
    fields; every other one is `dropped` with its reason. Scaling to this machine is
    the caller's: `concurrency` names the field counting threads or clients (a ladder
    up to the reporter's count), `shrink` the field made smaller when the files do not
    fit (files_bytes says how much is written)."""

    fields: dict[str, Any]  # the [workload] fields, kind left out
    dropped: tuple[Dropped, ...] = ()
    spelled: Mapping[str, str] = field(default_factory=dict)  # option as written -> field
    concurrency: str = ""
    ladder_fields: Mapping[str, Any] = field(default_factory=dict)  # set when laddered
    ladder_why: str = ""  # why ladder_fields are set
    shrink: str = ""
    runtime_s: float | None = None  # the runtime the command gives (dbench -t)


class Benchmark:
    """A benchmark's declaration and behaviour; subclass it in `workload/<tool>/benchmark.py`.

    The class attributes are data (read by the spec, doctor, `fslab workloads`,
    the metric catalog); `plan` and `parse` must be written, every other method
    has a default that suits a tool run once per point.
    """

    kind: ClassVar[str]  # workload.kind in a spec; also the metric prefix ("<kind>.")
    Spec: ClassVar[type[WorkloadSpec]]  # the [workload] table's model
    summary: ClassVar[str]  # one line for `fslab workloads`
    package: ClassVar[str]  # the Debian package that ships the binary
    binary: ClassVar[str]  # looked for on PATH by `fslab doctor`
    comm: ClassVar[str] = ""  # its process name (collectors, doctor --cleanup); default binary
    # its work is done by programs of any name (a shell and what it starts), which the
    # collectors then know only by working in the scratch filesystem
    any_process: ClassVar[bool] = False
    axes: ClassVar[tuple[str, ...]] = ()  # the workload fields a spec may sweep
    open_axes: ClassVar[str] = ""  # said when any other name may be swept ("any fio option")
    metrics: ClassVar[tuple[Metric, ...]] = ()
    headline: ClassVar[tuple[str, ...]] = ()  # headline candidates, best first
    # axes that change how much one I/O moves (fio's bs): a campaign sweeping one is
    # judged by these instead (bytes per second), since operations of another size do
    # not compare
    per_io_axes: ClassVar[tuple[str, ...]] = ()
    sized_headline: ClassVar[tuple[str, ...]] = ()
    latency: ClassVar[tuple[str, ...]] = ()  # latency candidates (p99 names), best first
    labels: ClassVar[Mapping[str, str]] = {}  # short names: {"dd.bw_bytes_s": "dd rate"}
    percentile_words: ClassVar[Mapping[str, str]] = {}  # latency family -> "fsync" (fsync p99)

    @property
    def process_name(self) -> str:
        return self.comm or self.binary

    @property
    def worker_comm(self) -> str:
        """The name collectors find its threads by; "" for any process in the scratch
        filesystem."""
        return "" if self.any_process else self.process_name

    # ------------------------------------------------------------- the spec

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        """Raise ValueError when `sweep.<axis>` cannot be swept with these values."""
        if axis not in self.axes and not self.open_axes:
            raise ValueError(
                f"sweep.{axis}: a {self.kind} workload can sweep {', '.join(self.axes)}"
            )

    def own_runtime_s(self, workload: WorkloadSpec) -> float | None:
        """The runtime the workload itself gives (None: run.runtime or 30 s decides)."""
        return None

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        """The workload with a point's swept fields applied (axes name its fields)."""
        update = {k: v for k, v in sweep.items() if k in type(workload).model_fields}
        return workload.model_copy(update=update) if update else workload

    # ------------------------------------------------------------- one point

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        """The point's commands; `directory` is the mounted scratch filesystem."""
        raise NotImplementedError

    def timing(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> tuple[float, float]:
        """(runtime, ramp) in seconds as the tool will really run them."""
        return run.runtime_s, run.ramp_s

    def check(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> None:
        """Raise UsageError on a refusal, before anything is created (default: plan it)."""
        try:
            self.plan(workload, sweep, run, "/nonexistent/fslab-check")
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def files_bytes(
        self, workload: WorkloadSpec, sweep: Sweep, run: RunShape
    ) -> tuple[int | None, str]:
        """Bytes the workload writes up front, and how that was computed (None: unknown)."""
        return None, ""

    def reused_files(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> list[str]:
        """Files the workload writes into, relative to the scratch filesystem, that a setup
        step may have made already (their space is then the workload's own)."""
        return []

    def opted_in(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> list[OptedIn]:
        """What the spec opted in to at this point (workload.allow_commands)."""
        return []

    # ------------------------------------------------------------- its output

    def parse(self, out: Output) -> dict[str, float]:
        """The metrics in the tool's output (pure; raise ToolError when there are none)."""
        raise NotImplementedError

    def judge(self, out: Output) -> WorkloadOutcome:
        """One run-phase command's outcome: a hang, an exit status or no result fails it."""
        name = self.binary
        if out.timed_out:
            error = f"{name} hung: killed after the point timeout of {out.timeout_s:.0f} s"
            return WorkloadOutcome(ok=False, error=error, stderr=out.stderr)
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or [""])[-1]
            error = f"{name} exited {out.returncode}: {last}".rstrip(": ")
            return WorkloadOutcome(ok=False, error=error, stderr=out.stderr)
        try:
            metrics = self.parse(out)
        except FslabError as exc:
            return WorkloadOutcome(ok=False, error=str(exc), stderr=out.stderr)
        return WorkloadOutcome(ok=True, metrics=metrics, artifacts=self.artifacts(out))

    def artifacts(self, out: Output) -> dict[str, str]:
        """What the point stores of the output (default: stdout and stderr, if any)."""
        kept = {f"{self.kind}.stdout": out.stdout, f"{self.kind}.stderr": out.stderr}
        return {name: text for name, text in kept.items() if text}

    def combine(self, outcomes: list[WorkloadOutcome]) -> WorkloadOutcome:
        """The point's outcome from its runs (a repeated plan has several; default: last)."""
        return outcomes[-1]

    # ------------------------------------------------------------- preflight

    def preflight(self, workload: WorkloadSpec, axes: Axes, run: RunShape) -> list[Complaint]:
        """The tool's own complaints about the spec and its swept values (`axes`: the
        workload's sweep axes), before any filesystem exists (fio --parse-only)."""
        return []

    def preflight_mounted(
        self, workload: WorkloadSpec, axes: Axes, run: RunShape, mountpoint: str
    ) -> list[Complaint]:
        """The tool's complaints on a freshly made, mounted filesystem (dd with count=0)."""
        return []

    # ------------------------------------------------------------- the report

    def from_report(self, options: ReportOptions) -> FromReport | None:
        """A bug report's command line as this benchmark's fields, through the tool's
        allowlist (None: the benchmark reads no report's command). Raise ValueError when
        the command is not one this benchmark runs (sysbench --test=oltp)."""
        return None

    def describe(self, workload: WorkloadSpec) -> list[str]:
        """The report's Setup lines for the workload as the spec gave it."""
        given = workload.model_dump(exclude_unset=True, exclude={"kind"})
        return [" ".join([self.binary, *(f"{k}={v}" for k, v in given.items())])]


def one_paragraph(text: str, limit: int = 400) -> str:
    """A tool's message on one line, usage text and repeats dropped."""
    lines: list[str] = []
    for raw in text.strip().splitlines():
        line = raw.strip()
        if line.lower().startswith(("usage:", "try '")):
            break
        if line and line not in lines:
            lines.append(line)
    joined = " ".join(lines)
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def check_field_values(
    spec: type[WorkloadSpec], kind: str, axis: str, values: Sequence[ScalarValue]
) -> None:
    """Raise ValueError naming `sweep.<axis>` when a value is not one the [workload] field
    `axis` takes (for benchmarks whose axes are their own fields: fs_mark, sysbench, dbench)."""
    annotation = spec.model_fields[axis].annotation
    for value in values:
        if isinstance(value, bool) and annotation is not bool:
            raise ValueError(f"sweep.{axis}: {value!r} is not a value of {axis}")
        try:
            spec.model_validate({"kind": kind, axis: value})
        except ValidationError as exc:
            why = "; ".join(str(e["msg"]) for e in exc.errors())
            raise ValueError(f"sweep.{axis}: {value!r}: {why}") from None


def validated_swept(workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
    """The workload with a point's swept fields applied and validated again as a whole
    (model_copy alone would let a swept value past the field's limits)."""
    update = {k: v for k, v in sweep.items() if k in type(workload).model_fields}
    if not update:
        return workload
    return type(workload).model_validate({**workload.model_dump(exclude_unset=True), **update})


def field_or_dropped(
    spec: type[WorkloadSpec],
    kind: str,
    name: str,
    value: Any,
    written: str,
    kept: Mapping[str, Any] | None = None,
) -> Dropped | None:
    """None when `name = value` is a value the [workload] field takes beside the fields
    `kept` so far (fs_mark's -N needs its -D), else why not, as a Dropped naming the
    option as the report wrote it."""
    try:
        spec.model_validate({**(kept or {}), "kind": kind, name: value})
    except ValidationError as exc:
        why = "; ".join(str(e["msg"]) for e in exc.errors())
        return Dropped(written, f"not a value fslab's {kind} {name} takes ({why})")
    return None
