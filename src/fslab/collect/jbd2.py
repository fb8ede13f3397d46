"""The ext4 journal over a point: commit counts and where commit time goes.

Two sources. `/proc/fs/jbd2/<dev>-<ino>/info` is read when steady state
begins and at stop; its averages are cumulative since mount (except the
commit time, a moving average), so the point's averages are recovered by
weighting with the transaction counts. The `jbd2:jbd2_run_stats` tracepoint
fires once per commit with that commit's wait/running/locked/flushing/logging
times and sizes; it is low-rate (at most a few hundred a second), so its
kernel-formatted text (times already in ms) is read from a private ftrace
instance filtered to this device.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from fslab.base.vocab import CatalogEntry, MetricDef
from fslab.collect import tracefs
from fslab.collect.base import (
    Collector,
    CollectorResult,
    PendingResult,
    PointContext,
    Unavailable,
)
from fslab.collect.common import RampSnapshot, dev_filter, kernel_dev_t
from fslab.collect.tracefs import Ticker, TraceInstance

JBD2_PROC = Path("/proc/fs/jbd2")
RUN_STATS_EVENT = "jbd2/jbd2_run_stats"
RUN_TIME_FIELDS = ("wait", "request_delay", "running", "locked", "flushing", "logging")
RUN_SIZE_FIELDS = ("handle_count", "blocks", "blocks_logged")


# --------------------------------------------------------------------------
# /proc/fs/jbd2/<dev>/info


@dataclass(frozen=True)
class Jbd2Info:
    """One reading of a journal's info file (ms unless named otherwise)."""

    transactions: int = 0
    requested: int = 0
    max_blocks_per_txn: int = 0
    wait_ms: float = 0.0
    request_delay_ms: float = 0.0
    running_ms: float = 0.0
    locked_ms: float = 0.0
    flushing_ms: float = 0.0
    logging_ms: float = 0.0
    commit_us: float = 0.0
    handles_per_txn: float = 0.0
    blocks_per_txn: float = 0.0
    logged_blocks_per_txn: float = 0.0


_INFO_PATTERNS = {
    "wait_ms": r"(\d+)ms waiting for transaction",
    "request_delay_ms": r"(\d+)ms request delay",
    "running_ms": r"(\d+)ms running transaction",
    "locked_ms": r"(\d+)ms transaction was being locked",
    "flushing_ms": r"(\d+)ms flushing data",
    "logging_ms": r"(\d+)ms logging transaction",
    "commit_us": r"(\d+)us average transaction commit time",
    "handles_per_txn": r"(\d+) handles per transaction",
    "blocks_per_txn": r"(\d+) blocks per transaction",
    "logged_blocks_per_txn": r"(\d+) logged blocks per transaction",
}
_HEAD_RE = re.compile(r"(\d+) transactions \((\d+) requested\), each up to (\d+) blocks")


def parse_info(text: str) -> Jbd2Info:
    """Parse `/proc/fs/jbd2/<dev>-<ino>/info` (a fresh journal prints only the first line)."""
    head = _HEAD_RE.search(text)
    if not head:
        raise ValueError("not a jbd2 info file: no 'N transactions' line")
    values: dict[str, float] = {}
    for name, pattern in _INFO_PATTERNS.items():
        match = re.search(pattern, text)
        if match:
            values[name] = float(match.group(1))
    return Jbd2Info(
        transactions=int(head.group(1)),
        requested=int(head.group(2)),
        max_blocks_per_txn=int(head.group(3)),
        **values,
    )


def _weighted(after: float, n_after: int, before: float, n_before: int) -> float:
    """The average over the window from two cumulative averages."""
    n = n_after - n_before
    if n <= 0:
        return 0.0
    return max(0.0, (after * n_after - before * n_before) / n)


def info_metrics(before: Jbd2Info, after: Jbd2Info, elapsed_s: float) -> dict[str, float]:
    """The point's journal statistics from two info readings."""
    n_b, n_a = before.transactions, after.transactions
    txns = n_a - n_b
    out = {
        "jbd2.transactions": float(txns),
        "jbd2.requested_transactions": float(after.requested - before.requested),
        "jbd2.max_blocks_per_txn": float(after.max_blocks_per_txn),
        # a moving average in the kernel, not cumulative: the latest reading
        "jbd2.avg_commit_ms": after.commit_us / 1000.0,
    }
    if elapsed_s > 0:
        out["jbd2.transactions_per_s"] = txns / elapsed_s
    for attr, metric in (
        ("wait_ms", "jbd2.avg_wait_ms"),
        ("running_ms", "jbd2.avg_running_ms"),
        ("locked_ms", "jbd2.avg_locked_ms"),
        ("flushing_ms", "jbd2.avg_flushing_ms"),
        ("logging_ms", "jbd2.avg_logging_ms"),
        ("handles_per_txn", "jbd2.handles_per_txn"),
        ("blocks_per_txn", "jbd2.blocks_per_txn"),
        ("logged_blocks_per_txn", "jbd2.logged_blocks_per_txn"),
    ):
        out[metric] = _weighted(getattr(after, attr), n_a, getattr(before, attr), n_b)
    # request delay is averaged over requested commits, not all of them
    out["jbd2.avg_request_delay_ms"] = _weighted(
        after.request_delay_ms, after.requested, before.request_delay_ms, before.requested
    )
    return out


def journal_dirs(device_name: str, root: Path = JBD2_PROC) -> list[Path]:
    """The jbd2 proc dirs of a device (`loop3-8`: device name, journal inode)."""
    with contextlib.suppress(OSError):
        return sorted(
            p
            for p in root.iterdir()
            if p.name.rsplit("-", 1)[0] == device_name and (p / "info").is_file()
        )
    return []


# --------------------------------------------------------------------------
# jbd2_run_stats


_RUN_LINE_RE = re.compile(r"\s(\d+\.\d+): jbd2_run_stats: dev (\d+),(\d+) (.*)$")


@dataclass(frozen=True)
class RunStats:
    """One commit as jbd2_run_stats printed it (times in ms)."""

    ts_s: float
    major: int
    minor: int
    tid: int
    wait: float
    request_delay: float
    running: float
    locked: float
    flushing: float
    logging: float
    handle_count: int
    blocks: int
    blocks_logged: int


def parse_run_stats(text: str) -> list[RunStats]:
    """jbd2_run_stats records from trace/trace_pipe text (other lines are skipped)."""
    out: list[RunStats] = []
    for line in text.splitlines():
        match = _RUN_LINE_RE.search(line)
        if not match:
            continue
        words = match.group(4).split()
        kv = dict(zip(words[::2], words[1::2], strict=False))
        try:
            out.append(
                RunStats(
                    ts_s=float(match.group(1)),
                    major=int(match.group(2)),
                    minor=int(match.group(3)),
                    tid=int(kv["tid"]),
                    wait=float(kv["wait"]),
                    request_delay=float(kv["request_delay"]),
                    running=float(kv["running"]),
                    locked=float(kv["locked"]),
                    flushing=float(kv["flushing"]),
                    logging=float(kv["logging"]),
                    handle_count=int(kv["handle_count"]),
                    blocks=int(kv["blocks"]),
                    blocks_logged=int(kv["blocks_logged"]),
                )
            )
        except (KeyError, ValueError):
            continue
    return out


def run_stats_metrics(commits: list[RunStats], elapsed_s: float) -> dict[str, float]:
    """Per-commit distributions: `jbd2.run.<field>_ms_mean/_p99`, sizes, commits."""
    out: dict[str, float] = {"jbd2.run.commits": float(len(commits))}
    if elapsed_s > 0:
        out["jbd2.run.commits_per_s"] = len(commits) / elapsed_s
    if not commits:
        return out
    for name in RUN_TIME_FIELDS:
        values = np.array([getattr(c, name) for c in commits], dtype=float)
        out[f"jbd2.run.{name}_ms_mean"] = float(values.mean())
        out[f"jbd2.run.{name}_ms_p99"] = float(np.percentile(values, 99))
        out[f"jbd2.run.{name}_ms_max"] = float(values.max())
    for name in RUN_SIZE_FIELDS:
        values = np.array([getattr(c, name) for c in commits], dtype=float)
        out[f"jbd2.run.{name}_mean"] = float(values.mean())
        out[f"jbd2.run.{name}_p99"] = float(np.percentile(values, 99))
    return out


# --------------------------------------------------------------------------
# The collector


class Jbd2Collector(Collector):
    """Journal commit statistics of the point's ext4 filesystem."""

    name: ClassVar[str] = "jbd2"
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
        ("jbd2.*_ms", MetricDef("none", "ms", "jbd2 journal commit statistics (/proc)")),
        ("jbd2.run.*_ms_*", MetricDef("none", "ms", "jbd2_run_stats phase times per commit")),
        ("jbd2.**_per_s", MetricDef("none", "1/s", "journal commits per second")),
        ("jbd2.**", MetricDef("none", "", "jbd2 journal statistics")),
    )
    no_data: ClassVar[str] = "the collector ran but stored no jbd2.* metrics"

    def __init__(
        self,
        *,
        proc_root: Path = JBD2_PROC,
        tracefs_root: Path | None = None,
        read_interval_s: float = 0.5,
        run_stats: bool = True,
    ) -> None:
        self.proc_root = proc_root
        self.tracefs_root = tracefs_root
        self.read_interval_s = read_interval_s
        self.run_stats = run_stats
        self._dirs: list[Path] = []
        self._before: RampSnapshot[dict[Path, str]] | None = None
        self._instance: TraceInstance | None = None
        self._ticker: Ticker | None = None
        self._text: list[str] = []
        self._trace_note = ""
        self._majmin: tuple[int, int] | None = None
        self._count_from_s = 0.0
        self._reader_cpu_s = 0.0  # the trace_pipe reader thread, ramp included

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not JBD2_PROC.is_dir():
            return f"{JBD2_PROC} is missing (no jbd2 journal mounted, or jbd2 not loaded)"
        return None

    def _read_infos(self) -> dict[Path, str]:
        return {d: (d / "info").read_text() for d in self._dirs}

    def begin(self, ctx: PointContext) -> None:
        if ctx.fs_type != "ext4":
            raise Unavailable("not ext4")
        self._dirs = journal_dirs(ctx.device_name, self.proc_root)
        if not self._dirs:
            raise Unavailable(
                f"no journal for {ctx.device_name} under {self.proc_root} (no journal?)"
            )
        self._majmin = kernel_dev_t(ctx.device)
        try:
            self._before = RampSnapshot(self._read_infos, ctx.ramp_s)
        except (OSError, ValueError) as exc:
            raise Unavailable(f"cannot read {self._dirs[0]}/info: {exc}") from exc
        if self.run_stats:
            self._start_trace(ctx)

    def _start_trace(self, ctx: PointContext) -> None:
        """jbd2_run_stats in a private instance; failure only loses the jbd2.run.* part."""
        try:
            root, note = tracefs.ensure_tracefs(self.tracefs_root)
            if tracefs.missing_events(root, [RUN_STATS_EVENT]):
                raise tracefs.TracefsError(f"no {RUN_STATS_EVENT} tracepoint")
            tracefs.remove_stale_instances(root)
            self._instance = TraceInstance(root)
            self._instance.create(buffer_kb_per_cpu=512)
            self._instance.enable_event(RUN_STATS_EVENT, dev_filter(self._majmin))
            self._instance.set_tracing(True)
            self._count_from_s = self._instance.clock_now_ns() / 1e9 + ctx.ramp_s
            self._trace_note = note
        except Exception as exc:  # only the jbd2.run.* part is lost
            self._trace_note = f"jbd2_run_stats unavailable: {exc}"
            self._remove_instance()
            return
        self._ticker = Ticker(self._drain, self.read_interval_s, "fslab-jbd2")
        self._ticker.start()

    def _drain(self) -> None:
        if self._instance is not None:
            self._text.append(self._instance.read_text_pipe())

    def _remove_instance(self) -> str:
        if self._ticker is not None:
            self._ticker.stop()
        if self._instance is None:
            return ""
        try:
            self._instance.remove()
        except (OSError, tracefs.TracefsError) as exc:
            return str(exc)
        finally:
            self._instance = None
        return ""

    def end(self) -> PendingResult:
        """Read the journal and the trace at the window's end; parsing the commits and
        removing the instance (~40 ms in the kernel) are left to finish()."""
        window: CollectorResult | tuple[dict[Path, str], float, float, int]
        try:
            window = self._end_window()
        except Exception as exc:
            window = CollectorResult(status="failed", reason=f"{type(exc).__name__}: {exc}")
        finally:
            if self._before is not None:
                self._before.cancel()

        def compute() -> CollectorResult:
            try:
                result = window if isinstance(window, CollectorResult) else self._summary(*window)
            finally:
                problem = self._remove_instance()
            if problem:
                result.status = "failed"
                result.reason = "; ".join(filter(None, [result.reason, problem]))
            return result

        return PendingResult(compute)

    def _end_window(self) -> tuple[dict[Path, str], float, float, int]:
        """(info texts at the end, window seconds, trace clock at the end, events lost)."""
        assert self._before is not None
        if self._ticker is not None:
            self._ticker.stop()
            self._reader_cpu_s = self._ticker.cpu_s
        trace_end_s = 0.0
        lost = 0
        if self._instance is not None:
            self._instance.set_tracing(False)
            trace_end_s = self._instance.clock_now_ns() / 1e9
            self._drain()
            lost = tracefs.lost_from_stats(self._instance.stats())
        after_raw = self._read_infos()
        return after_raw, time.monotonic() - self._before.at, trace_end_s, lost

    def _summary(
        self, after_raw: dict[Path, str], elapsed_s: float, trace_end_s: float, lost: int
    ) -> CollectorResult:
        assert self._before is not None
        before_raw = self._before.value
        metrics: dict[str, float] = {}
        artifacts: dict[str, str] = {}
        # several journals on one device are unusual; the first is the fs journal
        for i, d in enumerate(self._dirs):
            suffix = "" if i == 0 else f".{d.name}"
            artifacts[f"jbd2.info.before{suffix}"] = before_raw[d]
            artifacts[f"jbd2.info.after{suffix}"] = after_raw[d]
        journal = self._dirs[0]
        metrics.update(
            info_metrics(parse_info(before_raw[journal]), parse_info(after_raw[journal]), elapsed_s)
        )
        notes = [self._trace_note] if self._trace_note else []
        if self._instance is not None:
            commits = [
                c
                for c in parse_run_stats("".join(self._text))
                if c.ts_s >= self._count_from_s
                and (self._majmin is None or (c.major, c.minor) == self._majmin)
            ]
            window_s = trace_end_s - self._count_from_s
            metrics.update(run_stats_metrics(commits, window_s))
            if lost:
                notes.append(f"{lost} jbd2_run_stats events lost")
            metrics["jbd2.run.events_lost"] = float(lost)
            metrics["jbd2.collector_cpu_s"] = self._reader_cpu_s
        return CollectorResult(metrics=metrics, artifacts=artifacts, reason="; ".join(notes))
