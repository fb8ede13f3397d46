"""What each metric means: which way is better, and its unit.

The direction of a metric is part of its definition, declared here as data,
never inferred from the value or guessed from words in the name: a comparison
calls a change "better" or "worse" only for metrics declared "higher" or
"lower". Evidence metrics (profiles, queueing delays, CPU shares, counters)
describe *why* something happened, not whether it is good, so they are
declared "none" and a comparison only says whether they changed. A name that
matches no declared pattern is "none" too.

Patterns are matched against the whole name, first match wins:
``*`` matches any run of characters within one dot-separated segment
(``clat_ns_p*``), ``**`` matches any run of characters including dots
(``profile.inclusive.**``, since kernel symbols such as ``foo.isra.0``
contain dots).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Direction = Literal["higher", "lower", "none"]


@dataclass(frozen=True)
class MetricDef:
    """A metric family's declared meaning."""

    direction: Direction  # which way is better; "none": evidence, not good or bad
    unit: str  # as in the metric name: "IO/s", "B/s", "ns", "%", ...
    description: str


UNKNOWN = MetricDef("none", "", "not in the catalog: direction unknown, so none")

# (pattern, definition); order matters: the first matching pattern wins.
CATALOG: tuple[tuple[str, MetricDef], ...] = (
    # --- fio: per direction (read, write, trim, total) and fsync ------------------------
    ("fio.*.iops", MetricDef("higher", "IO/s", "I/O operations per second, summed over jobs")),
    ("fio.*.bw_bytes_s", MetricDef("higher", "B/s", "bytes per second, summed over jobs")),
    ("fio.*.clat_ns_*", MetricDef("lower", "ns", "completion latency (merged histogram)")),
    ("fio.*.slat_ns_*", MetricDef("lower", "ns", "submission latency")),
    ("fio.*.lat_ns_*", MetricDef("lower", "ns", "total latency (fsync: time per fsync call)")),
    ("fio.*.io_bytes", MetricDef("none", "B", "bytes moved; set by runtime, not a score")),
    ("fio.sync.count", MetricDef("none", "calls", "fsync/fdatasync calls issued")),
    ("fio.cpu.*_pct", MetricDef("none", "%", "fio's CPU time share (user or system)")),
    ("fio.cpu.ctx", MetricDef("none", "switches", "context switches of fio jobs")),
    ("fio.runtime_s", MetricDef("none", "s", "measured run time")),
    ("fio.jobs", MetricDef("none", "jobs", "worker count fio reports")),
    # --- dd -----------------------------------------------------------------------------
    ("dd.bw_bytes_s", MetricDef("higher", "B/s", "bytes copied per second")),
    ("dd.seconds", MetricDef("lower", "s", "time to copy a fixed amount")),
    ("dd.bytes", MetricDef("none", "B", "bytes copied")),
    ("dd.iterations", MetricDef("none", "runs", "dd invocations in the point")),
    # --- workqueues (evidence of queueing, not a score) ---------------------------------
    ("wq.*.*_ns_*", MetricDef("none", "ns", "workqueue delay or execution time")),
    ("wq.*.items_per_s", MetricDef("none", "1/s", "work items executed per second")),
    ("wq.*.peak_concurrency", MetricDef("none", "items", "most work items running at once")),
    ("wq.*.utilisation", MetricDef("none", "fraction", "busy time / elapsed (may exceed 1)")),
    ("wq.events_per_s", MetricDef("none", "1/s", "workqueue trace events per second")),
    ("wq.**", MetricDef("none", "", "workqueue collector bookkeeping")),
    # --- journal, block layer, tracepoints, system --------------------------------------
    ("jbd2.*_ms", MetricDef("none", "ms", "jbd2 journal commit statistics (/proc)")),
    ("jbd2.run.*_ms_*", MetricDef("none", "ms", "jbd2_run_stats phase times per commit")),
    ("jbd2.**_per_s", MetricDef("none", "1/s", "journal commits per second")),
    ("jbd2.**", MetricDef("none", "", "jbd2 journal statistics")),
    ("blk.*_pct", MetricDef("none", "%", "block device time busy / utilisation")),
    ("blk.*_lat_ms_mean", MetricDef("none", "ms", "device time per I/O (diskstats ticks/ios)")),
    ("blk.*_bytes_per_s", MetricDef("none", "B/s", "bytes per second at the block device")),
    ("blk.**", MetricDef("none", "", "block layer statistics")),
    ("tp.**.per_s", MetricDef("none", "1/s", "tracepoint hits per second")),
    ("tp.**.count", MetricDef("none", "events", "tracepoint hits during the run")),
    ("tp.**_pct", MetricDef("none", "%", "ratio of tracepoint counts")),
    ("tp.**", MetricDef("none", "", "tracepoint collector statistics")),
    ("sys.cpu.*_pct", MetricDef("none", "%", "system-wide CPU time share by state")),
    ("sys.*_per_s", MetricDef("none", "1/s", "system-wide event rate (/proc/stat, vmstat)")),
    ("sys.elapsed_s", MetricDef("none", "s", "time the system statistics cover")),
    ("sys.**", MetricDef("none", "", "system-wide statistics")),
    ("fs.**", MetricDef("none", "B", "filesystem state around the point (free space, fill)")),
    # --- profiles -----------------------------------------------------------------------
    (
        "profile.inclusive.**",
        MetricDef("none", "share", "share of profile samples with the function on the stack"),
    ),
    (
        "profile.self.**",
        MetricDef("none", "share", "share of profile samples with the function on top"),
    ),
    ("profile.*_share", MetricDef("none", "share", "share of profile samples")),
    ("profile.samples", MetricDef("none", "samples", "profile samples taken")),
    ("profile.freq_hz", MetricDef("none", "Hz", "profile sampling frequency")),
    ("profile.**", MetricDef("none", "", "profile statistics")),
    (
        "offcpu.wchan.**.threads_mean",
        MetricDef("none", "threads", "mean threads blocked in this kernel function"),
    ),
    ("offcpu.*threads_mean", MetricDef("none", "threads", "mean threads per state sample")),
    ("offcpu.**", MetricDef("none", "", "off-CPU (blocked thread) statistics")),
)


def _compile(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*)", pattern)
    regex = "".join(
        ".*" if part == "**" else "[^.]*" if part == "*" else re.escape(part) for part in parts
    )
    return re.compile(regex + r"\Z")


_COMPILED = tuple((_compile(pattern), mdef) for pattern, mdef in CATALOG)


@lru_cache(maxsize=4096)
def metric_def(name: str) -> MetricDef:
    """The declared definition of a metric; unknown names get direction "none"."""
    for regex, mdef in _COMPILED:
        if regex.match(name):
            return mdef
    return UNKNOWN
