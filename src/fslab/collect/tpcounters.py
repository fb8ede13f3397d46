"""Tracepoint counts that explain a falloff: why writeback ran, delalloc fallback, journal stalls.

Counting needs no event records, so the default backend is `perf stat -a`
with one counter per tracepoint: the kernel increments a per-CPU counter on
each hit and nothing is copied to user space. Splitting `writeback_queue`
by its `reason` field is done in the kernel too, with one filtered counter
per reason (`--filter 'reason == 5'`); every counter is filtered to the
point's device (dev_t or bdi name), so other filesystems on the machine do
not leak in. Without perf, a private ftrace instance records the same
events (same filters) and they are counted from raw pages.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from fslab.base.proc import process_cpu_s
from fslab.base.vocab import CatalogEntry, MetricDef
from fslab.collect import ringbuffer, tracefs
from fslab.collect.base import (
    Collector,
    CollectorOptions,
    CollectorResult,
    PendingResult,
    PointContext,
    Unavailable,
)
from fslab.collect.common import dev_filter, kernel_dev_t
from fslab.collect.tracefs import Ticker, TraceInstance

WRITEBACK_QUEUE = "writeback/writeback_queue"
# (event, field holding the device, kind of that field) per filesystem
COMMON_EVENTS: tuple[tuple[str, str, str], ...] = (("writeback/balance_dirty_pages", "bdi", "bdi"),)
FS_EVENTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "ext4": (
        ("ext4/ext4_da_write_begin", "dev", "dev"),
        ("ext4/ext4_write_begin", "dev", "dev"),
        ("ext4/ext4_sync_file_enter", "dev", "dev"),
        ("ext4/ext4_writepages", "dev", "dev"),
        ("jbd2/jbd2_checkpoint", "dev", "dev"),
        ("jbd2/jbd2_handle_start", "dev", "dev"),
        ("jbd2/jbd2_lock_buffer_stall", "dev", "dev"),
        # once per block-allocation call: first writes into holes (an overwrite has none)
        ("ext4/ext4_allocate_blocks", "dev", "dev"),
    ),
    "xfs": (
        ("xfs/xfs_log_grant_sleep", "dev", "dev"),
        ("xfs/xfs_iomap_alloc", "dev", "dev"),  # a direct write allocating its extent
        ("xfs/xfs_unwritten_convert", "dev", "dev"),  # ... converted when its I/O ends
        ("xfs/xfs_log_force", "dev", "dev"),
        ("xfs/xfs_ail_push", "dev", "dev"),
    ),
}
# Events that fire once per write, fsync or journal handle: each hit costs the
# workload's own threads (docs/collectors.md, "tpcounters", has the figures). What
# they say other sources give (fio's write and fsync counts; jbd2's handles per
# transaction x commits/s), so they are counted only on request ([collect]
# tpcounters_per_call = true), and with them the delalloc-fallback ratio.
# ext4_write_begin stays: under delalloc it fires only when ext4 falls back
# (ext4_nonda_switch, free space near the watermark), the second seed's signature.
PER_CALL_EVENTS = frozenset(
    {
        "ext4/ext4_da_write_begin",
        "ext4/ext4_sync_file_enter",
        "ext4/ext4_writepages",
        "jbd2/jbd2_handle_start",
        "xfs/xfs_log_force",
    }
)
# Used only if the kernel's format file cannot be read (values of enum wb_reason).
DEFAULT_WB_REASONS = {
    0: "background",
    1: "vmscan",
    2: "sync",
    3: "periodic",
    4: "laptop_timer",
    5: "fs_free_space",
    6: "forker_thread",
    7: "foreign_flush",
}


@dataclass(frozen=True)
class Counter:
    """One counted quantity: an event, optionally narrowed by a filter."""

    metric: str  # e.g. tp.writeback_queue.fs_free_space
    event: str  # sys/name
    filter: str | None = None
    field_value: tuple[str, int] | None = None  # (field, value) for the ftrace backend


def parse_wb_reasons(format_text: str) -> dict[int, str]:
    """Reason codes -> names from writeback_queue's __print_symbolic table."""
    match = re.search(r"__print_symbolic\(REC->reason,(.*?)\)\s*,", format_text, re.S)
    if not match:
        return dict(DEFAULT_WB_REASONS)
    pairs = re.findall(r"\{\s*(\d+),\s*\"([^\"]+)\"\s*\}", match.group(1))
    return {int(code): name for code, name in pairs} or dict(DEFAULT_WB_REASONS)


def bdi_name(device: str) -> str | None:
    """The backing-dev name ("major:minor" of the whole disk) of a block device."""
    majmin = kernel_dev_t(device)
    if majmin is None:
        return None
    sysfs = Path(f"/sys/dev/block/{majmin[0]}:{majmin[1]}")
    with contextlib.suppress(OSError):
        if (sysfs / "partition").exists():
            return (sysfs.resolve().parent / "dev").read_text().strip()
    return f"{majmin[0]}:{majmin[1]}"


def _and(*parts: str | None) -> str | None:
    present = [p for p in parts if p]
    return " && ".join(f"({p})" for p in present) if present else None


def plan_counters(
    fs_type: str,
    device: str,
    available: set[str],
    wb_reasons: dict[int, str],
    *,
    per_call: bool = False,
) -> list[Counter]:
    """The counters to run for a point, restricted to the point's device
    (the PER_CALL_EVENTS only with `per_call`)."""
    majmin = kernel_dev_t(device)
    bdi = bdi_name(device)
    bdi_f = {name: f'{name} == "{bdi}"' if bdi else None for name in ("name", "bdi")}
    counters: list[Counter] = []
    if WRITEBACK_QUEUE in available:
        for code, reason in sorted(wb_reasons.items()):
            counters.append(
                Counter(
                    metric=f"tp.writeback_queue.{reason}",
                    event=WRITEBACK_QUEUE,
                    filter=_and(f"reason == {code}", bdi_f["name"]),
                    field_value=("reason", code),
                )
            )
    for event, field_name, kind in COMMON_EVENTS + FS_EVENTS.get(fs_type, ()):
        if event not in available or (event in PER_CALL_EVENTS and not per_call):
            continue
        flt = dev_filter(majmin, field_name) if kind == "dev" else bdi_f.get(field_name)
        counters.append(Counter(metric=f"tp.{event.split('/', 1)[1]}", event=event, filter=flt))
    return counters


def counter_metrics(counts: dict[str, float], elapsed_s: float) -> dict[str, float]:
    """`<metric>.count` and `.per_s` plus derived ratios."""
    out: dict[str, float] = {}
    for metric, count in counts.items():
        out[f"{metric}.count"] = count
        if elapsed_s > 0:
            out[f"{metric}.per_s"] = count / elapsed_s
    da = counts.get("tp.ext4_da_write_begin", 0.0)
    if da > 0 and "tp.ext4_write_begin" in counts:
        # with delalloc, ext4_da_write_begin hands low-space writes to ext4_write_begin
        out["tp.ext4.nodelalloc_fallback_pct"] = 100.0 * counts["tp.ext4_write_begin"] / da
    return out


# --------------------------------------------------------------------------
# perf stat backend


def perf_stat_argv(counters: list[Counter], output: Path, delay_ms: int = 0) -> list[str]:
    argv = ["perf", "stat", "-a", "-x", ",", "--no-big-num", "-o", str(output)]
    if delay_ms > 0:
        argv += ["-D", str(delay_ms)]
    for c in counters:
        argv += ["-e", c.event.replace("/", ":", 1)]
        if c.filter:
            argv += ["--filter", c.filter]
    return argv


def parse_perf_stat_csv(text: str, counters: list[Counter]) -> dict[str, float]:
    """Counts from `perf stat -x,` output; lines come in the order of the -e options."""
    rows = [
        line.split(",")
        for line in text.splitlines()
        if line.strip() and not line.startswith("#") and line.count(",") >= 2
    ]
    if len(rows) != len(counters):
        raise ValueError(f"perf stat printed {len(rows)} counters, expected {len(counters)}")
    out: dict[str, float] = {}
    for counter, row in zip(counters, rows, strict=True):
        expected = counter.event.replace("/", ":", 1)
        if row[2] != expected:
            raise ValueError(f"perf stat row for {row[2]!r}, expected {expected!r}")
        with contextlib.suppress(ValueError):
            out[counter.metric] = float(row[0])  # "<not counted>" etc. are left out
    return out


class _PerfBackend:
    def __init__(self, counters: list[Counter], ramp_s: float) -> None:
        self.counters = counters
        self._tmp = tempfile.TemporaryDirectory(prefix="fslab-tp-")
        self.output = Path(self._tmp.name) / "perf-stat.csv"
        argv = perf_stat_argv(counters, self.output, int(ramp_s * 1000))
        self.command = " ".join(argv)
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.t_count_from = time.monotonic() + ramp_s
        self.t_end: float | None = None
        self.exited_early = False
        self.cpu_s = 0.0

    def end_window(self) -> None:
        """Tell perf stat the window is over (it reads its counters on SIGINT)."""
        self.t_end = time.monotonic()
        self.cpu_s = process_cpu_s(self.proc.pid)
        self.exited_early = self.proc.poll() is not None
        if not self.exited_early:
            self.proc.send_signal(signal.SIGINT)

    def finish(self) -> tuple[dict[str, float], float]:
        """The counts, once perf stat has written them (it takes ~0.3 s to exit)."""
        if self.t_end is None:
            self.end_window()
        assert self.t_end is not None
        try:
            if self.exited_early:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"perf stat exited early ({self.proc.returncode}): {err[-500:]}")
            _, err_b = self.proc.communicate(timeout=30)
            text = self.output.read_text() if self.output.exists() else ""
            if not text.strip():
                raise RuntimeError(
                    f"perf stat wrote nothing: {err_b.decode(errors='replace')[-500:]}"
                )
            return parse_perf_stat_csv(text, self.counters), self.t_end - self.t_count_from
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        if self.proc.stderr:
            self.proc.stderr.close()
        self._tmp.cleanup()


# --------------------------------------------------------------------------
# ftrace backend


class _FtraceBackend:
    """Same counters from raw records of a private instance (no perf needed)."""

    def __init__(self, root: Path | None, counters: list[Counter], ramp_s: float) -> None:
        self.counters = counters
        root, self.note = tracefs.ensure_tracefs(root)
        tracefs.remove_stale_instances(root)
        self.instance = TraceInstance(root)
        self.counts = dict.fromkeys((c.metric for c in counters), 0.0)
        self.ticker = Ticker(self.drain, 0.25, "fslab-tpcounters")
        try:
            self.instance.create(buffer_kb_per_cpu=2048)
            self.page_size = self.instance.page_size()
            # one enable per event; the reason split is done on the decoded field
            by_event: dict[str, list[Counter]] = {}
            for c in counters:
                by_event.setdefault(c.event, []).append(c)
            self.formats = {ev: self.instance.event_format(ev) for ev in by_event}
            for ev, group in by_event.items():
                flt = group[0].filter if len(group) == 1 else _device_part(group[0].filter)
                self.instance.enable_event(ev, flt)
            self.instance.open_raw()
            self.instance.set_tracing(True)
            self.count_from_ns = self.instance.clock_now_ns() + int(ramp_s * 1e9)
        except BaseException:
            self.close()
            raise
        self.t_count_from = time.monotonic() + ramp_s
        self.ticker.start()

    def drain(self) -> None:
        data = b"".join(self.instance.read_raw().values())
        if not data:
            return
        records = ringbuffer.decode_pages(data, self.page_size)
        ids = records.u16(0)
        counted = records.ts_ns >= self.count_from_ns
        for c in self.counters:
            fmt = self.formats[c.event]
            mask = (ids == fmt.id) & counted
            if c.field_value is not None and mask.any():
                values = records.column(fmt[c.field_value[0]], mask)
                self.counts[c.metric] += float(np.count_nonzero(values == c.field_value[1]))
            else:
                self.counts[c.metric] += float(mask.sum())

    def finish(self) -> tuple[dict[str, float], float]:
        try:
            self.ticker.stop()
            self.instance.set_tracing(False)
            t_end = time.monotonic()
            if self.ticker.error is not None:
                raise self.ticker.error
            self.drain()
            lost = tracefs.lost_from_stats(self.instance.stats())
            counts = dict(self.counts)
            counts["tp.events_lost"] = float(lost)
            return counts, t_end - self.t_count_from
        finally:
            self.close()

    @property
    def cpu_s(self) -> float:
        return self.ticker.cpu_s

    def close(self) -> None:
        self.ticker.stop()
        self.instance.remove()


def _device_part(flt: str | None) -> str | None:
    """The device restriction of a per-reason filter ('(reason == 5) && (name == ..)')."""
    if not flt:
        return None
    parts = [p for p in re.findall(r"\(([^()]*)\)", flt) if not p.startswith("reason")]
    return " && ".join(f"({p})" for p in parts) or None


# --------------------------------------------------------------------------
# The collector


class TpCountersOptions(CollectorOptions):
    # count the tracepoints that fire once per buffered write, fsync, writepages or
    # journal handle too (PER_CALL_EVENTS): a cost in the IOPS (docs/collectors.md)
    per_call: bool = False


class TpCountersCollector(Collector):
    """Per-point counts and rates of a few telling tracepoints."""

    name: ClassVar[str] = "tpcounters"
    Options: ClassVar[type[CollectorOptions]] = TpCountersOptions
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
        ("tp.**.per_s", MetricDef("none", "1/s", "tracepoint hits per second")),
        ("tp.**.count", MetricDef("none", "events", "tracepoint hits during the run")),
        ("tp.**_pct", MetricDef("none", "%", "ratio of tracepoint counts")),
        ("tp.**", MetricDef("none", "", "tracepoint collector statistics")),
    )

    def __init__(
        self, *, backend: str = "auto", tracefs_root: Path | None = None, per_call: bool = False
    ) -> None:
        if backend not in ("auto", "perf", "ftrace"):
            raise ValueError(f"backend must be auto, perf or ftrace, not {backend!r}")
        self.backend = backend
        self.per_call = per_call
        self.tracefs_root = tracefs_root
        self._impl: _PerfBackend | _FtraceBackend | None = None
        self._backend_used = ""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if shutil.which("perf"):
            return None
        return tracefs.unavailable_reason(None, [WRITEBACK_QUEUE])

    def _choose_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        return "perf" if shutil.which("perf") else "ftrace"

    def begin(self, ctx: PointContext) -> None:
        try:
            root, _ = tracefs.ensure_tracefs(self.tracefs_root)
            available = {
                ev
                for ev in [WRITEBACK_QUEUE]
                + [e for e, _, _ in COMMON_EVENTS]
                + [e for e, _, _ in FS_EVENTS.get(ctx.fs_type, ())]
                if not tracefs.missing_events(root, [ev])
            }
            try:
                reasons = parse_wb_reasons(
                    (root / "events" / WRITEBACK_QUEUE / "format").read_text()
                )
            except OSError:
                reasons = dict(DEFAULT_WB_REASONS)
            counters = plan_counters(
                ctx.fs_type, ctx.device, available, reasons, per_call=self.per_call
            )
            if not counters:
                raise tracefs.TracefsError("none of the tracepoints exist on this kernel")
            self._backend_used = self._choose_backend()
            if self._backend_used == "perf":
                self._impl = _PerfBackend(counters, ctx.ramp_s)
            else:
                self._impl = _FtraceBackend(self.tracefs_root, counters, ctx.ramp_s)
        except (OSError, tracefs.TracefsError) as exc:
            raise Unavailable(str(exc)) from exc
        # any other failure: the backends clean up after themselves

    def end(self) -> CollectorResult | PendingResult:
        """End the window now; waiting for perf stat to exit is left to finish()."""
        if isinstance(self._impl, _PerfBackend):
            try:
                self._impl.end_window()
            except Exception as exc:
                self._impl.close()
                return PendingResult.ready(
                    CollectorResult(status="failed", reason=f"{type(exc).__name__}: {exc}")
                )
            return PendingResult(self._result)
        return self._result()

    def _result(self) -> CollectorResult:
        assert self._impl is not None
        try:
            counts, elapsed_s = self._impl.finish()
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._impl.close()
            return CollectorResult(status="failed", reason=f"{type(exc).__name__}: {exc}")
        lost = counts.pop("tp.events_lost", 0.0)
        metrics = counter_metrics(counts, elapsed_s)
        metrics["tp.collector_cpu_s"] = self._impl.cpu_s
        reason = f"backend {self._backend_used}"
        if lost:
            metrics["tp.events_lost"] = lost
            reason += f"; {lost:.0f} events lost: counts are lower bounds"
        return CollectorResult(metrics=metrics, reason=reason)
