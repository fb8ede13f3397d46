"""dd as a benchmark: its declaration (workload/base.py's contract) and its behaviour.

Some reports (the 1728-core ext4 falloff) give their evidence as a dd run, so
fslab can replay it as written: once, or (mode = "sustained") write + delete
repeatedly for the runtime, the throughput being total bytes over the sum of
the times dd itself reported, so file deletion is not counted as write time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from fslab.base.errors import ToolError, UsageError
from fslab.base.proc import run as run_command
from fslab.base.units import MIB, parse_size_bytes
from fslab.workload.base import (
    Axes,
    Benchmark,
    Command,
    Complaint,
    Metric,
    Output,
    Plan,
    RunShape,
    Sweep,
    WorkloadOutcome,
    WorkloadSpec,
    one_paragraph,
)
from fslab.workload.dd.argv import build_dd_argv, drop_cache_argv
from fslab.workload.dd.parse import parse_dd_output
from fslab.workload.dd.spec import DdWorkload

OUTPUT_NAME = "fslab-dd.out"
INPUT_NAME = "fslab-dd.in"  # the file a read reads
# dd's operands, in the order dd is shown
SHOWN_OPERANDS = ("bs", "count", "conv", "oflag", "iflag", "size")
MAX_COMBINATIONS = 64  # preflight tries at most this many sweep combinations
TOOL_TIMEOUT_S = 120.0


def _dd(workload: WorkloadSpec) -> DdWorkload:
    assert isinstance(workload, DdWorkload), workload
    return workload


def _flags(text: str) -> list[str]:
    return [flag for flag in text.split(",") if flag]


def dd_argv(workload: DdWorkload, path: str) -> list[str]:
    """The measured dd: a write into `path`, or (read) a read of it."""
    if workload.read:
        return build_dd_argv(
            input_path=path,
            output_path="/dev/null",
            bs=workload.bs,
            count=workload.blocks,
            iflag=_flags(workload.iflag),
        )
    return build_dd_argv(
        output_path=path,
        bs=workload.bs,
        count=workload.count,
        conv=_flags(workload.conv),
        oflag=_flags(workload.oflag),
    )


def layout_argv(workload: DdWorkload, path: str) -> list[str]:
    """The file a read reads: bs x count zeroes, in MiB blocks where they divide it, synced."""
    total = parse_size_bytes(workload.bs) * workload.blocks
    bs, count = ("1M", total // MIB) if total % MIB == 0 else (workload.bs, workload.blocks)
    return build_dd_argv(output_path=path, bs=bs, count=count, conv=["fsync"])


class DdBenchmark(Benchmark):
    kind = "dd"
    Spec = DdWorkload
    summary = "dd: a sequential copy from /dev/zero into a file, or of a file to /dev/null"
    package = "coreutils"
    binary = "dd"
    axes = ("bs", "count", "conv", "oflag", "iflag")
    metrics = (
        Metric("dd.bw_bytes_s", "B/s", "higher", "bytes copied per second"),
        Metric("dd.seconds", "s", "lower", "time to copy a fixed amount"),
        Metric("dd.bytes", "B", "none", "bytes copied"),
        Metric("dd.iterations", "runs", "none", "dd invocations in the point"),
    )
    headline = ("dd.bw_bytes_s",)
    labels: ClassVar[Mapping[str, str]] = {"dd.bw_bytes_s": "dd rate"}

    # ------------------------------------------------------------- one point

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        dd = _dd(self.swept(workload, sweep))
        path = os.path.join(directory, INPUT_NAME if dd.read else OUTPUT_NAME)
        env = {**os.environ, "LC_ALL": "C"}  # dd's summary words and decimal point
        measured = Command("run", tuple(dd_argv(dd, path)))
        if dd.read:
            drop = tuple(drop_cache_argv(path))
            commands = (
                Command("prepare", tuple(layout_argv(dd, path)), "writing the file dd reads"),
                Command("prepare", drop, "dropping the file's cached pages"),
                measured,
                # every read starts cold; not recorded: the recipe says it in words
                Command("cleanup", drop, "dropping the file's cached pages", False),
            )
            return Plan(commands, repeat=dd.mode == "sustained", env=env)
        return Plan(
            (
                measured,
                # not recorded, as the repeated runs are not: the recipe says it in words
                Command("cleanup", ("rm", "-f", "--", path), "removing dd's file", False),
            ),
            repeat=dd.mode == "sustained",
            env=env,
        )

    def check(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> None:
        """Operands are dd's to judge: preflight runs it with count=0."""

    def files_bytes(
        self, workload: WorkloadSpec, sweep: Sweep, run: RunShape
    ) -> tuple[int | None, str]:
        dd = _dd(self.swept(workload, sweep))
        return parse_size_bytes(dd.bs) * dd.blocks, f"dd bs={dd.bs} x count={dd.blocks}"

    # ------------------------------------------------------------- its output

    def parse(self, out: Output) -> dict[str, float]:
        result = parse_dd_output(out.stderr)
        return {"dd.bytes": float(result.bytes_copied), "dd.seconds": result.seconds}

    def judge(self, out: Output) -> WorkloadOutcome:
        if out.timed_out or out.returncode != 0:
            reason = "hung" if out.timed_out else f"exited {out.returncode}"
            last_line = (out.stderr.strip().splitlines() or [""])[0]
            return WorkloadOutcome(
                ok=False,
                error=f"dd {reason} at iteration {out.iteration + 1}: {last_line}".rstrip(": "),
                stderr=out.stderr,
            )
        try:
            metrics = self.parse(out)
        except ToolError as exc:
            return WorkloadOutcome(ok=False, error=str(exc), stderr=out.stderr)
        return WorkloadOutcome(ok=True, metrics=metrics)

    def combine(self, outcomes: list[WorkloadOutcome]) -> WorkloadOutcome:
        """Total bytes over the sum of dd's own times, over every iteration."""
        seconds_each = [o.metrics["dd.seconds"] for o in outcomes]
        total_bytes = sum(o.metrics["dd.bytes"] for o in outcomes)
        total_s = sum(seconds_each)
        metrics = {
            "dd.bytes": float(total_bytes),
            "dd.seconds": total_s,
            "dd.bw_bytes_s": total_bytes / total_s if total_s > 0 else 0.0,
            "dd.iterations": float(len(outcomes)),
        }
        return WorkloadOutcome(
            ok=True, metrics=metrics, artifacts={"dd.seconds_each.json": json.dumps(seconds_each)}
        )

    # ------------------------------------------------------------- preflight

    def preflight_mounted(
        self, workload: WorkloadSpec, axes: Axes, run: RunShape, mountpoint: str
    ) -> list[Complaint]:
        """dd's own parse of each point's operands, with count=0 on the real filesystem."""
        problems = []
        combos = list(itertools.product(*axes.values()))
        for number, values in enumerate(combos[:MAX_COMBINATIONS]):
            sweep = dict(zip(axes, values, strict=True))
            path = os.path.join(mountpoint, f"fslab-preflight-dd-{number}")
            try:
                params = _dd(self.swept(workload, sweep))
                if params.read:
                    Path(path).touch()  # an empty file to read: dd judges bs and iflag
                argv = [("count=0" if a.startswith("count=") else a) for a in dd_argv(params, path)]
            except (UsageError, ValueError) as exc:
                problems.append(Complaint("workload", str(exc)))
                continue
            what = " ".join(a for a in argv[3:] if not a.startswith(("count=", "of=", "if=")))
            try:
                record = run_command(argv, check=False, timeout_s=TOOL_TIMEOUT_S)
            except ToolError as exc:
                problems.append(Complaint("workload.kind", str(exc)))
                break
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            if record.returncode != 0:
                where = _dd_field(record.stderr, sweep)
                problems.append(
                    Complaint(where, f"dd rejected {what}: {one_paragraph(record.stderr)}")
                )
        return problems

    # ------------------------------------------------------------- the report

    def describe(self, workload: WorkloadSpec) -> list[str]:
        dd = _dd(workload)
        given = dd.model_fields_set  # the operands the spec gave; dd's defaults are not shown
        words = [f"{k}={getattr(dd, k)}" for k in SHOWN_OPERANDS if k in given and getattr(dd, k)]
        if dd.read:
            extra = " (repeated for the runtime)" if dd.mode == "sustained" else ""
            return [
                f"dd if=MNT/{INPUT_NAME} of=/dev/null {' '.join(words)}{extra}, the file "
                "written first and its cached pages dropped before every read"
            ]
        extra = " (repeated, write + delete, for the runtime)" if dd.mode == "sustained" else ""
        return [f"dd if=/dev/zero of=MNT/{OUTPUT_NAME} {' '.join(words)}{extra}"]


def _dd_field(stderr: str, sweep: Sweep) -> str:
    """The operand dd complains about ("invalid conversion", "invalid output flag")."""
    text = stderr.lower()
    key = "conv" if "conversion" in text else "oflag" if "flag" in text else None
    if key is None:
        return "sweep" if sweep else "workload"
    return f"sweep.{key}" if key in sweep else f"workload.{key}"
