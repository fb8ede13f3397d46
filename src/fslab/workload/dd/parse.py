"""dd: GNU dd's summary line to metrics.

Samples: tests/data/dd_cached.stderr.txt (and dd_fsync, dd_progress, dd_fail_*),
captured by tests/data/capture_workload.py.

Some reports (the 1728-core ext4 falloff) give their evidence as a dd run, so
fslab can replay it as written. dd prints its result on stderr:

    10+0 records in
    10+0 records out
    10485760 bytes (10 MB, 10 MiB) copied, 0.0130484 s, 804 MB/s

Throughput is recomputed from the exact byte count and seconds, not read from
the rounded rate dd prints. dd's words and decimal separator follow the locale,
so run it with LC_ALL=C; a decimal comma is accepted anyway.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fslab.base.errors import ToolError

_RECORDS_OUT_RE = re.compile(r"^\d+\+\d+ records out$")
# coreutils >= 8.24: "N bytes (10 MB, 10 MiB) copied, 0.0123 s, 852 MB/s"
# older:             "N bytes (10 MB) copied, 17.4307 s, 602 kB/s"; one byte: "1 byte copied, ..."
_SUMMARY_RE = re.compile(
    r"^(?P<bytes>\d+) bytes?(?: \([^)]*\))? copied, "
    r"(?P<seconds>\d+(?:[.,]\d+)?(?:e[-+]?\d+)?) s\b"
)


@dataclass
class DdResult:
    """What dd says it copied, and in how long."""

    bytes_copied: int
    seconds: float

    @property
    def bw_bytes_s(self) -> float:
        """Bytes per second; NaN when dd reports zero seconds (nothing measurable)."""
        return self.bytes_copied / self.seconds if self.seconds > 0 else math.nan


def parse_dd_output(stderr: str) -> DdResult:
    """The final summary of GNU dd's stderr; status=progress lines before it are skipped.

    Raises ToolError when dd reported an error (even if it printed a summary of
    the partial copy: a short copy's speed is not the workload's) or printed no
    summary at all.
    """
    lines = [line.strip() for line in stderr.replace("\r", "\n").splitlines()]
    errors = [
        line for line in lines if line.startswith("dd: ") and not line.startswith("dd: warning")
    ]
    if errors:
        raise ToolError(f"dd failed: {'; '.join(errors)}", stderr=stderr)
    records_out = [i for i, line in enumerate(lines) if _RECORDS_OUT_RE.match(line)]
    if not records_out:
        raise ToolError(_no_summary_message(lines), stderr=stderr)
    for line in lines[records_out[-1] + 1 :]:
        match = _SUMMARY_RE.match(line)
        if match:
            seconds = float(match["seconds"].replace(",", "."))
            return DdResult(bytes_copied=int(match["bytes"]), seconds=seconds)
    raise ToolError(_no_summary_message(lines), stderr=stderr)


def _no_summary_message(lines: Sequence[str]) -> str:
    tail = " | ".join(line for line in lines if line)[-300:]
    return (
        "no dd summary line ('N bytes ... copied, S s, ...') in dd's stderr: dd was killed, "
        "is not GNU dd, or ran with status=none or a non-C locale"
        + (f"; it printed: {tail}" if tail else "; it printed nothing")
    )
