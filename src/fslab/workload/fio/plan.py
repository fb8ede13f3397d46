"""From a fio workload and a point's swept options to the fio fslab runs.

Every fio fslab starts, and preflight's, is built here: the workload's own
options (given, pasted or from a job file), the swept ones, the run's runtime
and ramp, then the allowlist (trust.py) unless the spec opted in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from fslab.base.errors import UsageError
from fslab.base.units import parse_size_bytes
from fslab.base.vocab import ScalarValue
from fslab.workload.base import RunShape
from fslab.workload.fio import options as fio_mod
from fslab.workload.fio import trust as fio_trust
from fslab.workload.fio.spec import FioWorkload

SEPARATE_LAYOUT_BYTES = 64 * 1024**2
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


def fio_options(
    workload: FioWorkload, swept: Mapping[str, ScalarValue], run: RunShape
) -> fio_mod.FioOptions:
    """Base options + swept values (workload axes only) + the run's runtime/ramp.

    Refuses (UsageError) an option that runs a program or acts outside the
    scratch filesystem unless the spec opted in.
    """
    options, _ = base_fio_options(workload)
    for key, value in swept.items():
        options[key] = None if value is True else str(value)
    if not workload.allow_commands:
        _refuse_untrusted(workload, options, swept)
    if run.runtime_given or "runtime" not in options:
        options["runtime"] = f"{run.runtime_s:g}"
    if run.ramp_s > 0:
        options["ramp_time"] = f"{run.ramp_s:g}"
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


def fio_argv(
    workload: FioWorkload, swept: Mapping[str, ScalarValue], run: RunShape, directory: str
) -> list[str]:
    options = fio_options(workload, swept, run)
    pasted_max = options.pop("max-jobs", None) or options.pop("max_jobs", None)
    argv = fio_mod.build_fio_argv(options, directory=directory)
    max_jobs = max(int(options.get("numjobs") or 1), int(pasted_max or 1))
    if max_jobs > 1:
        argv.insert(1, f"--max-jobs={max_jobs}")
    files = int(options.get("nrfiles") or 1) * max_jobs
    if files > ALLOC_FILES and not ("alloc_size" in options or "alloc-size" in options):
        # fio keeps each file's state in its smalloc pools (16 MiB each, 16 at most): 800k
        # files ran it out ("smalloc: OOM"); pools of 1 KiB per 16 files hold them
        argv.insert(1, f"--alloc-size={max(16384, -(-files // 16))}")
    return argv


ALLOC_FILES = 100_000
"""Files (nrfiles x jobs) past which fio is given larger smalloc pools."""


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


def needs_separate_layout(options: fio_mod.FioOptions) -> bool:
    """Lay files out in a run of their own when that takes long enough to matter.

    fio fsyncs what it lays out (create_fsync defaults to on) and starts its
    clock after layout, so the figures are the same either way; a long layout
    would however fall inside the collectors' window, and a separate fio costs
    more than a small layout (docs/architecture.md, "Departures").
    """
    total = file_bytes_total(options)
    return total is None or total > SEPARATE_LAYOUT_BYTES
