"""Run fslab from a test so that Ctrl-C or a timeout still lets it release what it made.

subprocess.run kills its child a quarter of a second after a KeyboardInterrupt or at
its timeout, before fslab can unmount and detach: a make test stopped with Ctrl-C left
a loop device and a mount behind. Here the child gets SIGINT, fslab's own Ctrl-C path,
and time to clean up; only a second Ctrl-C or the grace running out kills it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

GRACE_S = 60.0  # fslab's release of a guest, mounts and loop devices fits well inside


def run(
    argv: Sequence[str],
    *,
    input: str | None = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess[str]:
    """subprocess.run's contract (text mode), with an interrupt-safe stop."""
    popen.setdefault("text", True)
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    with subprocess.Popen(list(argv), **popen) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:
            stop(proc)
            raise
    done = subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def fslab(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`python -m fslab ARGS` with output captured, as the CLI tests read it."""
    kwargs.setdefault("capture_output", True)
    return run([sys.executable, "-m", "fslab", *args], **kwargs)


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT the child (the terminal may already have), wait for it, kill it last."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=GRACE_S)
    except BaseException:  # the grace ran out, or a second Ctrl-C: the user insists
        proc.kill()
        proc.wait()
