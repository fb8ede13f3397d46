"""From a spec's workload and a point's sweep values to a run and its metrics.

This is the only place that knows how a sweep value maps onto fio options or
dd operands, and how long a point may take before it is declared hung.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fslab.base.errors import FslabError, UsageError
from fslab.base.format import format_bytes
from fslab.base.proc import CommandLog, run_interruptible
from fslab.base.units import parse_duration_s, parse_size_bytes
from fslab.spec.model import (
    DdWorkload,
    FioWorkload,
    ScalarValue,
    Spec,
    sweep_combinations,
    workload_axes,
)
from fslab.workload import dd as dd_mod
from fslab.workload import fio as fio_mod
from fslab.workload import fio_trust
from fslab.workload.fio_json import parse_fio_json

SEPARATE_LAYOUT_BYTES = 64 * 1024**2
C_LOCALE = {**os.environ, "LC_ALL": "C"}  # dd's summary words and decimal point follow the locale


@dataclass
class WorkloadOutcome:
    """What a workload run produced: metrics, artifacts, or why it failed."""

    ok: bool
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    error: str = ""
    stderr: str = ""


MAX_JOB_FILE_BYTES = 1024**2
"""A fio job file is read up to this size, as a spec is."""


def _job_file_text(path: Path) -> str:
    try:
        if not path.is_file():
            raise UsageError(f"workload.job_file: no such file: {path}")
        with path.open("rb") as handle:
            data = handle.read(MAX_JOB_FILE_BYTES + 1)
        if len(data) > MAX_JOB_FILE_BYTES:
            raise UsageError(
                f"workload.job_file: {path} is larger than "
                f"{MAX_JOB_FILE_BYTES // 1024**2} MiB, the most fslab reads"
            )
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"workload.job_file: {path} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"workload.job_file: cannot read {path}: {exc.strerror}") from None


def base_fio_options(workload: FioWorkload) -> tuple[fio_mod.FioOptions, list[str]]:
    """The workload's fio options and the notes its import produced."""
    if workload.command_line is not None:
        imported = fio_mod.parse_fio_command_line(workload.command_line)
    elif workload.job_file is not None:
        imported = fio_mod.parse_fio_job_file(_job_file_text(Path(workload.job_file)))
    else:
        options: fio_mod.FioOptions = {
            k: (None if v is None or v is True else str(v))
            for k, v in workload.options.items()
            if v is not False
        }
        return options, []
    return dict(imported.options), list(imported.notes)


def fio_options_for_point(spec: Spec, sweep: Mapping[str, ScalarValue]) -> fio_mod.FioOptions:
    """Base options + sweep values + the run's runtime/ramp.

    Refuses (UsageError) an option that runs a program or acts outside the
    scratch filesystem unless the spec opted in: every fio fslab starts, and
    preflight's, is built here.
    """
    assert isinstance(spec.workload, FioWorkload)
    options, _ = base_fio_options(spec.workload)
    swept = workload_axes(sweep)
    for key, value in swept.items():
        options[key] = None if value is True else str(value)
    if not spec.workload.allow_commands:
        _refuse_untrusted(spec.workload, options, swept)
    if spec.run.runtime is not None or "runtime" not in options:
        options["runtime"] = f"{spec.runtime_s:g}"
    if spec.ramp_s > 0:
        options["ramp_time"] = f"{spec.ramp_s:g}"
    options.setdefault("time_based", None)
    return options


def _refuse_untrusted(
    workload: FioWorkload, options: fio_mod.FioOptions, swept: Mapping[str, ScalarValue]
) -> None:
    for name, value in options.items():
        try:
            fio_mod.refuse_conflicts(name, value)
        except UsageError as exc:
            raise UsageError(f"{_option_field(workload, name, swept)}: {exc}") from None
    untrusted = fio_trust.needs_opt_in(fio_trust.findings(options))
    if not untrusted:
        return
    first = untrusted[0]
    field = _option_field(workload, first.option, swept)
    more = (
        f" (and {len(untrusted) - 1} more: " + ", ".join(f.shown for f in untrusted[1:]) + ")"
        if len(untrusted) > 1
        else ""
    )
    raise UsageError(
        f"{field}: {first.shown}: {first.reason}{more}. fslab runs a workload that runs "
        "programs or acts outside the scratch filesystem only when the spec opts in with "
        "workload.allow_commands = true"
    )


def _option_field(workload: FioWorkload, option: str, swept: Mapping[str, ScalarValue]) -> str:
    """The spec field an option came from, for an error that names it."""
    if option in swept:
        return f"sweep.{option}"
    if workload.command_line is not None:
        return "workload.command_line"
    if workload.job_file is not None:
        return f"workload.job_file ({workload.job_file})"
    return f"workload.options.{option}"


def opted_in_commands(spec: Spec) -> list[fio_trust.Finding]:
    """What a spec that opted in (allow_commands) will run or touch outside the scratch,
    over all its points, for `fslab run` to print before it starts."""
    workload = spec.workload
    if not isinstance(workload, FioWorkload) or not workload.allow_commands:
        return []
    seen: dict[str, fio_trust.Finding] = {}
    for sweep in _distinct_sweeps(spec):
        for found in fio_trust.needs_opt_in(fio_trust.findings(fio_options_for_point(spec, sweep))):
            seen.setdefault(found.shown, found)
    return list(seen.values())


def check_workload(spec: Spec) -> None:
    """Build every point's workload options once, so a refusal comes before anything
    is created (also with --no-preflight)."""
    if isinstance(spec.workload, FioWorkload):
        for sweep in _distinct_sweeps(spec):
            fio_options_for_point(spec, sweep)


def _distinct_sweeps(spec: Spec) -> list[dict[str, ScalarValue]]:
    """Every combination of the sweep (an adaptive campaign may run any of them)."""
    return [dict(combo) for combo in sweep_combinations(spec.sweep)]


_FIO_TIME_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)?\s*$", re.IGNORECASE)
_FIO_TIME_UNITS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    None: 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


def fio_seconds(text: str | None) -> float:
    """A fio time option in seconds (fio's default unit); 0 when absent or unreadable."""
    match = _FIO_TIME_RE.match(text or "")
    if not match:
        return 0.0
    unit = match.group(2).lower() if match.group(2) else None
    return float(match.group(1)) * _FIO_TIME_UNITS[unit]


def runtime_and_ramp_s(
    spec: Spec, sweep: Mapping[str, ScalarValue] | None = None
) -> tuple[float, float]:
    """The measured runtime and ramp the point's workload will really have.

    For fio these are the options it is given (a --runtime pasted in a command
    line is kept when run.runtime is unset, and either may be swept).
    """
    if not isinstance(spec.workload, FioWorkload):
        return spec.runtime_s, spec.ramp_s
    options = fio_options_for_point(spec, sweep or {})
    runtime_s = fio_seconds(options.get("runtime")) or spec.runtime_s
    ramp_s = fio_seconds(options.get("ramp_time"))
    return runtime_s, ramp_s


def point_timeout_s(spec: Spec, sweep: Mapping[str, ScalarValue] | None = None) -> float:
    """When a point is declared hung: (runtime + ramp) x run.timeout_factor + run.setup_timeout.

    The runtime is the one fio will really run: a --runtime pasted in a command
    line (kept when run.runtime is unset) or swept, not just spec.runtime_s.
    """
    runtime_s, ramp_s = runtime_and_ramp_s(spec, sweep)
    setup_s = parse_duration_s(spec.run.setup_timeout)
    return (runtime_s + ramp_s) * spec.run.timeout_factor + setup_s


def fio_argv_for_point(spec: Spec, sweep: Mapping[str, ScalarValue], directory: str) -> list[str]:
    options = fio_options_for_point(spec, sweep)
    pasted_max = options.pop("max-jobs", None) or options.pop("max_jobs", None)
    argv = fio_mod.build_fio_argv(options, directory=directory)
    max_jobs = max(int(options.get("numjobs") or 1), int(pasted_max or 1))
    if max_jobs > 1:
        argv.insert(1, f"--max-jobs={max_jobs}")
    return argv


def layout_argv(argv: list[str]) -> list[str]:
    """The same fio job with create_only=1: lays out the files, measures nothing.

    Laying out first (then sync) keeps file creation out of the measured run and
    out of the collectors' window, which starts with the measured run.
    """
    return [*argv, "--create_only=1"]


def file_bytes_total(options: fio_mod.FioOptions) -> int | None:
    """Bytes of files all jobs lay out (None when fio sizes them itself, e.g. size=50%)."""
    size_text = options.get("filesize") or options.get("size")
    if not size_text or "%" in size_text:
        return None
    try:
        per_job = parse_size_bytes(size_text.split("-")[-1].split(":")[-1])
    except ValueError:
        return None
    return per_job * int(options.get("numjobs") or 1)


def needs_separate_layout(spec: Spec, sweep: Mapping[str, ScalarValue]) -> bool:
    """Lay files out in a run of their own when that takes long enough to matter.

    fio fsyncs what it lays out (create_fsync defaults to on) and starts its
    clock after layout, so the figures are the same either way; a long layout
    would however fall inside the collectors' window, and a separate fio costs
    more than a small layout (docs/architecture.md, "Departures").
    """
    total = file_bytes_total(fio_options_for_point(spec, sweep))
    return total is None or total > SEPARATE_LAYOUT_BYTES


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
    ("4 job(s) x 4m", "dd bs=1M x count=10"); None when fio's sizes say nothing."""
    workload = spec.workload
    if isinstance(workload, DdWorkload):
        params = dd_parameters(workload, sweep)
        return parse_size_bytes(
            params.bs
        ) * params.count, f"dd bs={params.bs} x count={params.count}"
    options = fio_options_for_point(spec, sweep)
    size_text = options.get("filesize") or options.get("size")
    numjobs = int(options.get("numjobs") or 1)
    return file_bytes_total(options), f"{numjobs} job(s) x {size_text}"


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


def run_fio(argv: list[str], *, timeout_s: float, log: CommandLog) -> WorkloadOutcome:
    record = run_interruptible(argv, timeout_s=timeout_s, log=log)
    artifacts = {"fio.json": record.stdout, "fio.stderr": record.stderr} if record.stdout else {}
    if record.timed_out:
        return WorkloadOutcome(
            ok=False,
            artifacts=artifacts,
            error=f"fio hung: killed after the point timeout of {timeout_s:.0f} s",
            stderr=record.stderr,
        )
    try:
        result = parse_fio_json(record.stdout)
    except FslabError as exc:
        return WorkloadOutcome(
            ok=False,
            artifacts=artifacts,
            error=f"fio exited {record.returncode}: {exc}",
            stderr=record.stderr or record.stdout[-4000:],
        )
    if record.returncode != 0 or result.error:
        return WorkloadOutcome(
            ok=False,
            metrics=result.metrics,
            artifacts=artifacts,
            error=f"fio exited {record.returncode} (job error {result.error})",
            stderr=record.stderr,
        )
    return WorkloadOutcome(ok=True, metrics=result.metrics, artifacts=artifacts)


def dd_parameters(workload: DdWorkload, sweep: Mapping[str, ScalarValue]) -> DdWorkload:
    """The dd workload with this point's swept operands applied."""
    update = {k: v for k, v in workload_axes(sweep).items()}
    return workload.model_copy(update=update)


def dd_argv(workload: DdWorkload, output_path: str) -> list[str]:
    return dd_mod.build_dd_argv(
        output_path=output_path,
        bs=workload.bs,
        count=workload.count,
        conv=[c for c in workload.conv.split(",") if c],
        oflag=[o for o in workload.oflag.split(",") if o],
    )


def run_dd(
    workload: DdWorkload, *, mountpoint: str, runtime_s: float, timeout_s: float, log: CommandLog
) -> WorkloadOutcome:
    """One dd, or (sustained) write + delete repeatedly until runtime_s has passed.

    The throughput of the sustained form is total bytes over the sum of the
    times dd itself reported, so file deletion is not counted as write time.
    """
    output_path = os.path.join(mountpoint, "fslab-dd.out")
    argv = dd_argv(workload, output_path)
    deadline = time.monotonic() + runtime_s
    total_bytes, total_s, iterations, seconds_each = 0, 0.0, 0, []
    while True:
        record = run_interruptible(
            argv, timeout_s=timeout_s, log=log if iterations == 0 else None, env=C_LOCALE
        )
        if record.timed_out or record.returncode != 0:
            reason = "hung" if record.timed_out else f"exited {record.returncode}"
            last_line = (record.stderr.strip().splitlines() or [""])[0]
            return WorkloadOutcome(
                ok=False,
                error=f"dd {reason} at iteration {iterations + 1}: {last_line}".rstrip(": "),
                stderr=record.stderr,
            )
        try:
            result = dd_mod.parse_dd_output(record.stderr)
        except FslabError as exc:
            return WorkloadOutcome(ok=False, error=str(exc), stderr=record.stderr)
        total_bytes += result.bytes_copied
        total_s += result.seconds
        seconds_each.append(result.seconds)
        iterations += 1
        os.unlink(output_path)
        if workload.mode == "once" or time.monotonic() >= deadline:
            break
    metrics = {
        "dd.bytes": float(total_bytes),
        "dd.seconds": total_s,
        "dd.bw_bytes_s": total_bytes / total_s if total_s > 0 else 0.0,
        "dd.iterations": float(iterations),
    }
    return WorkloadOutcome(
        ok=True, metrics=metrics, artifacts={"dd.seconds_each.json": json.dumps(seconds_each)}
    )


def preset_fio_argv(preset: str, directory: str, numjobs: int, runtime_s: float) -> list[str]:
    """A built-in preset's fio command for one numjobs value, without ramp.

    Tests, captures and benchmarks that need "the seed workload" take it from
    the preset, so there is one definition of it.
    """
    from fslab.spec.load import load_spec

    spec, _ = load_spec(preset, overrides=[f'run.runtime="{runtime_s:g}s"', 'run.ramp="0s"'])
    return fio_argv_for_point(spec, {"numjobs": numjobs}, directory)
