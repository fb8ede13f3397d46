"""Ctrl-C in a test that runs fslab: the child gets to release its mount and loop device.

With subprocess.run the child was killed a quarter of a second after the interrupt and
its mount stayed; tests/cli.py hands it SIGINT and waits.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.pid_leaks import owned_by, wait_released
from tests.tiny_spec import tiny_spec

from fslab.target.guard import read_mountinfo
from fslab.target.leftovers import mount_dir_owner_pid

pytestmark = [requires_root, pytest.mark.root]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _interrupt_once_mounted(children: list[int]) -> None:
    """SIGINT this process (as Ctrl-C would) once a child of it holds an fslab mount."""
    me = os.getpid()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for entry in read_mountinfo():
            owner = mount_dir_owner_pid(entry.mount_point)
            if owner is not None and _parent(owner) == me:
                children.append(owner)
                os.kill(me, signal.SIGINT)
                return
        time.sleep(0.05)


def test_ctrl_c_lets_the_fslab_child_release_what_it_made(tmp_path: Path, no_leaks) -> None:
    spec = tmp_path / "t.toml"
    spec.write_text(tiny_spec("interrupted", numjobs=(1, 2), repeat=3).replace("1s", "5s"))
    children: list[int] = []
    threading.Thread(target=_interrupt_once_mounted, args=(children,), daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        cli.fslab("run", str(spec), "--db", str(tmp_path / "r.db"), "--no-collect", timeout=300)
    (child,) = children
    assert _parent(child) is None, "the child has exited"
    left = wait_released([child], timeout_s=1.0)
    assert left.empty(), f"the interrupted fslab left {left}"
    assert owned_by([child]).empty()
