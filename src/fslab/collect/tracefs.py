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

from fslab.base.errors import FslabError, ToolError
from fslab.base.hostfacts import parse_cpu_list
from fslab.base.proc import CommandLog, pid_alive, run

DEFAULT_ROOT = Path("/sys/kernel/tracing")
LEGACY_ROOT = Path("/sys/kernel/debug/tracing")
INSTANCE_PREFIX = "fslab-"


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
