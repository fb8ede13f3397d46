"""A bug report's sysbench command line as the [workload] fields: the allowlist.

Only `--test=fileio` (or `sysbench fileio`) is a sysbench fslab runs: its
file options become fields. A request count (--max-requests, --events) gives
way to fslab's runtime; --max-time or --time is the runtime; options that only
shape sysbench's output are dropped with a note; anything else (a config file, a
script, a database option, an option fslab does not know) is left out with the
reason. prepare, run and cleanup are fslab's to run, around each point.
"""

from __future__ import annotations

from collections.abc import Callable

from fslab.base.units import parse_size_bytes
from fslab.workload.base import Dropped, FromReport, ReportOptions, field_or_dropped
from fslab.workload.sysbench.spec import SysbenchWorkload

KIND = "sysbench"


def _on(value: str) -> bool:
    if value.lower() in ("on", "yes", "true", "1"):
        return True
    if value.lower() in ("off", "no", "false", "0"):
        return False
    raise ValueError(value)


def _size(value: str) -> int:
    return parse_size_bytes(value)


def _flags(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "file-num": ("file_num", int),
    "file-total-size": ("file_total_size", str),
    "file-test-mode": ("test_mode", str),
    "num-threads": ("threads", int),
    "threads": ("threads", int),
    "file-block-size": ("file_block_size", _size),
    "file-io-mode": ("io_mode", str),
    "file-fsync-freq": ("fsync_freq", int),
    "file-fsync-all": ("fsync_all", _on),
    "file-fsync-end": ("fsync_end", _on),
    "file-fsync-mode": ("fsync_mode", str),
    "file-rw-ratio": ("rw_ratio", float),
    "file-extra-flags": ("extra_flags", _flags),
    "percentile": ("percentile", int),
}
NOTES = {
    "max-requests": "fslab runs sysbench for the runtime (--time), not a request count",
    "events": "fslab runs sysbench for the runtime (--time), not a request count",
    "report-interval": "only shapes sysbench's output",
    "histogram": "only shapes sysbench's output",
    "verbosity": "only shapes sysbench's output",
    "validate": "only checks sysbench's own results",
}
RUNTIME = ("max-time", "time")


def from_report(options: ReportOptions) -> FromReport:
    fields: dict[str, object] = {}
    dropped: list[Dropped] = []
    spelled: dict[str, str] = {}
    runtime: float | None = None
    for name, value in options:
        shown = f"--{name}" if value is None else f"--{name}={value}"
        if name == "test":
            if value != "fileio":
                raise ValueError(
                    f"{shown}: fslab runs sysbench's fileio test only (its [workload] kind "
                    '"sysbench" is sysbench fileio)'
                )
        elif name in FIELDS and value is not None:
            field, convert = FIELDS[name]
            try:
                converted = convert(value)
            except ValueError:
                dropped.append(Dropped(shown, f"not a value of {field}"))
                continue
            why = field_or_dropped(SysbenchWorkload, KIND, field, converted, shown)
            if why is None:
                fields[field], spelled[name] = converted, field
            else:
                dropped.append(why)
        elif name in RUNTIME and value is not None and value.isdigit():
            runtime = float(value) or None
        elif name in NOTES:
            dropped.append(Dropped(shown, NOTES[name], ask=False))
        else:
            dropped.append(
                Dropped(shown, "an option fslab does not know to act only on sysbench's files")
            )
    return FromReport(
        fields,
        tuple(dropped),
        spelled,
        concurrency="threads",
        shrink="file_total_size",
        runtime_s=runtime,
    )
