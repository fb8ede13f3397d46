"""System-wide on-CPU kernel call graphs with `perf record -g -e cpu-clock`.

The collector samples every CPU during the steady state of a point (after the
ramp, for the runtime), folds the call graphs into a comm-rooted folded profile
and turns its top functions into metrics. `cpu-clock` is a software event, so
it works in VMs without hardware counters; `perf record` runs `sleep` as its
workload so it ends on its own even if fslab dies, and `stop()` interrupts it
when the workload finishes early.

perf is started with the collectors, before the workload, and told to wait out
the ramp (`--delay`): its start-up (opening events, synthesising the threads
that exist) then happens before fio's threads exist and outside the measured
window, and the threads fio creates are tracked by the kernel's fork/comm
records. `perf script` and the folding run after the window
(`stop_observing()` then `finish()`), off the measured path.

`start()` returns once perf is recording: once it has exec'd its `sleep`,
which perf does only after opening its events and synthesising the threads
that exist. That takes a fraction of a second on a host and 20 to 36 s in a
TCG guest (an emulated CPU walking /proc); without the wait the workload
would be over before perf sampled anything. The grace perf gets to write its
buffers at the end scales with how long it took to start.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field

from fslab.base.errors import ToolError
from fslab.base.proc import CommandLog, CommandRecord, process_cpu_s, run
from fslab.base.vocab import CatalogEntry, MetricDef
from fslab.collect.base import (
    Collector,
    CollectorOptions,
    CollectorResult,
    PendingResult,
    PointContext,
    StartFailed,
    Unavailable,
)
from fslab.stacks.fold import fold_perf_script_stream, folded_to_text
from fslab.stacks.profile import Profile

DEFAULT_FREQ_HZ = 99  # ~200 samples/s on 2 CPUs; odd, so it doesn't beat with timers
END_MARGIN_S = 0.5  # stop recording a little before the workload is expected to end
MIN_RECORD_S = 0.5
TOP_FUNCS = 30
SCRIPT_FIELDS = "comm,pid,tid,ip,sym"
TRIAL_TIMEOUT_S = 180.0  # a TCG guest's perf takes up to ~40 s to start
READY_TIMEOUT_S = 180.0  # perf record opening its events and synthesising threads
READY_POLL_S = 0.01
STOP_GRACE_S = 20.0  # perf writes its buffers after SIGINT; big runs take a while
STOP_GRACE_PER_START = 2.0  # ... and twice its start-up time where that was longer
ARTIFACT_FOLDED = "profile.oncpu.folded"
ARTIFACT_COMMANDS = "profile.oncpu.commands"


def perf_record_argv(
    perf: str, data_path: Path, freq_hz: int, duration_s: float, delay_s: float = 0.0
) -> list[str]:
    """System-wide cpu-clock call graphs for `duration_s` seconds, the first
    `delay_s` of them not sampled."""
    delay = ["--delay", str(round(delay_s * 1000))] if delay_s > 0 else []
    return [
        perf,
        "record",
        "-a",
        "-g",
        # kernel call chains only: the diagnosis reads kernel frames, and walking a
        # user stack built without frame pointers costs each sample the most
        "--kernel-callchains",
        "-e",
        "cpu-clock",
        "-F",
        str(freq_hz),
        *delay,
        "--no-buildid",  # skip the post-pass over the data; we script right away
        "--no-buildid-cache",  # and never copy binaries into ~/.debug
        "-o",
        str(data_path),
        "--",
        "sleep",
        f"{duration_s:.3f}",
    ]


def perf_script_argv(perf: str, data_path: Path) -> list[str]:
    """Just what folding needs; `--no-inline` avoids slow addr2line lookups."""
    return [perf, "script", "-i", str(data_path), "-F", SCRIPT_FIELDS, "--no-inline"]


def perf_error_summary(stderr: str) -> str:
    """The line of perf's stderr that says what went wrong (perf's "Error:" line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line == "Error:" and i + 1 < len(lines):
            return lines[i + 1]
        if line.startswith("Error:"):
            return line
    return lines[-1] if lines else ""


def _read_proc_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _paranoid_hint() -> str:
    """Why a non-root user may not sample kernel stacks system-wide."""
    paranoid = _read_proc_int("/proc/sys/kernel/perf_event_paranoid")
    if os.geteuid() == 0 or paranoid is None or paranoid <= 0:
        return ""
    return (
        f" (kernel.perf_event_paranoid is {paranoid}; system-wide kernel call graphs "
        "need root, CAP_PERFMON or perf_event_paranoid <= 0)"
    )


def _kernel_symbols_hidden() -> bool:
    """True when /proc/kallsyms shows zero addresses to us (kptr_restrict).

    Judged by the kernel text symbol, not the first line: per-CPU symbols
    (fixed_percpu_data on 6.1 and 5.10) are listed first at address 0.
    """
    try:
        with open("/proc/kallsyms") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 3 and fields[2] in ("_text", "_stext"):
                    return int(fields[0], 16) == 0
    except (OSError, ValueError):
        return True
    return True


@functools.lru_cache(maxsize=8)
def _probe(perf: str | None, euid: int) -> str | None:
    """Cached per perf binary and user: a short trial recording, or why not."""
    if perf is None:
        return "perf not found in PATH (install linux-perf / linux-tools)"
    with tempfile.TemporaryDirectory(prefix="fslab-perf-probe-") as tmp:
        argv = perf_record_argv(perf, Path(tmp) / "trial.data", 99, 0.1)
        try:
            record = run(argv, check=False, timeout_s=TRIAL_TIMEOUT_S)
        except ToolError as exc:
            return f"perf record trial failed: {exc}"
    if record.returncode != 0:
        summary = perf_error_summary(record.stderr) or f"exit code {record.returncode}"
        return f"perf record -a -g -e cpu-clock trial failed: {summary}{_paranoid_hint()}"
    if _kernel_symbols_hidden():
        return "kernel symbols are hidden (kernel.kptr_restrict); run as root"
    return None


def _tail(path: Path, n_chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace").strip()[-n_chars:]
    except OSError:
        return ""


def profile_metrics(profile: Profile, top_n: int = TOP_FUNCS) -> dict[str, float]:
    """Flat metrics: sample count, idle share, top functions by both shares."""
    metrics: dict[str, float] = {
        "profile.samples": float(profile.total),
        "profile.idle_share": profile.idle_share(),
    }
    for by in ("inclusive", "self"):
        for func in profile.top(top_n, by=by):  # without [unknown]
            metrics[f"profile.{by}.{func.name}"] = func.share
    return metrics


class PerfOptions(CollectorOptions):
    # sampling rate per CPU: the cost grows with the rate, and 99 Hz still gives enough
    # samples in a window (docs/collectors.md, "What the instruments cost")
    freq_hz: Annotated[int, Field(ge=1, le=20000)] = DEFAULT_FREQ_HZ


class PerfCollector(Collector):
    """On-CPU call graphs of all CPUs during the steady state of a point."""

    name: ClassVar[str] = "perf"
    Options: ClassVar[type[CollectorOptions]] = PerfOptions
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
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
    )

    def __init__(
        self,
        freq_hz: int = DEFAULT_FREQ_HZ,
        *,
        keep_data: bool = False,
        top_n: int = TOP_FUNCS,
        end_margin_s: float = END_MARGIN_S,
        script_timeout_s: float = 600.0,
    ) -> None:
        if freq_hz <= 0:
            raise ValueError(f"freq_hz must be positive, not {freq_hz}")
        self.freq_hz = freq_hz
        self.keep_data = keep_data
        self.top_n = top_n
        self.end_margin_s = end_margin_s
        self.script_timeout_s = script_timeout_s
        self.command_log = CommandLog()
        self._proc: subprocess.Popen[bytes] | None = None
        self._proc_argv: list[str] = []
        self._proc_started = 0.0
        self._perf: str | None = None
        self._ctx: PointContext | None = None
        self._reset()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return _probe(shutil.which("perf"), os.geteuid())

    # --- start ----------------------------------------------------------------

    @property
    def _data_path(self) -> Path:
        assert self._ctx is not None
        return self._ctx.artifact_dir / "perf.data"

    @property
    def _log_path(self) -> Path:
        assert self._ctx is not None
        return self._ctx.artifact_dir / "perf-record.log"

    def record_duration_s(self, ctx: PointContext) -> float:
        """Ramp and steady state minus a margin, so perf ends before the workload."""
        return ctx.ramp_s + max(ctx.runtime_s - self.end_margin_s, MIN_RECORD_S)

    def begin(self, ctx: PointContext) -> None:
        """Launch perf now, sampling from the end of the ramp; returns at once."""
        self._reset()
        self._ctx = ctx
        self._perf = shutil.which("perf")
        if self._perf is None:
            raise Unavailable("perf not found in PATH")
        ctx.artifact_dir.mkdir(parents=True, exist_ok=True)
        self._ramp_end = time.monotonic() + max(ctx.ramp_s, 0.0)
        argv = perf_record_argv(
            self._perf,
            self._data_path,
            self.freq_hz,
            self.record_duration_s(ctx),
            delay_s=max(ctx.ramp_s, 0.0),
        )
        try:
            with open(self._log_path, "wb") as log:
                self._proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a terminal ^C must not cut the file short
                )
        except OSError as exc:
            raise StartFailed(f"cannot start perf record: {exc}") from exc
        self._proc_argv = argv
        self._proc_started = time.monotonic()
        self._wait_recording()

    def _wait_recording(self) -> None:
        """Until perf has exec'd its `sleep` (it is then recording), it exits, or the
        deadline passes (then it is stopped and the point records why)."""
        proc = self._proc
        assert proc is not None
        deadline = self._proc_started + READY_TIMEOUT_S
        while not _workload_started(proc.pid):
            if proc.poll() is not None:
                return  # it failed: stop_observing() reports its log
            if time.monotonic() > deadline:
                _kill_group(proc)
                self._launch_error = f"perf record did not start within {READY_TIMEOUT_S:.0f} s"
                self._proc = None
                return
            time.sleep(READY_POLL_S)
        self.start_s = time.monotonic() - self._proc_started
        # the ramp (perf's --delay) runs from here: the workload starts after start()
        self._ramp_end = time.monotonic() + max(self._ctx.ramp_s if self._ctx else 0.0, 0.0)

    def _reset(self) -> None:
        """Forget the previous point, so one collector can observe many."""
        self.command_log = CommandLog()
        self._proc = None
        self._proc_argv = []
        self._interrupted = False
        self._ramp_end = 0.0
        self._cpu_s = 0.0  # perf record's own CPU over the recording
        self.start_s = 0.0  # how long perf took to start recording

    # --- stop -----------------------------------------------------------------

    def end(self) -> PendingResult:
        """End perf record now; `perf script` and folding are left to finish()."""
        proc = self._proc
        try:
            early = self._end_observation(proc)
        except Exception as exc:  # a collector must never fail the point
            early = CollectorResult(status="failed", reason=f"perf collector error: {exc!r}")
        finally:
            if proc is not None:
                _kill_group(proc)
        if early is not None:
            self._discard_data()
            return PendingResult.ready(early)
        assert self._perf is not None and self._ctx is not None
        perf, data, log = self._perf, self._data_path, self.command_log
        err_path = self._ctx.artifact_dir / "perf-script.log"

        cpu_s = self._cpu_s

        def compute() -> CollectorResult:
            try:
                result = self._fold(perf, data, err_path, log)
                if result.status == "ok":
                    result.metrics["profile.collector_cpu_s"] = cpu_s
                return result
            finally:
                if not self.keep_data:
                    with contextlib.suppress(OSError):
                        data.unlink()

        return PendingResult(compute)

    def _discard_data(self) -> None:
        if not self.keep_data and self._ctx is not None:
            with contextlib.suppress(OSError):
                self._data_path.unlink()

    def _end_observation(self, proc: subprocess.Popen[bytes] | None) -> CollectorResult | None:
        """Stop perf record; a result if there is nothing to fold, else None."""
        if proc is None:
            return CollectorResult(status="failed", reason="perf not started")
        if time.monotonic() < self._ramp_end:
            return CollectorResult(
                status="failed",
                reason="the workload ended before the ramp was over; perf sampled nothing",
            )
        returncode = self._end_record(proc)
        log_tail = _tail(self._log_path)
        self.command_log.add(
            CommandRecord(
                argv=self._proc_argv,
                returncode=returncode,
                stdout="",
                stderr=log_tail,
                seconds=time.monotonic() - self._proc_started,
            )
        )
        data = self._data_path
        if not data.exists() or data.stat().st_size == 0:
            return CollectorResult(
                status="failed", reason=f"perf record wrote no data (exit {returncode}): {log_tail}"
            )
        if returncode != 0 and not self._interrupted:
            return CollectorResult(
                status="failed", reason=f"perf record failed (exit {returncode}): {log_tail}"
            )
        return None

    def _end_record(self, proc: subprocess.Popen[bytes]) -> int:
        """SIGINT a running perf so it flushes its buffers, then wait for it.

        perf's CPU time is read first (perf record ends on its own just before
        the workload, and a zombie keeps its times): the window's cost, not
        the writing of the buffers after it.
        """
        self._cpu_s = process_cpu_s(proc.pid)
        if proc.poll() is None:
            self._interrupted = True
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=max(STOP_GRACE_S, STOP_GRACE_PER_START * self.start_s))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
        return proc.wait()

    def _fold(self, perf: str, data: Path, err_path: Path, log: CommandLog) -> CollectorResult:
        argv = perf_script_argv(perf, data)
        started = time.monotonic()
        folded, returncode, timed_out = _run_script(argv, err_path, self.script_timeout_s)
        err_tail = _tail(err_path)
        log.add(CommandRecord(argv, returncode, "", err_tail, time.monotonic() - started))
        if timed_out:
            return CollectorResult(
                status="failed", reason=f"perf script timed out after {self.script_timeout_s} s"
            )
        if returncode != 0:
            return CollectorResult(
                status="failed", reason=f"perf script failed (exit {returncode}): {err_tail}"
            )
        profile = Profile.from_counts(folded)
        if profile.total == 0:
            return CollectorResult(status="failed", reason="perf recorded no samples")
        metrics = profile_metrics(profile, self.top_n)
        metrics["profile.freq_hz"] = float(self.freq_hz)
        metrics["profile.script_s"] = time.monotonic() - started
        metrics["profile.start_s"] = self.start_s
        return CollectorResult(
            status="ok",
            metrics=metrics,
            artifacts={
                ARTIFACT_FOLDED: folded_to_text(folded),
                ARTIFACT_COMMANDS: "\n".join(log.shell_lines()) + "\n",
            },
        )


def _run_script(
    argv: list[str], err_path: Path, timeout_s: float
) -> tuple[dict[str, int], int, bool]:
    """Stream `perf script` into the folder; a watchdog kills it on timeout."""
    with open(err_path, "wb") as err:
        # its own session: a terminal Ctrl-C must not cut short the evidence being folded
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        proc.kill()

    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        assert proc.stdout is not None
        folded = fold_perf_script_stream(proc.stdout)
        returncode = proc.wait()
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return folded, returncode, timed_out.is_set()


def _workload_started(pid: int) -> bool:
    """True once perf's forked child has exec'd the workload (its comm is no longer perf's)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return any(Path(f"/proc/{c}/comm").read_text().strip() == "sleep" for c in children)
    except OSError:
        return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill perf and its `sleep` (their own session) if they still run."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
