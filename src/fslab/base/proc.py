"""Running external commands: never through a shell, always recorded.

Every command fslab runs against the kernel or a tool goes through `run` so the
exact argv can be stored with the point and replayed by hand.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from fslab.base.errors import ToolError


@dataclass
class CommandRecord:
    """One command as it ran: argv, exit status, output and wall time."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def shell_line(self) -> str:
        """The command quoted for pasting into a shell."""
        return shlex.join(self.argv)


@dataclass
class CommandLog:
    """The commands run for one point, in order, for reproduction by hand."""

    records: list[CommandRecord] = field(default_factory=list)

    def add(self, record: CommandRecord) -> CommandRecord:
        self.records.append(record)
        return record

    def shell_lines(self) -> list[str]:
        return [r.shell_line for r in self.records]


def run(
    argv: list[str],
    *,
    check: bool = True,
    timeout_s: float | None = None,
    log: CommandLog | None = None,
    input_text: str | None = None,
    cwd: str | None = None,
) -> CommandRecord:
    """Run argv, capture output; raise ToolError on failure when `check`."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            input=input_text,
            check=False,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise ToolError(f"{argv[0]}: not found (is it installed? try `fslab doctor`)") from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{shlex.join(argv)}: timed out after {timeout_s:.0f} s") from exc
    record = CommandRecord(
        argv=list(argv),
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        seconds=time.monotonic() - start,
    )
    if log is not None:
        log.add(record)
    if check and proc.returncode != 0:
        raise ToolError(
            f"{shlex.join(argv)} failed with exit code {proc.returncode}: "
            f"{proc.stderr.strip()[-2000:]}",
            stderr=proc.stderr,
        )
    return record


def run_interruptible(
    argv: list[str],
    *,
    timeout_s: float,
    log: CommandLog | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> CommandRecord:
    """Run a long command (fio, dd) in its own process group.

    On timeout the group is killed and the record says `timed_out`; on any
    exception in the waiting thread (Ctrl-C, SIGTERM turned into an exception)
    the group is terminated, reaped, and the exception re-raised, so no
    workload process is left holding files open on a mount fslab must release.
    """
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ToolError(f"{argv[0]}: not found (is it installed? try `fslab doctor`)") from exc
    timed_out = False
    try:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_process_group(proc)
            stdout, stderr = proc.communicate()
    except BaseException:
        stop_process_group(proc)
        raise
    record = CommandRecord(
        argv=list(argv),
        returncode=proc.returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )
    if log is not None:
        log.add(record)
    return record


def stop_process_group(
    proc: subprocess.Popen[str] | subprocess.Popen[bytes], grace_s: float = 10.0
) -> None:
    """SIGTERM the process group, then SIGKILL it if it outlives the grace period."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            # a stopped (hung) process acts on SIGTERM only once it is continued
            os.killpg(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            return
        try:
            proc.communicate(timeout=wait_s)  # drain pipes so the child can exit
            return
        except subprocess.TimeoutExpired:
            continue


WORKLOAD_MARK = "FSLAB_WORKLOAD"
"""An environment variable fslab sets, to the scratch mountpoint, for a workload whose
programs may have any name (a spec's command): it and all it starts inherit it, so a
cleanup after a killed fslab knows them without knowing their names."""


def marked_workload(pid: int, mountpoint: str) -> bool:
    """True if the process carries WORKLOAD_MARK set to this mountpoint or below it."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    mark = f"{WORKLOAD_MARK}=".encode()
    prefix = mountpoint.rstrip("/") + "/"
    for entry in environ.split(b"\0"):
        if entry.startswith(mark):
            value = entry[len(mark) :].decode(errors="replace")
            return value == mountpoint or value.startswith(prefix)
    return False


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists and is not a zombie."""
    try:
        stat_text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        return True  # exists but unreadable: assume alive, never reclaim
    state = stat_text.rsplit(")", 1)[-1].split()[0:1]
    return state != ["Z"]


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds; 0.0 if unreadable.

    Also right for a zombie: the kernel keeps its times until it is reaped, so
    a collector reads its helper's cost before waiting for it.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0
