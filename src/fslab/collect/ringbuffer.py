"""Raw ring-buffer pages from `trace_pipe_raw`, decoded into event records.

The collectors read their events as binary pages (no text formatting in the
kernel, no regex in Python); this module turns concatenated pages of any CPUs
into payload offsets and times, and reads fields with the offsets each event's
`format` file publishes (`collect.tracefs.EventFormat`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fslab.collect.tracefs import EventField, TracefsError

# Ring-buffer record types (include/linux/ring_buffer.h, events/header_event).
_TYPE_DATA_MAX = 28
_TYPE_PADDING = 29
_TYPE_TIME_EXTEND = 30
_TYPE_TIME_STAMP = 31
_TS_SHIFT = 27
_PAGE_HEADER_BYTES = 16  # u64 timestamp + local_t commit
_RB_MISSED_EVENTS = 1 << 31
_RB_MISSED_STORED = 1 << 30
_COMMIT_SIZE_MASK = (1 << 30) - 1


@dataclass
class RawRecords:
    """Event records decoded from raw pages: payload offsets into `data` plus times."""

    data: bytes
    ts_ns: np.ndarray  # int64, trace clock
    offsets: np.ndarray  # int64, payload start in `data`
    missed_events: int = 0  # reported by page headers (lost between pages)

    def __len__(self) -> int:
        return len(self.offsets)

    def u16(self, offset: int) -> np.ndarray:
        return gather(self.data, self.offsets + offset, 2, signed=False)

    def column(self, fmt_field: EventField, mask: np.ndarray | None = None) -> np.ndarray:
        """The numeric values of one field for all (or the masked) records."""
        offs = self.offsets if mask is None else self.offsets[mask]
        return gather(self.data, offs + fmt_field.offset, fmt_field.size, fmt_field.signed)

    def string(self, index: int, fmt_field: EventField) -> str:
        """A string field (fixed char array or __data_loc) of record `index`."""
        base = int(self.offsets[index])
        if fmt_field.data_loc or fmt_field.rel_loc:
            loc = int.from_bytes(
                self.data[base + fmt_field.offset : base + fmt_field.offset + 4], "little"
            )
            start = loc & 0xFFFF
            if fmt_field.rel_loc:
                start += fmt_field.offset + fmt_field.size
            raw = self.data[base + start : base + start + (loc >> 16)]
        else:
            raw = self.data[base + fmt_field.offset : base + fmt_field.offset + fmt_field.size]
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


_DTYPES = {1: "u1", 2: "<u2", 4: "<u4", 8: "<u8"}


def gather(data: bytes, offsets: np.ndarray, size: int, signed: bool) -> np.ndarray:
    """Read `size`-byte little-endian integers at arbitrary byte offsets, vectorised."""
    if size not in _DTYPES:
        raise TracefsError(f"cannot read a {size}-byte numeric field")
    dtype = _DTYPES[size].replace("u", "i") if signed else _DTYPES[size]
    if len(offsets) == 0:
        return np.zeros(0, dtype=dtype)
    offsets = offsets.astype(np.int64)
    if size >= 4 and not (offsets & 3).any() and len(data) % 4 == 0:
        # ring-buffer records are 4-byte aligned: gather whole words
        words = np.frombuffer(data, dtype="<u4")
        first = offsets >> 2
        if size == 4:
            values = words[first]
        else:
            values = words[first].astype(np.uint64) | (words[first + 1].astype(np.uint64) << 32)
        return values.astype(dtype, copy=False) if signed else values
    raw = np.frombuffer(data, dtype=np.uint8)
    idx = offsets[:, None] + np.arange(size, dtype=np.int64)
    values = np.ascontiguousarray(raw[idx]).view(_DTYPES[size]).reshape(-1)
    return values.astype(dtype) if signed else values


_CHUNK_PAGES = 64  # keeps the per-word temporaries in cache (~0.25 us a record)


def decode_pages(data: bytes, page_size: int = 4096) -> RawRecords:
    """Decode concatenated raw ring-buffer pages (of any CPUs) into records.

    The pages of a chunk are walked in lockstep with numpy: one iteration
    advances every page by one record, so Python-level work is per record
    slot rather than per record. Timestamps are rebuilt vectorised: each
    page's base time plus the cumulative 27-bit deltas and time-extend
    records; pages holding an absolute time-stamp record (absolute timestamp
    mode only) take a slow exact path.
    """
    if len(data) % page_size:
        raise TracefsError(f"raw trace data is {len(data)} bytes, not whole {page_size}-byte pages")
    n_pages = len(data) // page_size
    parts = [
        _decode_chunk(data, first, min(first + _CHUNK_PAGES, n_pages), page_size)
        for first in range(0, n_pages, _CHUNK_PAGES)
    ]
    if not parts:
        return RawRecords(data, np.zeros(0, np.int64), np.zeros(0, np.int64))
    return RawRecords(
        data=data,
        ts_ns=np.concatenate([p[0] for p in parts]),
        offsets=np.concatenate([p[1] for p in parts]),
        missed_events=sum(p[2] for p in parts),
    )


def _decode_chunk(
    data: bytes, first_page: int, end_page: int, page_size: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """(times, payload offsets into `data`, missed events) for pages [first, end)."""
    n_pages = end_page - first_page
    page_words = page_size // 4
    words = np.frombuffer(
        data, dtype="<u4", count=n_pages * page_words, offset=first_page * page_size
    )
    grid = words.reshape(n_pages, page_words)
    page_ts = grid[:, 0].astype(np.int64) | (grid[:, 1].astype(np.int64) << 32)
    commit = grid[:, 2].astype(np.int64) | (grid[:, 3].astype(np.int64) << 32)
    sizes = commit & _COMMIT_SIZE_MASK
    missed = _missed_events(words, commit, sizes, page_words)

    # Length in words of a record starting at each word (garbage elsewhere).
    type_len = words & 31
    array0 = np.empty(len(words), dtype=np.int64)
    array0[:-1] = words[1:]
    array0[-1] = 0
    step = np.where(type_len <= _TYPE_DATA_MAX, type_len + 1, 2).astype(np.int64)
    var_len = (type_len == 0) | (type_len == _TYPE_PADDING)
    step[var_len] = 1 + (array0[var_len] + 3) // 4
    tail = (type_len == _TYPE_PADDING) & ((words >> 5) == 0)
    step[tail] = page_words  # unused tail of the page: jump past its end
    np.maximum(step, 1, out=step)

    first = _PAGE_HEADER_BYTES // 4
    starts = np.arange(n_pages, dtype=np.int64) * page_words
    cur = starts + first
    cur_end = starts + np.minimum(first + sizes // 4, page_words)
    live = cur < cur_end
    cur, cur_end = cur[live], cur_end[live]
    found: list[np.ndarray] = []
    while len(cur):
        found.append(cur)
        cur = cur + step[cur]
        live = cur < cur_end
        cur, cur_end = cur[live], cur_end[live]
    flat_pos = np.sort(np.concatenate(found)) if found else np.zeros(0, np.int64)
    flat_pos = flat_pos[~tail[flat_pos]]
    ts, offsets = _records_at(words, flat_pos, page_ts, page_words)
    return ts, offsets + first_page * page_size, missed


def _records_at(
    words: np.ndarray, flat_pos: np.ndarray, page_ts: np.ndarray, page_words: int
) -> tuple[np.ndarray, np.ndarray]:
    """Times and payload byte offsets of the records at word positions `flat_pos`."""
    header = words[flat_pos].astype(np.int64)
    tl = header & 31
    delta = header >> 5
    array0 = words[np.minimum(flat_pos + 1, len(words) - 1)].astype(np.int64)
    page_of = flat_pos // page_words
    dt = delta + np.where(tl == _TYPE_TIME_EXTEND, array0 << _TS_SHIFT, 0)
    csum = np.cumsum(dt)
    starts = np.searchsorted(page_of, np.arange(len(page_ts)))
    before = np.concatenate(([0], csum))[starts]  # cumulative sum before each page
    ts = page_ts[page_of] + csum - before[page_of]
    for page in np.unique(page_of[tl == _TYPE_TIME_STAMP]):
        sel = page_of == page
        ts[sel] = _page_times_exact(tl[sel], delta[sel], array0[sel], int(page_ts[page]))
    is_data = tl <= _TYPE_DATA_MAX
    offsets = np.where(tl == 0, flat_pos + 2, flat_pos + 1)[is_data] * 4
    return ts[is_data], offsets


def _missed_events(
    words: np.ndarray, commit: np.ndarray, sizes: np.ndarray, page_words: int
) -> int:
    """Events lost between pages, as the page headers report them."""
    missed = 0
    for page in np.flatnonzero(commit & (_RB_MISSED_EVENTS | _RB_MISSED_STORED)):
        size = int(sizes[page])
        if commit[page] & _RB_MISSED_STORED and _PAGE_HEADER_BYTES + size + 8 <= page_words * 4:
            w = page * page_words + (_PAGE_HEADER_BYTES + size) // 4
            missed += int(words[w]) | (int(words[w + 1]) << 32)
        else:
            missed += 1  # lost, count unknown: at least one
    return missed


def _page_times_exact(
    type_len: np.ndarray, delta: np.ndarray, array0: np.ndarray, page_ts: int
) -> np.ndarray:
    """Record times of one page containing absolute time-stamp records."""
    out = np.empty(len(type_len), dtype=np.int64)
    t = page_ts
    for i, (tl, dt, a0) in enumerate(
        zip(type_len.tolist(), delta.tolist(), array0.tolist(), strict=True)
    ):
        if tl == _TYPE_TIME_STAMP:
            t = ((a0 << _TS_SHIFT) + dt) | (t & ~((1 << 59) - 1))
        elif tl == _TYPE_TIME_EXTEND:
            t += dt + (a0 << _TS_SHIFT)
        else:
            t += dt
        out[i] = t
    return out
