"""tracefs: find or mount it, trace into a private instance, decode raw pages.

fslab never touches the global trace buffer or anyone else's settings: each
collector creates its own ftrace instance `instances/fslab-<pid>-<rand>`,
enables only its events there, and removes the instance when it stops. Events
are read from the per-CPU `trace_pipe_raw` files as binary ring-buffer pages
(no text formatting in the kernel, no regex in Python) and decoded with the
field offsets the kernel publishes in each event's `format` file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fslab.base.errors import FslabError, ToolError
from fslab.base.hostfacts import parse_cpu_list
from fslab.base.proc import CommandLog, pid_alive, run

DEFAULT_ROOT = Path("/sys/kernel/tracing")
LEGACY_ROOT = Path("/sys/kernel/debug/tracing")
INSTANCE_PREFIX = "fslab-"

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


class TracefsError(FslabError):
    """tracefs is missing, cannot be mounted, or an instance file refused a write."""


# --------------------------------------------------------------------------
# Locating and mounting


def is_tracefs_root(path: Path) -> bool:
    """True when `path` looks like a mounted tracefs (has events/ and instances/)."""
    return (path / "events").is_dir() and (path / "instances").is_dir()


def find_tracefs(root: Path | None = None) -> Path | None:
    """The mounted tracefs root: `root` if given, else the standard places."""
    candidates = [root] if root is not None else [DEFAULT_ROOT, LEGACY_ROOT]
    for candidate in candidates:
        if candidate is not None and is_tracefs_root(candidate):
            return candidate
    return None


def _kernel_has_tracefs() -> bool:
    try:
        text = Path("/proc/filesystems").read_text()
    except OSError:
        return False
    return any(line.split()[-1:] == ["tracefs"] for line in text.splitlines())


def mount_problem(root: Path | None = None) -> str | None:
    """Why tracefs can be neither found nor mounted; None when it can be used."""
    if find_tracefs(root) is not None:
        return None
    target = root if root is not None else DEFAULT_ROOT
    if not target.is_dir():
        return f"tracefs not found: {target} does not exist"
    if root is not None and any(target.iterdir()):
        return f"{target} is not a tracefs mount"
    if os.geteuid() != 0:
        return f"tracefs is not mounted at {target} and mounting it needs root"
    if not _kernel_has_tracefs():
        return "this kernel has no tracefs (CONFIG_TRACING off?)"
    return None


def ensure_tracefs(root: Path | None = None, log: CommandLog | None = None) -> tuple[Path, str]:
    """Return (tracefs root, note); mounts tracefs when it is missing and says so."""
    found = find_tracefs(root)
    if found is not None:
        return found, ""
    problem = mount_problem(root)
    if problem:
        raise TracefsError(problem)
    target = root if root is not None else DEFAULT_ROOT
    try:
        run(["mount", "-t", "tracefs", "nodev", str(target)], log=log, timeout_s=30)
    except ToolError as exc:
        raise TracefsError(f"cannot mount tracefs at {target}: {exc}") from exc
    if not is_tracefs_root(target):
        raise TracefsError(f"mounted tracefs at {target} but it has no events/ or instances/")
    return target, f"tracefs was not mounted; fslab mounted it at {target} (left mounted)"


def missing_events(root: Path, events: Iterable[str]) -> list[str]:
    """Events ("sys/name") that this kernel does not have."""
    return [ev for ev in events if not (root / "events" / ev / "format").is_file()]


def unavailable_reason(root: Path | None, events: Sequence[str]) -> str | None:
    """Cheap check for `Collector.unavailable_reason`: tracefs usable, events present."""
    problem = mount_problem(root)
    if problem:
        return problem
    found = find_tracefs(root)
    if found is None:  # mountable but not mounted yet: events are checked at start
        return None
    missing = missing_events(found, events)
    if missing:
        return "tracepoint(s) not in this kernel: " + ", ".join(missing)
    if not os.access(found / "instances", os.W_OK):
        return f"cannot create ftrace instances under {found}/instances (needs root)"
    return None


# --------------------------------------------------------------------------
# Event formats

_FIELD_RE = re.compile(
    r"field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);"
    r"\s*signed:(?P<signed>\d+);"
)
_NAME_RE = re.compile(r"^name:\s*(\S+)", re.MULTILINE)
_ID_RE = re.compile(r"^ID:\s*(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class EventField:
    """One field of a trace event record as the kernel lays it out."""

    name: str
    offset: int
    size: int
    signed: bool
    data_loc: bool = False  # __data_loc: u32 (len << 16 | offset from record start)
    rel_loc: bool = False  # __rel_loc: u32 (len << 16 | offset from after this field)


ONLINE_CPUS = Path("/sys/devices/system/cpu/online")


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@dataclass(frozen=True)
class EventFormat:
    """An event's id and field layout, parsed from its `format` file."""

    name: str
    id: int
    fields: dict[str, EventField]

    def __getitem__(self, key: str) -> EventField:
        return self.fields[key]


def parse_event_format(text: str) -> EventFormat:
    """Parse a tracefs `events/<sys>/<event>/format` file."""
    name_match, id_match = _NAME_RE.search(text), _ID_RE.search(text)
    if not name_match or not id_match:
        raise TracefsError("not an event format file (no name:/ID: line)")
    fields: dict[str, EventField] = {}
    for match in _FIELD_RE.finditer(text):
        decl = match["decl"].strip()
        fname = re.sub(r"\[.*\]$", "", decl.split()[-1])
        fields[fname] = EventField(
            name=fname,
            offset=int(match["offset"]),
            size=int(match["size"]),
            signed=match["signed"] == "1",
            data_loc="__data_loc" in decl,
            rel_loc="__rel_loc" in decl,
        )
    return EventFormat(name=name_match.group(1), id=int(id_match.group(1)), fields=fields)


# --------------------------------------------------------------------------
# Raw ring-buffer pages


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
        return _gather(self.data, self.offsets + offset, 2, signed=False)

    def column(self, fmt_field: EventField, mask: np.ndarray | None = None) -> np.ndarray:
        """The numeric values of one field for all (or the masked) records."""
        offs = self.offsets if mask is None else self.offsets[mask]
        return _gather(self.data, offs + fmt_field.offset, fmt_field.size, fmt_field.signed)

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


def _gather(data: bytes, offsets: np.ndarray, size: int, signed: bool) -> np.ndarray:
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


# --------------------------------------------------------------------------
# Private instances


def remove_stale_instances(root: Path) -> list[str]:
    """Remove fslab instances left behind by fslab processes that no longer exist."""
    removed: list[str] = []
    inst_dir = root / "instances"
    with contextlib.suppress(OSError):
        for entry in inst_dir.iterdir():
            match = re.fullmatch(rf"{INSTANCE_PREFIX}(\d+)-[0-9a-f]+", entry.name)
            if match and not pid_alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    entry.rmdir()
                    removed.append(entry.name)
    return removed


def parse_cpu_stats(text: str) -> dict[str, float]:
    """Parse `per_cpu/cpuN/stats` ("entries: 12", "oldest event ts: 1.5", ...)."""
    stats: dict[str, float] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        with contextlib.suppress(ValueError):
            stats[key.strip()] = float(value.strip())
    return stats


def lost_from_stats(stats: dict[int, dict[str, float]]) -> int:
    """Events the ring buffer lost (overwritten or dropped when full) over all CPUs."""
    total = 0.0
    for cpu_stats in stats.values():
        total += cpu_stats.get("overrun", 0.0)
        total += cpu_stats.get("commit overrun", 0.0)
        total += cpu_stats.get("dropped events", 0.0)
    return int(total)


@dataclass
class TraceInstance:
    """A private ftrace instance; `remove()` (or leaving the `with`) deletes it.

    Events are enabled one by one with optional filters; nothing outside
    `instances/<name>` is ever written.
    """

    root: Path
    name: str = field(
        default_factory=lambda: f"{INSTANCE_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    )
    enabled: list[str] = field(default_factory=list)
    _fds: dict[int, int] = field(default_factory=dict)
    created: bool = False

    @property
    def path(self) -> Path:
        return self.root / "instances" / self.name

    def _write(self, rel: str, value: str) -> None:
        try:
            with open(self.path / rel, "w") as fh:
                fh.write(value)
        except OSError as exc:
            raise TracefsError(
                f"cannot write {value.strip()!r} to {self.path / rel}: {exc}"
            ) from exc

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def create(
        self,
        *,
        buffer_kb_per_cpu: int = 1024,
        clock: str = "mono",
        overwrite: bool = False,
    ) -> None:
        """Make the instance, tracing off, with its buffer size and clock.

        `overwrite=False` makes a full buffer drop new events (counted in the
        per-CPU stats) rather than silently overwrite unread ones.
        """
        self.path.mkdir()
        self.created = True
        self._write("tracing_on", "0")
        self._write("buffer_size_kb", str(int(buffer_kb_per_cpu)))
        if clock in self.read("trace_clock").replace("[", " ").replace("]", " ").split():
            self._write("trace_clock", clock)
        self._write("options/overwrite", "1" if overwrite else "0")

    def event_format(self, event: str) -> EventFormat:
        return parse_event_format(self.read(f"events/{event}/format"))

    def enable_event(self, event: str, filter_expr: str | None = None) -> None:
        """Enable "sys/name" in this instance, with an ftrace filter if given."""
        if filter_expr:
            self._write(f"events/{event}/filter", filter_expr)
        self._write(f"events/{event}/enable", "1")
        self.enabled.append(event)

    def set_tracing(self, on: bool) -> None:
        self._write("tracing_on", "1" if on else "0")

    def cpus(self) -> list[int]:
        """The online CPUs' buffers: tracefs has one per possible CPU, and a guest with
        possible_cpus=1728 and 2 online would otherwise open 1728 pipes (EMFILE)."""
        names = os.listdir(self.path / "per_cpu")
        present = sorted(int(n[3:]) for n in names if n.startswith("cpu") and n[3:].isdigit())
        online = set(parse_cpu_list(_read_text(ONLINE_CPUS)))
        return [cpu for cpu in present if cpu in online] if online else present

    def stats(self) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        for cpu in self.cpus():
            with contextlib.suppress(OSError):
                out[cpu] = parse_cpu_stats(self.read(f"per_cpu/cpu{cpu}/stats"))
        return out

    def clock_now_ns(self) -> int:
        """The instance's trace clock now (from the first CPU's `now ts` stat)."""
        stats = parse_cpu_stats(self.read(f"per_cpu/cpu{self.cpus()[0]}/stats"))
        return round(stats["now ts"] * 1e9)

    def page_size(self) -> int:
        with contextlib.suppress(OSError, ValueError):
            return int(self.read("buffer_subbuf_size_kb").strip()) * 1024
        return os.sysconf("SC_PAGE_SIZE")

    # -- raw reading --------------------------------------------------------

    def open_raw(self) -> None:
        """Open every CPU's trace_pipe_raw, non-blocking."""
        for cpu in self.cpus():
            if cpu not in self._fds:
                path = self.path / f"per_cpu/cpu{cpu}/trace_pipe_raw"
                self._fds[cpu] = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def read_raw(self, max_pages_per_cpu: int = 1 << 30) -> dict[int, bytes]:
        """Whatever each CPU has ready now, as whole pages (consumed)."""
        psize = self.page_size()
        out: dict[int, bytes] = {}
        for cpu, fd in self._fds.items():
            if cpu < 0:
                continue
            chunks: list[bytes] = []
            for _ in range(max_pages_per_cpu):
                try:
                    chunk = os.read(fd, psize)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno in (errno.EAGAIN, errno.EINTR):
                        break
                    raise TracefsError(f"reading cpu{cpu} trace_pipe_raw: {exc}") from exc
                if not chunk:
                    break
                if len(chunk) < psize:
                    chunk = chunk + bytes(psize - len(chunk))
                chunks.append(chunk)
            if chunks:
                out[cpu] = b"".join(chunks)
        return out

    def read_text_pipe(self) -> str:
        """Whatever formatted text `trace_pipe` has ready now (consumed).

        For low-rate events whose printed form is what we want (e.g. jiffies
        already converted to ms by the event's print format).
        """
        if -1 not in self._fds:
            self._fds[-1] = os.open(self.path / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(self._fds[-1], 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace")

    def close_raw(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    # -- teardown -------------------------------------------------------------

    def remove(self) -> None:
        """Stop tracing, disable events, close readers and delete the instance.

        Idempotent. Raises TracefsError only if the directory cannot be
        removed after retries (a reader elsewhere still holding a file open).
        """
        self.close_raw()
        if not self.created or not self.path.exists():
            self.created = False
            return
        with contextlib.suppress(TracefsError):
            self.set_tracing(False)
        for event in self.enabled:
            with contextlib.suppress(TracefsError):
                self._write(f"events/{event}/enable", "0")
        last_exc: OSError | None = None
        for attempt in range(20):
            try:
                self.path.rmdir()
                self.created = False
                return
            except FileNotFoundError:
                self.created = False
                return
            except OSError as exc:  # EBUSY while a file of the instance is open
                last_exc = exc
                time.sleep(0.05 * (attempt + 1))
        raise TracefsError(f"cannot remove ftrace instance {self.path}: {last_exc}")

    def __enter__(self) -> TraceInstance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class Ticker:
    """A daemon thread calling `tick()` every `interval_s` until stopped.

    Records the first exception (the thread then ends) and the thread's CPU
    time, so collectors can report their own overhead.
    """

    def __init__(self, tick: Callable[[], None], interval_s: float, name: str) -> None:
        self._tick = tick
        self.interval_s = interval_s
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.cpu_s = 0.0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        cpu0 = time.thread_time()
        try:
            while not self._stop.wait(self.interval_s):
                self._tick()
        except Exception as exc:  # reported by the collector at stop
            self.error = exc
        finally:
            self.cpu_s = time.thread_time() - cpu0

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)
