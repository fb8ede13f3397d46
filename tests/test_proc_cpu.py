"""process_cpu_s: a helper process's CPU time, read live or from its zombie."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from fslab.base.proc import process_cpu_s

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_a_zombie_keeps_its_cpu_time_until_reaped():
    proc = subprocess.Popen([sys.executable, "-c", BURN])
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    assert 0.25 <= process_cpu_s(proc.pid) < 2.0
    proc.wait()
    assert process_cpu_s(proc.pid) == 0.0  # gone: unreadable is 0.0, not an error


def test_a_live_process_counts_all_its_threads():
    before = process_cpu_s(os.getpid())
    t = time.process_time()
    while time.process_time() - t < 0.2:
        pass
    assert process_cpu_s(os.getpid()) - before >= 0.15
