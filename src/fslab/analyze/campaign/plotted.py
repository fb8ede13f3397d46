"""The figures the reports draw, computed from stored metrics and artifacts:
contention (workqueues, journal, where threads block), latency distributions,
and the headline bars of the comparison. Reports only lay these out.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fslab.analyze.campaign import stats
from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.base.vocab import ScalarValue, point_label
from fslab.workload.fio.parse import latency_histogram

TOP_WORKQUEUES = 5
TOP_WCHANS = 8
WQ_FIELDS = (
    "items_per_s",
    "queue_delay_ns_p99",
    "start_delay_ns_p99",
    "exec_ns_p99",
    "utilisation",
    "peak_concurrency",
)
JBD2_FIELDS = (
    ("jbd2.transactions_per_s", "commits per second"),
    ("jbd2.avg_commit_ms", "commit time, ms (kernel average)"),
    ("jbd2.avg_wait_ms", "waiting for a transaction, ms"),
    ("jbd2.avg_request_delay_ms", "request delay, ms"),
    ("jbd2.avg_running_ms", "transaction running, ms"),
    ("jbd2.avg_locked_ms", "transaction locked, ms"),
    ("jbd2.avg_flushing_ms", "flushing ordered data, ms"),
    ("jbd2.avg_logging_ms", "logging, ms"),
    ("jbd2.handles_per_txn", "handles per transaction"),
    ("jbd2.blocks_per_txn", "blocks per transaction"),
    ("jbd2.run.wait_ms_p99", "wait per commit p99, ms"),
    ("jbd2.run.running_ms_p99", "running per commit p99, ms"),
    ("jbd2.run.locked_ms_p99", "locked per commit p99, ms"),
    ("jbd2.run.logging_ms_p99", "logging per commit p99, ms"),
)


# --- contention ---------------------------------------------------------------------


@dataclass
class MetricPair:
    name: str
    label: str
    best: float | None
    worst: float | None


@dataclass
class WorkqueueRow:
    name: str
    best: dict[str, float | None]
    worst: dict[str, float | None]
    waiting: float  # items/s x (queue + start delay p99) at the worst point: ranks rows


@dataclass
class WchanRow:
    function: str
    best_threads: float | None
    worst_threads: float
    worst_share: float | None  # of the blocked threads at the worst point


def jbd2_pairs(worst: Mapping[str, float], best: Mapping[str, float]) -> list[MetricPair]:
    """The journal's statistics at the best and the worst point, those either has."""
    pairs = [
        MetricPair(name, label, best.get(name), worst.get(name)) for name, label in JBD2_FIELDS
    ]
    return [m for m in pairs if m.best is not None or m.worst is not None]


def _wq_split(name: str) -> tuple[str, str] | None:
    for suffix in WQ_FIELDS:
        if name.startswith("wq.") and name.endswith(f".{suffix}"):
            middle = name[3 : -len(suffix) - 1]
            if middle:
                return middle, suffix
    return None


def workqueue_rows(worst: Mapping[str, float], best: Mapping[str, float]) -> list[WorkqueueRow]:
    """The workqueues that made the most work wait at the worst point, with the best point's."""
    names = {split[0] for name in (*worst, *best) if (split := _wq_split(name))}
    rows = []
    for name in names:
        w = {f: worst.get(f"wq.{name}.{f}") for f in WQ_FIELDS}
        b = {f: best.get(f"wq.{name}.{f}") for f in WQ_FIELDS}
        delay = (w["queue_delay_ns_p99"] or 0.0) + (w["start_delay_ns_p99"] or 0.0)
        rows.append(WorkqueueRow(name, b, w, (w["items_per_s"] or 0.0) * delay / 1e9))
    rows.sort(key=lambda r: (-r.waiting, r.name))
    return rows[:TOP_WORKQUEUES]


def wchan_rows(
    worst: Mapping[str, float], best: Mapping[str, float]
) -> tuple[list[WchanRow], float | None]:
    """Where the worst point's threads were blocked (kernel functions), most threads first."""
    prefix, suffix = "offcpu.wchan.", ".threads_mean"
    blocked = worst.get("offcpu.blocked_threads_mean")
    rows = []
    for name, value in worst.items():
        if name.startswith(prefix) and name.endswith(suffix):
            func = name[len(prefix) : -len(suffix)]
            share = value / blocked if blocked else None
            rows.append(WchanRow(func, best.get(name), value, share))
    rows.sort(key=lambda r: (-r.worst_threads, r.function))
    return rows[:TOP_WCHANS], blocked


# --- latency distribution -----------------------------------------------------------


@dataclass
class LatencyDistribution:
    """One point's latency distribution: its jobs' json+ bins merged."""

    samples: int
    values_ns: list[float]
    cumulative: list[float]  # fraction of samples <= values_ns[i]


def latency_distribution(fio_json_text: str, family: str) -> LatencyDistribution:
    """From the stored fio.json; raises (with the reason) when it has no such bins."""
    merged = sorted(latency_histogram(fio_json_text, family).items())
    total = sum(count for _, count in merged)
    cumulative, running = [], 0
    for _, count in merged:
        running += count
        cumulative.append(running / total)
    return LatencyDistribution(total, [float(v) for v, _ in merged], cumulative)


# --- comparison bars ----------------------------------------------------------------


@dataclass
class BarEntry:
    config: str
    n: int
    median: float
    ci_low: float | None  # 95% bootstrap interval of the median (None: too few runs)
    ci_high: float | None


@dataclass
class BarGroup:
    point: dict[str, ScalarValue]
    label: str
    entries: list[BarEntry]


def headline_bars(data: CampaignData, configs: Sequence[str]) -> list[BarGroup]:
    """Headline medians per sweep point and configuration, with 95% intervals."""
    if data.headline is None:
        return []
    per_config = {c: data.values(data.headline, c) for c in configs}
    keys = list(dict.fromkeys(k for values in per_config.values() for k in values))
    groups = []
    for key in keys:
        entries = []
        for config in configs:
            values = per_config[config].get(key)
            if not values:
                continue
            low = high = None
            if len(values) >= MIN_REPS:
                low, high = stats.bootstrap_median_ci(values, n_resamples=2000)
            entries.append(BarEntry(config, len(values), statistics.median(values), low, high))
        groups.append(BarGroup(dict(key), point_label(key), entries))
    return groups
