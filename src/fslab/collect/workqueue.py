"""Workqueue contention: queueing delay, execution time and concurrency per workqueue.

The seed case blamed the single-threaded `ext4-rsv-conversion` workqueue
(max_active 1); this collector measures exactly that kind of claim. Four
tracepoints follow every work item: queue_work (names the workqueue),
activate_work (leaves the max_active throttle), execute_start and
execute_end. Only queue_work carries the workqueue name, so the others are
tied to it by the work struct pointer.

Mechanism (see docs/collectors.md for the measurements): a private ftrace
instance, per-CPU `trace_pipe_raw` drained every 0.1 s into a spool kept in
memory, and decoded with numpy after the window (`stop_observing()` then
`finish()`), so decoding never takes CPU from the measured workload. Only a
spool over SPOOL_LIMIT_BYTES is decoded during the window, in batches:
events are then correlated up to a watermark a little behind the trace clock,
so a work item queued on one CPU and run on another is always seen in time
order; the last event of each work struct is carried to the next batch.

One module of more than 600 lines, on purpose: decoding, pairing and
aggregating one tracer's four events is one pipeline whose batches carry
state from one to the next; the page decoding it shares with other
collectors is `collect.ringbuffer`.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import Field

from fslab.base.vocab import CatalogEntry, MetricDef, metric_safe
from fslab.collect import ringbuffer, tracefs
from fslab.collect.base import (
    Collector,
    CollectorOptions,
    CollectorResult,
    PendingResult,
    PointContext,
    Unavailable,
)
from fslab.collect.ringbuffer import RawRecords
from fslab.collect.tracefs import EventFormat, TraceInstance

QUEUE, ACTIVATE, START, END = 0, 1, 2, 3
EVENTS: dict[str, int] = {
    "workqueue/workqueue_queue_work": QUEUE,
    "workqueue/workqueue_activate_work": ACTIVATE,
    "workqueue/workqueue_execute_start": START,
    "workqueue/workqueue_execute_end": END,
}
_WQ_NAME_BYTES = 32  # WQ_NAME_LEN in the kernel
_CARRY_MAX_AGE_NS = 60_000_000_000  # forget work structs idle for a minute
_WATERMARK_LAG_NS = 20_000_000  # correlate only events older than this
_AGGREGATE_CHUNK = 32768  # events per aggregation step (measured optimum)
SPOOL_LIMIT_BYTES = 256 * 1024**2  # raw pages kept for decoding after the window


# --------------------------------------------------------------------------
# Names


_DEVICE_WQ_RE = re.compile(r"^(loop|nbd|zram|md|rbd|nvme|kloop)\d+$")
_HOST_SUFFIX_RE = re.compile(r"^(scsi_\w+?)_\d+$")


def normalise_wq_name(name: str, device_name: str = "") -> str:
    """The workqueue name without its per-device suffix.

    `xfs-conv/loop3` -> `xfs-conv`, `dio/loop3` -> `dio`, `loop3` -> `loop`,
    `scsi_tmf_0` -> `scsi_tmf`, so points on different devices compare.
    """
    base = name.split("/", 1)[0] or name
    if device_name and base == device_name:
        base = base.rstrip("0123456789") or base
    match = _DEVICE_WQ_RE.match(base) or _HOST_SUFFIX_RE.match(base)
    return match.group(1) if match else base


# --------------------------------------------------------------------------
# Histograms


SUB_BUCKETS = 16  # log-linear histogram: 16 buckets per power of two (~4 %)
N_BUCKETS = 64 * SUB_BUCKETS


def bucket_of(values: np.ndarray) -> np.ndarray:
    """Histogram bucket of each non-negative value (bucket 0 holds values below 1)."""
    vals = np.asarray(values, dtype=np.float64)
    out = np.zeros(len(vals), dtype=np.int64)
    pos = vals >= 1.0
    out[pos] = np.minimum(np.log2(vals[pos]) * SUB_BUCKETS + 1, N_BUCKETS - 1).astype(np.int64)
    return out


def quantile_from_counts(counts: np.ndarray, q: float, max_value: float) -> float:
    """Value at quantile q (0..1) of a histogram: the bucket's geometric middle, at most max."""
    total = int(counts.sum())
    if total == 0:
        return 0.0
    rank = max(1, int(np.ceil(q * total)))
    bucket = int(np.searchsorted(np.cumsum(counts), rank))
    if bucket == 0:
        return 0.0
    return min(2.0 ** ((bucket - 1 + 0.5) / SUB_BUCKETS), max_value)


@dataclass
class Distribution:
    """Histogram, count, sum and exact max of one measured quantity."""

    counts: np.ndarray = field(default_factory=lambda: np.zeros(N_BUCKETS, np.int64))
    count: int = 0
    total: float = 0.0
    max: float = 0.0

    def merge(self, other: Distribution) -> None:
        self.counts = self.counts + other.counts
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def quantile(self, q: float) -> float:
        return quantile_from_counts(self.counts, q, self.max)


class DistributionBlock:
    """Distributions of one quantity for many keys, filled without sorting."""

    def __init__(self) -> None:
        self.counts = np.zeros((0, N_BUCKETS), np.int64)
        self.total = np.zeros(0)
        self.max = np.zeros(0)

    def grow(self, nkeys: int) -> None:
        extra = nkeys - len(self.total)
        if extra > 0:
            self.counts = np.vstack([self.counts, np.zeros((extra, N_BUCKETS), np.int64)])
            self.total = np.concatenate([self.total, np.zeros(extra)])
            self.max = np.concatenate([self.max, np.zeros(extra)])

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        if len(keys) == 0:
            return
        nkeys = len(self.total)
        vals = np.maximum(values.astype(np.float64), 0.0)
        flat = keys * N_BUCKETS + bucket_of(vals)
        self.counts += np.bincount(flat, minlength=nkeys * N_BUCKETS).reshape(nkeys, N_BUCKETS)
        self.total += np.bincount(keys, weights=vals, minlength=nkeys)
        np.maximum.at(self.max, keys, vals)

    def get(self, key: int) -> Distribution:
        counts = self.counts[key]
        return Distribution(
            counts.copy(), int(counts.sum()), float(self.total[key]), float(self.max[key])
        )


# --------------------------------------------------------------------------
# Decoding


@dataclass
class WqEvents:
    """Workqueue events as columns; `wq` is an interned name id (-1: not a queue event)."""

    ts: np.ndarray
    kind: np.ndarray
    work: np.ndarray
    fn: np.ndarray
    wq: np.ndarray

    @classmethod
    def empty(cls) -> WqEvents:
        return cls(
            np.zeros(0, np.int64),
            np.zeros(0, np.int8),
            np.zeros(0, np.uint64),
            np.zeros(0, np.uint64),
            np.zeros(0, np.int32),
        )

    def __len__(self) -> int:
        return len(self.ts)

    def take(self, index: np.ndarray) -> WqEvents:
        return WqEvents(
            self.ts[index], self.kind[index], self.work[index], self.fn[index], self.wq[index]
        )

    @classmethod
    def concat(cls, parts: Iterable[WqEvents]) -> WqEvents:
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.ts for p in parts]),
            np.concatenate([p.kind for p in parts]),
            np.concatenate([p.work for p in parts]),
            np.concatenate([p.fn for p in parts]),
            np.concatenate([p.wq for p in parts]),
        )


@dataclass
class NameTable:
    """Interns normalised workqueue names to small integer ids."""

    device_name: str = ""
    names: list[str] = field(default_factory=list)
    _ids: dict[str, int] = field(default_factory=dict)

    def intern(self, raw_name: str) -> int:
        name = normalise_wq_name(raw_name, self.device_name)
        if name not in self._ids:
            self._ids[name] = len(self.names)
            self.names.append(name)
        return self._ids[name]


@dataclass(frozen=True)
class WqLayout:
    """Where the fields sit in this kernel's four workqueue events."""

    formats: dict[int, tuple[int, EventFormat]]  # event id -> (kind, format)

    @classmethod
    def from_formats(cls, formats: dict[str, EventFormat]) -> WqLayout:
        return cls({fmt.id: (EVENTS[ev], fmt) for ev, fmt in formats.items()})


def decode_wq(records: RawRecords, layout: WqLayout, names: NameTable) -> WqEvents:
    """Columns of the workqueue events among `records` (other events are ignored)."""
    if len(records) == 0:
        return WqEvents.empty()
    ids = records.u16(0)
    parts: list[WqEvents] = []
    for event_id, (kind, fmt) in layout.formats.items():
        mask = ids == event_id
        if not mask.any():
            continue
        count = int(mask.sum())
        wq = np.full(count, -1, dtype=np.int32)
        if kind == QUEUE:
            wq = _queue_wq_ids(records, mask, fmt, names)
        parts.append(
            WqEvents(
                ts=records.ts_ns[mask],
                kind=np.full(count, kind, dtype=np.int8),
                work=records.column(fmt["work"], mask).astype(np.uint64),
                # 6.1's and 5.10's activate_work has no function: 0, the queue's is used
                fn=(
                    records.column(fmt["function"], mask).astype(np.uint64)
                    if "function" in fmt.fields
                    else np.zeros(count, np.uint64)
                ),
                wq=wq,
            )
        )
    return WqEvents.concat(parts)


def _queue_wq_ids(
    records: RawRecords, mask: np.ndarray, fmt: EventFormat, names: NameTable
) -> np.ndarray:
    """Workqueue name ids of queue_work records, decoding each distinct name once."""
    name_field = fmt["workqueue"]
    base = records.offsets[mask]
    if name_field.data_loc or name_field.rel_loc:
        loc = ringbuffer.gather(records.data, base + name_field.offset, 4, signed=False).astype(
            np.int64
        )
        start = base + (loc & 0xFFFF)
        if name_field.rel_loc:
            start += name_field.offset + name_field.size
        length = np.minimum(loc >> 16, _WQ_NAME_BYTES)
    else:
        start = base + name_field.offset
        length = np.full(len(base), min(name_field.size, _WQ_NAME_BYTES), dtype=np.int64)
    if not (start & 3).any() and len(records.data) % 4 == 0:
        words = np.frombuffer(records.data, dtype="<u4")
        word_idx = np.minimum(
            (start >> 2)[:, None] + np.arange(_WQ_NAME_BYTES // 4), len(words) - 1
        )
        name_bytes = np.ascontiguousarray(words[word_idx]).view(np.uint8)
    else:
        raw = np.frombuffer(records.data, dtype=np.uint8)
        byte_idx = np.minimum(start[:, None] + np.arange(_WQ_NAME_BYTES), len(raw) - 1)
        name_bytes = raw[byte_idx]
    name_bytes = np.where(np.arange(_WQ_NAME_BYTES) < length[:, None], name_bytes, 0)
    as_rows = (
        np.ascontiguousarray(name_bytes.astype(np.uint8)).view(f"S{_WQ_NAME_BYTES}").reshape(-1)
    )
    uniq, inverse = np.unique(as_rows, return_inverse=True)
    ids = np.array(
        [names.intern(u.split(b"\0", 1)[0].decode("utf-8", "replace")) for u in uniq],
        dtype=np.int32,
    )
    return ids[inverse.reshape(-1)]


# --------------------------------------------------------------------------
# Correlation


@dataclass
class KeyStats:
    """What was seen for one (workqueue, work function) pair, or one workqueue."""

    items: int = 0
    queue_delay_ns: Distribution = field(default_factory=Distribution)
    start_delay_ns: Distribution = field(default_factory=Distribution)
    exec_ns: Distribution = field(default_factory=Distribution)


class WorkqueueAggregator:
    """Pairs queue -> activate -> start -> end per work struct, batch by batch.

    Each batch must hold only events later than every event of the previous
    batches (the collector guarantees this with a watermark). Events before
    `count_from_ns` only establish state; they are not counted.
    """

    QUANTITIES = ("queue_delay_ns", "start_delay_ns", "exec_ns")

    def __init__(self, count_from_ns: int = 0) -> None:
        self.count_from_ns = count_from_ns
        self.keys: list[tuple[int, int]] = []  # key id -> (wq id, function address)
        self._key_ids: dict[tuple[int, int], int] = {}
        self.items = np.zeros(0, np.int64)
        self.blocks = {q: DistributionBlock() for q in self.QUANTITIES}
        self.peak: dict[int, int] = {}
        self.running: dict[int, int] = {}
        self.events = 0
        self.unattributed = 0
        self._carried = WqEvents.empty()

    @property
    def stats(self) -> dict[tuple[int, int], KeyStats]:
        """Per (workqueue id, function address) statistics so far."""
        out: dict[tuple[int, int], KeyStats] = {}
        for kid, key in enumerate(self.keys):
            out[key] = KeyStats(
                items=int(self.items[kid]),
                **{q: self.blocks[q].get(kid) for q in self.QUANTITIES},
            )
        return out

    def _key_index(self, wq: np.ndarray, fn: np.ndarray) -> np.ndarray:
        """Dense key ids for (wq, fn) pairs, creating ids for new pairs."""
        if len(wq) == 0:
            return np.zeros(0, np.int64)
        fn_uniq, fn_inv = np.unique(fn, return_inverse=True)
        combo = wq.astype(np.int64) * len(fn_uniq) + fn_inv.reshape(-1)
        uniq, inv = np.unique(combo, return_inverse=True)
        ids = np.empty(len(uniq), np.int64)
        for i, c in enumerate(uniq.tolist()):
            key = (c // len(fn_uniq), int(fn_uniq[c % len(fn_uniq)]))
            if key not in self._key_ids:
                self._key_ids[key] = len(self.keys)
                self.keys.append(key)
            ids[i] = self._key_ids[key]
        nkeys = len(self.keys)
        if len(self.items) < nkeys:
            self.items = np.concatenate([self.items, np.zeros(nkeys - len(self.items), np.int64)])
            for block in self.blocks.values():
                block.grow(nkeys)
        return ids[inv.reshape(-1)]

    def add(self, batch: WqEvents) -> None:
        """Correlate one batch (all later than the previous ones) and count it."""
        if len(batch) == 0:
            return
        self.events += len(batch)
        p = _Pairing.build(self._carried, batch)
        self._count(p)
        self._concurrency(p)
        self._carry(p)

    def _count(self, p: _Pairing) -> None:
        ev = p.ev
        counted = p.is_new & (ev.ts >= self.count_from_ns)
        # (which events, index of the earlier event of the pair) per quantity
        selections = {
            # queue -> activate: the wait for a max_active slot
            "queue_delay_ns": (
                counted & (ev.kind == ACTIVATE) & (p.lq >= 0) & (p.lq > p.prev_a),
                p.lq,
            ),
            # activate -> start: the wait for a worker
            "start_delay_ns": (
                counted & (ev.kind == START) & (p.la >= 0) & (p.la > p.prev_s),
                p.la,
            ),
            # start -> end: execution
            "exec_ns": (p.ends & counted, p.ls),
        }
        owner = np.where(ev.kind == END, p.end_wq, np.where(ev.kind == QUEUE, ev.wq, p.wq_at))
        interesting = counted & (owner >= 0)
        key = np.full(len(ev), -1, np.int64)
        fn = ev.fn.copy()
        unnamed = (fn == 0) & (p.lq >= 0)  # an event without a function field: its queue's
        fn[unnamed] = ev.fn[p.lq[unnamed]]
        key[interesting] = self._key_index(owner[interesting], fn[interesting])
        queued = counted & (ev.kind == QUEUE) & (key >= 0)
        self.items += np.bincount(key[queued], minlength=len(self.items))
        for quantity, (mask, earlier) in selections.items():
            sel = mask & (key >= 0)
            self.blocks[quantity].add(key[sel], ev.ts[sel] - ev.ts[earlier[sel]])
        self.unattributed += int((p.is_new & (ev.kind == START) & (p.wq_at < 0)).sum())

    def _concurrency(self, p: _Pairing) -> None:
        """Peak number of items of one workqueue executing at the same time."""
        ev = p.ev
        starts = p.is_new & (ev.kind == START) & (p.wq_at >= 0)
        # a start while the previous run of the same work never ended: its end was lost
        orphan = starts & (p.prev_s >= 0) & (p.prev_s > p.prev_e)
        orphan_wq = p.wq_at[np.maximum(p.prev_s, 0)]
        ends = p.ends & (p.end_wq >= 0)
        wq = np.concatenate([p.wq_at[starts], orphan_wq[orphan], p.end_wq[ends]])
        if len(wq) == 0:
            return
        ts = np.concatenate([ev.ts[starts], ev.ts[orphan], ev.ts[ends]])
        delta = np.concatenate(
            [np.ones(starts.sum(), np.int64), -np.ones(orphan.sum() + ends.sum(), np.int64)]
        )
        order = np.lexsort((delta, ts, wq))
        wq, ts, delta = wq[order], ts[order], delta[order]
        bounds = np.flatnonzero(np.diff(wq)) + 1
        for group_ts, group_d, group_wq in zip(
            np.split(ts, bounds), np.split(delta, bounds), wq[np.r_[0, bounds]], strict=True
        ):
            key = int(group_wq)
            level = self.running.get(key, 0) + np.cumsum(group_d)
            in_window = group_ts >= self.count_from_ns
            if in_window.any():
                self.peak[key] = max(self.peak.get(key, 0), int(level[in_window].max()))
            self.running[key] = max(0, int(level[-1]))

    def _carry(self, p: _Pairing) -> None:
        """Keep the latest event of each kind per work struct for the next batch."""
        group_end = np.r_[np.flatnonzero(p.first)[1:] - 1, len(p.ev) - 1]
        keep = np.unique(np.concatenate([at[group_end] for at in (p.lq, p.la, p.ls, p.le)]))
        carried = p.ev.take(keep[keep >= 0])
        newest = int(p.ev.ts.max())
        self._carried = carried.take(np.flatnonzero(carried.ts >= newest - _CARRY_MAX_AGE_NS))


@dataclass
class _Pairing:
    """Events sorted by (work, time, kind) with, for each, the index of the latest
    queue/activate/start/end of the same work struct at or before it (-1: none)."""

    ev: WqEvents
    is_new: np.ndarray  # False for events carried over from the previous batch
    first: np.ndarray  # first event of its work struct
    lq: np.ndarray
    la: np.ndarray
    ls: np.ndarray
    le: np.ndarray
    prev_a: np.ndarray  # latest activate strictly before
    prev_s: np.ndarray
    prev_e: np.ndarray
    wq_at: np.ndarray  # workqueue of the latest queue event (-1: unknown)
    ends: np.ndarray  # end events that close a start
    end_wq: np.ndarray

    @classmethod
    def build(cls, carried: WqEvents, batch: WqEvents) -> _Pairing:
        ev = WqEvents.concat([carried, batch])
        is_new = np.ones(len(ev), dtype=bool)
        is_new[: len(carried)] = False
        order = np.lexsort((ev.kind, ev.ts, ev.work))
        ev, is_new = ev.take(order), is_new[order]
        n = len(ev)
        idx = np.arange(n)
        first = np.ones(n, dtype=bool)
        first[1:] = ev.work[1:] != ev.work[:-1]
        gstart = np.maximum.accumulate(np.where(first, idx, 0))

        def last(kind: int) -> np.ndarray:
            at = np.maximum.accumulate(np.where(ev.kind == kind, idx, -1))
            at[at < gstart] = -1
            return at

        def before(at: np.ndarray) -> np.ndarray:
            out = np.empty_like(at)
            out[0] = -1
            out[1:] = at[:-1]
            out[out < gstart] = -1
            return out

        lq, la, ls, le = last(QUEUE), last(ACTIVATE), last(START), last(END)
        prev_e = before(le)
        wq_at = np.where(lq >= 0, ev.wq[np.maximum(lq, 0)], -1)
        ends = is_new & (ev.kind == END) & (ls >= 0) & (ls > prev_e)
        end_wq = np.where(ends, wq_at[np.maximum(ls, 0)], -1)
        return cls(
            ev, is_new, first, lq, la, ls, le, before(la), before(ls), prev_e, wq_at, ends, end_wq
        )


# --------------------------------------------------------------------------
# Symbols


class KernelSymbols:
    """Work function addresses -> names, from /proc/kallsyms.

    Parsing kallsyms takes ~0.25 s, so the table is read once per process and
    shared; it is reread only when an address falls outside every known symbol
    (a module loaded since).
    """

    _shared: ClassVar[dict[Path, tuple[list[int], list[str]]]] = {}

    def __init__(self, path: Path = Path("/proc/kallsyms")) -> None:
        self.path = path
        self._addrs: list[int] = []
        self._names: list[str] = []
        self._by_name: dict[str, int] | None = None
        self._loaded = False

    def _load(self, *, fresh: bool = False) -> None:
        self._loaded = True
        self._by_name = None
        if not fresh and self.path in self._shared:
            self._addrs, self._names = self._shared[self.path]
            return
        pairs: list[tuple[int, str]] = []
        with contextlib.suppress(OSError), open(self.path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in ("t", "T"):
                    addr = int(parts[0], 16)
                    if addr:
                        pairs.append((addr, parts[2]))
        pairs.sort()
        self._addrs = [a for a, _ in pairs]
        self._names = [n for _, n in pairs]
        self._shared[self.path] = (self._addrs, self._names)

    def address(self, name: str) -> int | None:
        """A function's address; None when this kernel has none by that name."""
        if not self._loaded:
            self._load()
        if self._by_name is None:
            self._by_name = dict(zip(self._names, self._addrs, strict=True))
        return self._by_name.get(name)

    def name(self, addr: int) -> str:
        if not self._loaded:
            self._load()
        if self._addrs and addr > self._addrs[-1] + (1 << 20):
            self._load(fresh=True)
        pos = bisect.bisect_right(self._addrs, addr) - 1
        if pos < 0:
            return f"0x{addr:x}"
        offset = addr - self._addrs[pos]
        return self._names[pos] if offset == 0 else f"{self._names[pos]}+0x{offset:x}"


# --------------------------------------------------------------------------
# Results


def summarise(
    agg: WorkqueueAggregator,
    names: list[str],
    symbols: KernelSymbols,
    elapsed_s: float,
    min_items: int = 10,
) -> tuple[dict[str, float], str]:
    """Per-workqueue metrics and the per (workqueue, function) TSV table."""
    elapsed_s = max(elapsed_s, 1e-9)
    per_wq: dict[int, KeyStats] = {}
    rows: list[str] = [
        "workqueue\tfunction\titems\titems_per_s\tqueue_delay_ns_p50\tqueue_delay_ns_p99"
        "\tqueue_delay_ns_max\tstart_delay_ns_p50\tstart_delay_ns_p99\tstart_delay_ns_max"
        "\texec_ns_p50\texec_ns_p99\texec_ns_max\texec_ns_mean\tutilisation"
    ]
    ordered = sorted(agg.stats.items(), key=lambda kv: -kv[1].exec_ns.total - kv[1].items)
    for (wq_id, fn), st in ordered:
        total = per_wq.setdefault(wq_id, KeyStats())
        total.items += st.items
        total.queue_delay_ns.merge(st.queue_delay_ns)
        total.start_delay_ns.merge(st.start_delay_ns)
        total.exec_ns.merge(st.exec_ns)
        rows.append(
            "\t".join(
                [names[wq_id], symbols.name(fn), str(st.items), f"{st.items / elapsed_s:.1f}"]
                + [
                    f"{v:.0f}"
                    for v in (
                        st.queue_delay_ns.quantile(0.5),
                        st.queue_delay_ns.quantile(0.99),
                        st.queue_delay_ns.max,
                        st.start_delay_ns.quantile(0.5),
                        st.start_delay_ns.quantile(0.99),
                        st.start_delay_ns.max,
                        st.exec_ns.quantile(0.5),
                        st.exec_ns.quantile(0.99),
                        st.exec_ns.max,
                        st.exec_ns.mean,
                    )
                ]
                + [f"{st.exec_ns.total / (elapsed_s * 1e9):.4f}"]
            )
        )
    metrics: dict[str, float] = {}
    for wq_id, st in per_wq.items():
        if max(st.items, st.exec_ns.count) < min_items:
            continue  # in the TSV only: a few housekeeping items say nothing
        key = f"wq.{metric_safe(names[wq_id])}"
        metrics[f"{key}.items_per_s"] = st.items / elapsed_s
        metrics[f"{key}.queue_delay_ns_p99"] = st.queue_delay_ns.quantile(0.99)
        metrics[f"{key}.queue_delay_ns_max"] = st.queue_delay_ns.max
        metrics[f"{key}.start_delay_ns_p99"] = st.start_delay_ns.quantile(0.99)
        metrics[f"{key}.start_delay_ns_max"] = st.start_delay_ns.max
        metrics[f"{key}.exec_ns_p50"] = st.exec_ns.quantile(0.5)
        metrics[f"{key}.exec_ns_p99"] = st.exec_ns.quantile(0.99)
        metrics[f"{key}.exec_ns_max"] = st.exec_ns.max
        metrics[f"{key}.peak_concurrency"] = float(agg.peak.get(wq_id, 0))
        metrics[f"{key}.utilisation"] = st.exec_ns.total / (elapsed_s * 1e9)
    return metrics, "\n".join(rows) + "\n"


# --------------------------------------------------------------------------
# The collector


def default_buffer_kb_per_cpu(ncpu: int | None = None) -> int:
    """Ring buffer per CPU: 64 MiB in all, between 1 and 8 MiB a CPU.

    At the 180k events/s measured on a loop device that is over 2 s of
    events, far more than the 0.1 s read interval needs.
    """
    ncpu = ncpu or os.cpu_count() or 1
    return int(min(8192, max(1024, 65536 // ncpu)))


def function_filter(include: Iterable[str] = (), exclude: Iterable[str] = ()) -> str | None:
    """An ftrace filter on the work function by name, valid for all four events.

    Comparing a function pointer with a symbol name (`.function`) is newer than
    6.1 and 5.10, which refuse it with EINVAL: `address_filter` says the same
    with the functions' addresses.
    """
    inc = [f"function.function == {name}" for name in include]
    exc = [f"function.function != {name}" for name in exclude]
    return _conjunction(inc, exc)


def address_filter(
    include: Iterable[str], exclude: Iterable[str], symbols: KernelSymbols
) -> str | None:
    """The same filter with the functions' addresses from /proc/kallsyms, which every
    kernel takes. A function this kernel does not have is left out (an included one
    matches nothing: `function == 0`)."""
    inc_names = list(include)
    inc = [f"function == 0x{a:x}" for a in filter(None, map(symbols.address, inc_names))]
    if inc_names and not inc:
        inc = ["function == 0"]
    exc = [f"function != 0x{a:x}" for a in filter(None, map(symbols.address, exclude))]
    return _conjunction(inc, exc)


def _conjunction(inc: list[str], exc: list[str]) -> str | None:
    parts = []
    if inc:
        parts.append("(" + " || ".join(inc) + ")")
    parts.extend(exc)
    return " && ".join(parts) or None


class WorkqueueOptions(CollectorOptions):
    # work functions left out of tracing (an in-kernel filter): by default the loop
    # device's own I/O work, which on a loop target is the emulated device, not the
    # filesystem, and would be most of the events
    exclude: list[str] = Field(
        default_factory=lambda: ["loop_rootcg_workfn", "loop_workfn", "blk_mq_requeue_work"]
    )


class WorkqueueCollector(Collector):
    """Per-workqueue items/s, queueing/start delays, execution time, concurrency."""

    name: ClassVar[str] = "workqueue"
    Options: ClassVar[type[CollectorOptions]] = WorkqueueOptions
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
        ("wq.*.*_ns_*", MetricDef("none", "ns", "workqueue delay or execution time")),
        ("wq.*.items_per_s", MetricDef("none", "1/s", "work items executed per second")),
        ("wq.*.peak_concurrency", MetricDef("none", "items", "most work items running at once")),
        ("wq.*.utilisation", MetricDef("none", "fraction", "busy time / elapsed (may exceed 1)")),
        ("wq.events_per_s", MetricDef("none", "1/s", "workqueue trace events per second")),
        ("wq.**", MetricDef("none", "", "workqueue collector bookkeeping")),
    )
    no_data: ClassVar[str] = "no workqueue had 10 or more items in the window"

    def __init__(
        self,
        *,
        tracefs_root: Path | None = None,
        read_interval_s: float = 0.1,
        spool_limit_bytes: int = SPOOL_LIMIT_BYTES,
        buffer_kb_per_cpu: int | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
    ) -> None:
        self.tracefs_root = tracefs_root
        self.read_interval_s = read_interval_s
        self.spool_limit_bytes = spool_limit_bytes
        self.buffer_kb_per_cpu = buffer_kb_per_cpu or default_buffer_kb_per_cpu()
        self.include_functions = list(include)
        self.exclude_functions = list(exclude)
        self.filter = function_filter(self.include_functions, self.exclude_functions)
        self._instance: TraceInstance | None = None
        self._ticker: tracefs.Ticker | None = None
        self._note = ""
        self._spool: list[bytes] = []
        self._spool_bytes = 0
        self._window_decodes = 0
        self._pending = WqEvents.empty()
        self._names = NameTable()
        self._layout: WqLayout | None = None
        self._agg = WorkqueueAggregator()
        self._page_size = 4096
        self._t_start_ns = 0
        self._missed = 0

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return tracefs.unavailable_reason(None, list(EVENTS))

    def begin(self, ctx: PointContext) -> None:
        self._names = NameTable(device_name=ctx.device_name)
        try:
            root, self._note = tracefs.ensure_tracefs(self.tracefs_root)
            missing = tracefs.missing_events(root, EVENTS)
            if missing:
                raise tracefs.TracefsError("tracepoints not in this kernel: " + ", ".join(missing))
            tracefs.remove_stale_instances(root)
            inst = TraceInstance(root)
            self._instance = inst
            inst.create(buffer_kb_per_cpu=self.buffer_kb_per_cpu)
            self._page_size = inst.page_size()
            self._layout = WqLayout.from_formats({ev: inst.event_format(ev) for ev in EVENTS})
            self._enable_events(inst)
            inst.open_raw()
            inst.set_tracing(True)
            self._t_start_ns = inst.clock_now_ns()
        except (OSError, tracefs.TracefsError) as exc:
            self._release()
            raise Unavailable(str(exc)) from exc
        except Exception:
            self._release()
            raise
        self._agg = WorkqueueAggregator(self._t_start_ns + int(ctx.ramp_s * 1e9))
        self._ticker = tracefs.Ticker(self._tick, self.read_interval_s, "fslab-workqueue")
        self._ticker.start()

    def _enable_events(self, inst: TraceInstance) -> None:
        """Enable the events with the filter by name, or by address where the kernel
        does not compare function pointers with names (6.1, 5.10: EINVAL)."""
        expr = self.filter
        for ev in EVENTS:
            if "function" not in inst.event_format(ev).fields:
                inst.enable_event(ev)  # 6.1's activate_work: nothing to filter on
                continue
            try:
                inst.enable_event(ev, expr)
            except tracefs.TracefsError as exc:
                cause = exc.__cause__
                if expr != self.filter or not isinstance(cause, OSError):
                    raise
                if cause.errno != errno.EINVAL:
                    raise
                expr = address_filter(
                    self.include_functions, self.exclude_functions, KernelSymbols()
                )
                inst.enable_event(ev, expr)
                self._note = "; ".join(
                    filter(None, [self._note, "work functions filtered by address"])
                )

    def _tick(self) -> None:
        self._read()
        if self._spool_bytes > self.spool_limit_bytes:  # too much to keep: decode now
            self._decode(final=False)
            self._window_decodes += 1

    def _read(self) -> None:
        assert self._instance is not None
        pages = list(self._instance.read_raw().values())
        self._spool.extend(pages)
        self._spool_bytes += sum(len(p) for p in pages)

    def _decode(self, *, final: bool) -> None:
        """Decode the spool and correlate everything older than the watermark."""
        assert self._instance is not None and self._layout is not None
        watermark = None if final else self._instance.clock_now_ns() - _WATERMARK_LAG_NS
        data, self._spool, self._spool_bytes = b"".join(self._spool), [], 0
        records = ringbuffer.decode_pages(data, self._page_size)
        self._missed += records.missed_events
        events = WqEvents.concat([self._pending, decode_wq(records, self._layout, self._names)])
        if watermark is None:
            ready, self._pending = events, WqEvents.empty()
        else:
            late = events.ts >= watermark
            ready, self._pending = events.take(~late), events.take(late)
        ready = ready.take(np.argsort(ready.ts, kind="stable"))
        for first in range(0, len(ready), _AGGREGATE_CHUNK):  # small arrays stay in cache
            self._agg.add(ready.take(np.arange(first, min(first + _AGGREGATE_CHUNK, len(ready)))))

    def end(self) -> PendingResult:
        """Stop tracing, read what is left, remove the instance; decoding is left to finish()."""
        window: CollectorResult | tuple[int, float, float]
        try:
            window = self._end_window()
        except Exception as exc:
            window = CollectorResult(status="failed", reason=f"{type(exc).__name__}: {exc}")

        def compute() -> CollectorResult:
            # removing the instance takes ~50 ms in the kernel: off the path too
            problem = self._release(keep_spool=True)
            try:
                result = window if isinstance(window, CollectorResult) else self._summary(*window)
            finally:
                self._spool, self._spool_bytes = [], 0
            if problem:
                result.status = "failed"
                result.reason = "; ".join(filter(None, [result.reason, problem]))
            return result

        return PendingResult(compute)

    def _end_window(self) -> CollectorResult | tuple[int, float, float]:
        """End the window: (events lost, window seconds, reader CPU s), or a failed result."""
        inst = self._instance
        assert inst is not None and self._ticker is not None
        self._ticker.stop()
        inst.set_tracing(False)
        t_end_ns = inst.clock_now_ns()
        if self._ticker.error is not None:
            raise self._ticker.error
        cpu0 = time.thread_time()
        self._read()
        window_cpu_s = self._ticker.cpu_s + time.thread_time() - cpu0
        lost = tracefs.lost_from_stats(inst.stats())
        elapsed_s = (t_end_ns - self._agg.count_from_ns) / 1e9
        if elapsed_s <= 0.05:
            return CollectorResult(
                status="failed",
                reason=f"measurement window of {max(elapsed_s, 0):.2f} s is too short "
                "(did the workload end before its ramp?)",
            )
        return lost, elapsed_s, window_cpu_s

    def _summary(self, lost: int, elapsed_s: float, window_cpu_s: float) -> CollectorResult:
        """Decode the spool and summarise (after the window)."""
        cpu0 = time.thread_time()
        self._decode(final=True)
        decode_cpu_s = time.thread_time() - cpu0
        lost += self._missed
        notes = [self._note] if self._note else []
        metrics, table = summarise(self._agg, self._names.names, KernelSymbols(), elapsed_s)
        metrics["wq.events_lost"] = float(lost)
        metrics["wq.events"] = float(self._agg.events)
        metrics["wq.events_per_s"] = self._agg.events / elapsed_s
        metrics["wq.unattributed_starts"] = float(self._agg.unattributed)
        # in the window: reading (and decoding only a spool over the limit); after it: decoding
        metrics["wq.collector_cpu_s"] = window_cpu_s
        metrics["wq.decode_cpu_s"] = decode_cpu_s
        metrics["wq.collector_us_per_event"] = (
            1e6 * (window_cpu_s + decode_cpu_s) / max(self._agg.events, 1)
        )
        metrics["wq.window_decodes"] = float(self._window_decodes)
        if lost:
            notes.append(f"{lost} events lost (ring buffer full): delays may be incomplete")
        if self._window_decodes:
            notes.append(
                f"spool over {self.spool_limit_bytes >> 20} MiB: decoded "
                f"{self._window_decodes} time(s) during the window"
            )
        return CollectorResult(
            metrics=metrics, artifacts={"workqueue.tsv": table}, reason="; ".join(notes)
        )

    def _release(self, *, keep_spool: bool = False) -> str:
        """Stop the thread and remove the instance; the problem, if any, as text."""
        if self._ticker is not None:
            self._ticker.stop()
        if not keep_spool:
            self._spool, self._spool_bytes = [], 0
        if self._instance is None:
            return ""
        try:
            self._instance.remove()
        except (OSError, tracefs.TracefsError) as exc:
            return str(exc)
        return ""
