"""fs_mark's stdout (or its -l log) to metrics.

Samples: tests/data/workloads/fs_mark/ext4_robot_s1.txt (and the other *.txt
beside it), captured by tests/data/workloads/fs_mark/capture.sh.

Parses what fs_mark 3.3 (Debian fsmark 3.3-3) prints (ext4_robot_s1.txt is
the shape bug reports run: -D 16 -N 256 -n N -L 8 -S 1 -s 8192). fs_mark
echoes its argv, then one table row per iteration (-L):

    #  fs_mark  -d  /tmp/fslwl-nmHxJZ/mjKjI/a  -D  16  ...  -L  3  -S  1  -s  8192
    #	Version 3.3, 2 thread(s) starting at Thu Dec  3 14:11:23 2026
    ...
    FSUse%        Count         Size    Files/sec     App Overhead
        10         4000         8192       2961.5            38061

What each figure means:

- Files/sec: files created (and written, and fsync'ed with -S 1) per second in
  that iteration, over all threads: the figure a report quotes. fslab keeps
  every iteration (``fs_mark.iter<N>.files_per_s``) because fs_mark keeps the
  files between iterations, so later iterations run on a fuller, deeper tree
  and a falloff can sit inside one run; ``fs_mark.files_per_s`` is their
  arithmetic mean, as the robots that report fs_mark average the column.
- App Overhead: microseconds the iteration spent outside the file-writing
  system calls (names, bookkeeping) summed over threads: fs_mark's own cost,
  evidence that the benchmark rather than the filesystem was busy, not a score.
  Kept in ms, a unit of the metric catalog.
- FSUse%: the filesystem's fill (statfs) after the iteration, which explains a
  late falloff; on btrfs it counts allocated chunks, so it starts high.
- Count: files created so far, cumulative over iterations.

The row count is checked against -L from the echoed argv, so a run that died
midway is an error, not a short average. -F (run until full) has no fixed
count. Anything else raises ToolError.
"""

from __future__ import annotations

import itertools
import re
import statistics

from fslab.base.errors import ToolError
from fslab.base.vocab import CatalogEntry, MetricDef

METRICS: tuple[CatalogEntry, ...] = (
    ("fs_mark.files_per_s", MetricDef("higher", "1/s", "files per second, mean of iterations")),
    ("fs_mark.iter*.files_per_s", MetricDef("higher", "1/s", "files per second, one iteration")),
    ("fs_mark.app_overhead_ms", MetricDef("none", "ms", "fs_mark's own time, mean of iterations")),
    ("fs_mark.iter*.app_overhead_ms", MetricDef("none", "ms", "fs_mark's own time, one iteration")),
    ("fs_mark.fs_use_pct", MetricDef("none", "%", "filesystem fill after the last iteration")),
    ("fs_mark.iter*.fs_use_pct", MetricDef("none", "%", "filesystem fill after one iteration")),
    ("fs_mark.files", MetricDef("none", "items", "files created, all iterations")),
    ("fs_mark.iterations", MetricDef("none", "runs", "iterations (table rows)")),
    ("fs_mark.threads", MetricDef("none", "threads", "threads fs_mark reports")),
)
HEADLINE = "fs_mark.files_per_s"

_HEADER_RE = re.compile(r"^FSUse%\s+Count\s+Size\s+Files/sec\s+App Overhead\s*$")
_ROW_RE = re.compile(
    r"^\s*(?P<use>\d+)\s+(?P<count>\d+)\s+(?P<size>\d+)\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<overhead>\d+)\s*$"
)
_ARGV_RE = re.compile(r"^#\s+fs_mark\s(?P<args>.*)$")
_THREADS_RE = re.compile(r"^#\s+Version \S+, (?P<threads>\d+) thread\(s\) starting")


def _expected_rows(args: list[str]) -> int | None:
    """Iterations the echoed argv asks for; None when -F runs until the filesystem is full."""
    if "-F" in args:
        return None
    loops = 1  # fs_mark's default
    for flag, value in itertools.pairwise(args):
        if flag == "-L" and value.isdigit():
            loops = int(value)
    return loops


def parse(stdout: str) -> dict[str, float]:
    """fs_mark's stdout (or -l log) → metrics; ToolError when it is not one whole run."""
    lines = stdout.splitlines()
    argvs = [m for m in map(_ARGV_RE.match, lines) if m]
    headers = [i for i, line in enumerate(lines) if _HEADER_RE.match(line)]
    if not argvs or not headers:
        snippet = stdout.strip().splitlines()[:1]
        raise ToolError(
            "not fs_mark output: no echoed command line and results table"
            + (f" (starts {snippet[0][:80]!r})" if snippet else " (empty)"),
            stdout[-2000:],
        )
    if len(argvs) > 1 or len(headers) > 1:
        raise ToolError(f"fs_mark output holds {len(headers)} runs; parse one at a time")
    rows = []
    for line in lines[headers[0] + 1 :]:
        row = _ROW_RE.match(line)
        if row is None:
            break
        rows.append(row)
    if not rows:
        raise ToolError("fs_mark output has a results table with no rows", stdout[-2000:])
    expected = _expected_rows(argvs[0]["args"].split())
    if expected is not None and len(rows) != expected:
        raise ToolError(
            f"fs_mark output has {len(rows)} of the {expected} iterations -L asked for "
            "(the run stopped early or the output is cut)",
            stdout[-2000:],
        )
    metrics: dict[str, float] = {}
    rates = [float(r["rate"]) for r in rows]
    overheads_ms = [int(r["overhead"]) / 1000 for r in rows]
    for n, (row, rate, overhead_ms) in enumerate(zip(rows, rates, overheads_ms, strict=True), 1):
        metrics[f"fs_mark.iter{n}.files_per_s"] = rate
        metrics[f"fs_mark.iter{n}.app_overhead_ms"] = overhead_ms
        metrics[f"fs_mark.iter{n}.fs_use_pct"] = float(row["use"])
    metrics["fs_mark.files_per_s"] = statistics.fmean(rates)
    metrics["fs_mark.app_overhead_ms"] = statistics.fmean(overheads_ms)
    metrics["fs_mark.fs_use_pct"] = float(rows[-1]["use"])
    metrics["fs_mark.files"] = float(rows[-1]["count"])
    metrics["fs_mark.iterations"] = float(len(rows))
    threads = next((m for m in map(_THREADS_RE.match, lines) if m), None)
    if threads is not None:
        metrics["fs_mark.threads"] = float(threads["threads"])
    return metrics
