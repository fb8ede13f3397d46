"""The whole metric catalog: the workload's entries (fslab.vocab) and the collectors'.

fslab.vocab explains the patterns and why directions are declared, never guessed.
"""

from __future__ import annotations

from fslab.vocab import UNKNOWN, WORKLOAD_CATALOG, Catalog, CatalogEntry, Direction, MetricDef

__all__ = ["CATALOG", "UNKNOWN", "Direction", "MetricDef", "metric_def"]

# (pattern, definition); order matters: the first matching pattern wins.
COLLECTOR_CATALOG: tuple[CatalogEntry, ...] = (
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
    ("vm.*_per_s", MetricDef("none", "pages/s", "pages dirtied or written back per second")),
    ("vm.*_delta", MetricDef("none", "events", "/proc/vmstat counter change during the run")),
    ("vm.*_pages_*", MetricDef("none", "pages", "dirty or writeback pages during the run")),
    ("vm.**", MetricDef("none", "", "virtual memory statistics (/proc/vmstat)")),
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


CATALOG = Catalog(WORKLOAD_CATALOG + COLLECTOR_CATALOG)


def metric_def(name: str) -> MetricDef:
    """The declared definition of a metric; unknown names get direction "none"."""
    return CATALOG.lookup(name)
