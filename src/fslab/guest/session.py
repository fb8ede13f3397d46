"""Boot one guest and run many points in it.

    with GuestSession(GuestConfig(kernel="6.1", cpus=2, possible_cpus=1728),
                      target_bytes=spec.target.size_bytes) as guest:
        outcome = guest.run_point(spec, point)   # a PointOutcome, stored like any other

Entering the session resolves the kernel, picks the accelerator, checks the
CPU counts and boots; anything wrong there is a GuestError (exit code 2)
carrying the tail of the guest's console, and nothing is left behind. A guest
that dies or hangs during a point fails that point (with the console tail)
and is booted afresh for the next one. qemu runs in its own process group and
is stopped on every exit path, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from types import FrameType

from fslab.base.errors import FslabError
from fslab.base.format import format_bytes
from fslab.base.hostfacts import memory_total_bytes
from fslab.base.proc import stop_process_group
from fslab.guest.kernels import Kernel, resolve_kernel
from fslab.guest.probe import PROBE_TIMEOUT_S, AccelChoice, check_cpus, choose_accel
from fslab.guest.protocol import (
    MARKER,
    SESSION_FILE,
    GuestFacts,
    PointRequest,
    guest_target_problem,
    outcome_from_json,
    request_to_json,
    write_json_atomic,
)
from fslab.guest.vng import BootPlan, check_host_tools, stage_kernel, vng_argv, vng_binary, vng_env
from fslab.measure import plan as workload_plan
from fslab.spec.model import Spec
from fslab.spec.points import Point
from fslab.spec.vm import Accel, GuestConfig
from fslab.store.db import PointOutcome, utc_now
from fslab.store.facts import GuestFacts as PointGuestFacts
from fslab.store.facts import PointFacts

CONSOLE_TAIL_BYTES = 6000
QUIT_GRACE_S = 30.0
# Beyond the point's own timeout (which the runner enforces inside the guest):
# the agent's result file, and slack for an emulated CPU.
POINT_MARGIN_S = 300.0
PROBE_MEMORY_BYTES = 1024**3
HOST_RESERVE_BYTES = 2 * 1024**3


class GuestError(FslabError):
    """A guest could not be booted: bad kernel, bad CPU count, no boot in time."""

    exit_code = 2


class _GuestGone(Exception):
    """The guest stopped (or stopped answering) while the host waited for it."""


class _Guest:
    """One running qemu (under vng) and the pipes to its agent."""

    def __init__(self, argv: list[str], console_path: Path) -> None:
        self.console_path = console_path
        self._console = console_path.open("ab")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._console,
            env=vng_env(),
            cwd="/",
            start_new_session=True,
        )
        self.ready = False  # the agent said it is up: it will act on `quit`
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    def next_message(self, deadline: float) -> tuple[str, str]:
        """The agent's next protocol line as (verb, argument), by the deadline."""
        assert self.proc.stdout is not None
        while True:
            while b"\n" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\n", 1)
                line = raw.decode(errors="replace").strip()
                if line.startswith(MARKER + " "):
                    verb, _, argument = line[len(MARKER) + 1 :].partition(" ")
                    return verb, argument
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _GuestGone("timeout")
            if not self._selector.select(timeout=min(remaining, 1.0)):
                if self.proc.poll() is not None:
                    raise _GuestGone(f"exited with code {self.proc.returncode}")
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self.proc.wait(timeout=QUIT_GRACE_S)
                raise _GuestGone(f"exited with code {self.proc.returncode}")
            self._buffer += chunk

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        """Ask the agent to quit (the guest powers off); kill the group if it lingers.

        A guest still booting cannot hear `quit`: it is killed at once."""
        if self.ready and self.proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self.send("quit")
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=QUIT_GRACE_S)
        self.kill()

    def kill(self) -> None:
        stop_process_group(self.proc, grace_s=5.0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # anything the group left running
        _wait_group_gone(self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        self._selector.close()
        self._console.close()


def _wait_group_gone(pgid: int, timeout_s: float = 10.0) -> None:
    """Until no process of the group is left (zombies included: their reaper is init)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        members = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                members.append(entry.name)
        if not members:
            return
        time.sleep(0.1)


def console_tail(path: Path, limit: int = CONSOLE_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as console:
            console.seek(max(0, path.stat().st_size - limit))
            return console.read().decode(errors="replace")
    except OSError:
        return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "(the console printed nothing)"


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM off while a guest is being stopped (delivered afterwards)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _TermAsInterrupt:
    """SIGTERM raises KeyboardInterrupt while a guest runs, unless someone handles it
    already (the runner does), so a terminated fslab stops its guest first."""

    def __init__(self) -> None:
        self._installed = False

    def _raise(self, signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._raise)
            self._installed = True

    def restore(self) -> None:
        if self._installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._installed = False


def check_guest(config: GuestConfig, *, target_bytes: int = 0) -> tuple[Kernel, int]:
    """All that can be checked about a guest without booting it: the kernel and its
    modules, the host's tools, the CPU counts, the memory. Returns (kernel, memory
    bytes); raises UsageError or GuestError (exit 2) naming the problem."""
    kernel = resolve_kernel(config.kernel, config.modules)
    check_host_tools()
    vng_binary()
    check_cpus(config.cpus, config.possible_cpus, "kvm" if config.accel == "kvm" else "tcg", kernel)
    memory_bytes = config.memory_bytes(target_bytes)
    check_memory(memory_bytes)
    return kernel, memory_bytes


def check_memory(memory_bytes: int) -> None:
    """Refuse a guest larger than the host's RAM (qemu would start, then swap or be killed)."""
    host_bytes = memory_total_bytes()
    if host_bytes and memory_bytes > host_bytes - HOST_RESERVE_BYTES:
        raise GuestError(
            f"guest memory {format_bytes(memory_bytes)} does not fit this host's "
            f"{format_bytes(host_bytes)} (fslab keeps {format_bytes(HOST_RESERVE_BYTES)} for "
            "the host); set memory, or a smaller target.size"
        )


def boot_plan(
    kernel: Kernel,
    *,
    workdir: Path,
    rwdir: Path,
    command: tuple[str, ...],
    accel: Accel,
    cpus: int,
    possible_cpus: int | None,
    memory_bytes: int,
) -> BootPlan:
    return BootPlan(
        kernel=kernel,
        kernel_path=stage_kernel(kernel, workdir),
        cpus=cpus,
        possible_cpus=possible_cpus,
        memory_bytes=memory_bytes,
        accel=accel,
        rwdir=rwdir,
        command=command,
        name=f"fslab-{os.getpid()}-{secrets.token_hex(4)}",
    )


def probe_kvm_boot(kernel: Kernel, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """A short boot under KVM running `true`: None if it worked, else why not."""
    workdir = Path(tempfile.mkdtemp(prefix=f"fslab-probe-{os.getpid()}-"))
    try:
        plan = boot_plan(
            kernel,
            workdir=workdir,
            rwdir=workdir,
            command=("true",),
            accel="kvm",
            cpus=1,
            possible_cpus=None,
            memory_bytes=PROBE_MEMORY_BYTES,
        )
        console = workdir / "console.log"
        guest = _Guest(vng_argv(plan, vng_binary()), console)
        try:
            guest.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"a probe boot under KVM did not finish in {timeout_s:.0f} s"
        finally:
            code = guest.proc.poll()
            guest.kill()
        if code == 0:
            return None
        return f"a probe boot under KVM failed (exit {code}): {_last_line(console_tail(console))}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class GuestSession:
    """One guest configuration, booted once, running points until closed."""

    def __init__(
        self,
        config: GuestConfig,
        *,
        target_bytes: int = 0,
        progress: Callable[[str], None] | None = None,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
    ) -> None:
        self.config = config
        self.target_bytes = target_bytes
        self.progress = progress or (lambda _text: None)
        self.probe_timeout_s = probe_timeout_s
        self.kernel: Kernel | None = None
        self.accel: AccelChoice | None = None
        self.memory_bytes = 0
        self.boots = 0
        self.boot_s = 0.0
        self.guest_facts: GuestFacts | None = None
        self._guest: _Guest | None = None
        self._workdir: Path | None = None
        self._requests = 0
        self._rwdir = Path()
        self._term = _TermAsInterrupt()

    # ------------------------------------------------------------ life cycle

    def __enter__(self) -> GuestSession:
        self._term.install()
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Resolve, check and boot; GuestError (exit 2) if the guest cannot be had."""
        config = self.config
        self.kernel, self.memory_bytes = check_guest(config, target_bytes=self.target_bytes)
        self.accel = choose_accel(
            config.accel, self.kernel, lambda k: probe_kvm_boot(k, self.probe_timeout_s)
        )
        self.progress(f"guest {self.kernel.release}: {self.accel.accel} ({self.accel.reason})")
        check_cpus(config.cpus, config.possible_cpus, self.accel.accel, self.kernel)
        self._workdir = Path(tempfile.mkdtemp(prefix=f"fslab-guest-{os.getpid()}-"))
        self._boot()

    def close(self) -> None:
        """Stop the guest and remove the shared directory, whatever state they are in."""
        with _signals_held():
            if self._guest is not None:
                self._guest.stop()
                self._guest = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None
            self._term.restore()

    @property
    def running(self) -> bool:
        return self._guest is not None and self._guest.proc.poll() is None

    # ------------------------------------------------------------ booting

    def _boot(self) -> None:
        assert self._workdir is not None and self.accel is not None
        self.boots += 1
        rwdir = self._workdir / f"boot-{self.boots}"
        rwdir.mkdir()
        session_file = rwdir / SESSION_FILE
        write_json_atomic(session_file, {"boot": self.boots, "config": self.config.model_dump()})
        command = (sys.executable, "-m", "fslab.guest.agent", str(session_file))
        assert self.kernel is not None
        plan = boot_plan(
            self.kernel,
            workdir=self._workdir,
            rwdir=rwdir,
            command=command,
            accel=self.accel.accel,
            cpus=self.config.cpus,
            possible_cpus=self.config.possible_cpus,
            memory_bytes=self.memory_bytes,
        )
        console = self._workdir / f"console-{self.boots}.log"
        timeout_s = self.config.boot_timeout_s(self.accel.accel)
        self.progress(
            f"booting {self.kernel.release} with {plan.cpus} vCPU(s)"
            + (f", possible_cpus={plan.possible_cpus}" if plan.possible_cpus else "")
            + f" under {plan.accel.upper()} (at most {timeout_s:.0f} s)"
        )
        start = time.monotonic()
        self._guest = _Guest(vng_argv(plan, vng_binary()), console)
        try:
            verb, argument = self._guest.next_message(start + timeout_s)
        except _GuestGone as gone:
            tail = console_tail(console)
            self._guest.kill()
            self._guest = None
            what = f"did not boot within {timeout_s:.0f} s" if str(gone) == "timeout" else str(gone)
            raise GuestError(
                f"guest {plan.kernel.release} {what} (boot_timeout sets the deadline); "
                f"the console ended with:\n{tail}"
            ) from None
        if verb != "ready":
            tail = console_tail(console)
            self._guest.kill()
            self._guest = None
            raise GuestError(f"fslab's agent failed in the guest: {argument}\n{tail}")
        self._guest.ready = True
        self.boot_s = time.monotonic() - start
        self.guest_facts = GuestFacts(**json.loads((rwdir / argument).read_text()))
        self._rwdir = rwdir
        self.progress(
            f"guest up in {self.boot_s:.1f} s: {self.guest_facts.kernel_release}, "
            f"nr_cpu_ids {self.guest_facts.nr_cpu_ids}, {self.guest_facts.online_cpus} online"
        )

    # ------------------------------------------------------------ points

    def run_point(self, spec: Spec, point: Point) -> PointOutcome:
        """Run one point in the guest; a guest that fails it is rebooted for the next.

        The point's role decides whether the collectors run (fslab.base.roles)."""
        started = utc_now()
        problem = guest_target_problem(spec)
        if problem is not None:
            return self._failed(started, problem, "")
        if not self.running:
            if self._guest is not None:
                self._guest.kill()
                self._guest = None
            try:
                self._boot()
            except GuestError as exc:
                return self._failed(started, "guest did not boot again", str(exc))
        assert self._guest is not None
        self._requests += 1
        name = f"req-{self._requests:06d}.json"
        write_json_atomic(
            self._rwdir / name,
            request_to_json(PointRequest.for_point(spec, point)),
        )
        wait_s = workload_plan.point_timeout_s(spec, point.sweep_dict) + POINT_MARGIN_S
        start = time.monotonic()
        try:
            self._guest.send(f"run {name}")
            while True:
                verb, argument = self._guest.next_message(start + wait_s)
                if verb == "done" and argument == name:
                    break
        except (_GuestGone, OSError) as gone:
            tail = console_tail(self._guest.console_path)
            self._guest.kill()
            self._guest = None
            what = (
                f"did not finish the point within {wait_s:.0f} s; stopped it"
                if str(gone) == "timeout"
                else f"{gone} during the point"
            )
            return self._failed(started, f"guest {what}", tail)
        except BaseException:
            self._guest.kill()  # Ctrl-C mid-point: the guest goes, the caller cleans up
            self._guest = None
            raise
        host_s = time.monotonic() - start
        result = self._rwdir / ("res-" + name.removeprefix("req-"))
        outcome = outcome_from_json(json.loads(result.read_text()))
        guest = self.facts().updated(point_s_host=round(host_s, 3))
        outcome.facts = outcome.facts.updated(guest=guest)
        return outcome

    def facts(self) -> PointGuestFacts:
        """The guest's facts a point records: kernel, command line, CPUs, accelerator."""
        assert self.kernel is not None and self.accel is not None
        guest = asdict(self.guest_facts) if self.guest_facts is not None else {}
        return PointGuestFacts.model_validate(
            {
                **guest,
                **self.kernel.facts(),
                "accel": self.accel.accel,
                "accel_reason": self.accel.reason,
                "cpus": self.config.cpus,
                "possible_cpus": self.config.possible_cpus,
                "memory_bytes_requested": self.memory_bytes,
                "boot": self.boots,
                "boot_s": round(self.boot_s, 2),
            }
        )

    def _failed(self, started: str, error: str, console: str) -> PointOutcome:
        facts = PointFacts(guest=self.facts()) if self.kernel is not None else PointFacts()
        return PointOutcome(
            status="failed",
            error=error,
            stderr=console,
            facts=facts,
            started_at=started,
            ended_at=utc_now(),
        )
