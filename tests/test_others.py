"""collect.others: the CPU other processes took while a run ran. Parsed on lines captured
from this machine's /proc (tests/data/others/capture.sh); measured on real processes."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from fslab.analyze.noise.drift import load_drift
from fslab.collect.others import others_ticks, parse_pid_stat, snapshot
from fslab.store.facts import PointFacts

DATA = Path(__file__).parent / "data" / "others"
BUSY = "while :; do :; done"


def test_a_stat_line_names_the_process_its_parent_and_its_cpu() -> None:
    user = parse_pid_stat((DATA / "user.stat").read_text())
    assert user is not None and not user.kernel_thread
    assert (user.pid, user.ppid, user.start_ticks) == (3886, 3885, 1089115)
    kthreadd = parse_pid_stat((DATA / "kthreadd.stat").read_text())
    assert kthreadd is not None and kthreadd.kernel_thread and kthreadd.pid == 2
    odd = parse_pid_stat((DATA / "odd_comm.stat").read_text())  # comm "a (b) c"
    assert odd is not None and (odd.pid, odd.ppid) == (3888, 3885) and not odd.kernel_thread
    assert parse_pid_stat("") is None and parse_pid_stat("12 (x) S 1") is None


def _cpu(before, after, pid: int) -> int:
    return after[pid].cpu_ticks - before[pid].cpu_ticks


def test_a_neighbour_counts_and_our_own_children_do_not() -> None:
    """A busy loop started outside this process's tree (its parent shell exits, so it is
    re-parented) counts as another process's CPU; one this process started does not."""
    detached = subprocess.run(
        ["sh", "-c", f"sh -c '{BUSY}' >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    neighbour = int(detached.stdout)
    child = subprocess.Popen(["sh", "-c", BUSY])
    try:
        time.sleep(0.2)
        before = snapshot()
        time.sleep(1.0)
        after = snapshot()
    finally:
        for pid in (neighbour, child.pid):
            os.kill(pid, 9)
        child.wait()
    ours, theirs = _cpu(before, after, child.pid), _cpu(before, after, neighbour)
    assert ours >= 30 and theirs >= 30  # ticks of 10 ms over a second, on a shared 2-CPU box
    counted = others_ticks(before, after, os.getpid())
    assert counted >= theirs
    nothing_ours = others_ticks(before, after, own_pid=-1)  # this process and its child too
    assert nothing_ours - counted >= ours


def test_a_neighbour_started_during_the_run_counts_whole() -> None:
    before = snapshot()
    late = subprocess.run(
        ["sh", "-c", f"sh -c '{BUSY}' >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(late.stdout)
    try:
        time.sleep(0.5)
        after = snapshot()
    finally:
        os.kill(pid, 9)
    assert pid not in before and after[pid].cpu_ticks >= 10
    assert others_ticks(before, after, os.getpid()) >= after[pid].cpu_ticks


def _runs(*others_pct: float) -> list[PointFacts]:
    return [
        PointFacts.model_validate({"host_cpu": {"steal_pct": 0.1, "others_cpu_pct": pct}})
        for pct in others_pct
    ]


def test_sides_whose_runs_shared_the_machine_differently_are_warned() -> None:
    quiet = _runs(0.2, 0.4, 30.0)
    assert load_drift(quiet, _runs(1.0, 3.0, 4.0)) == []  # medians 0.4 vs 3.0
    (found,) = load_drift(quiet, _runs(40.0, 38.0, 0.5))  # 0.4 vs 38.0
    assert (found.fact, found.baseline, found.candidate) == ("others_cpu_pct", "0.4", "38.0")
    assert found.describe().startswith(
        "drift: CPU time other processes took differs: 0.4% of the CPUs in the baseline's "
        "runs vs 38.0% in the candidate's (median): a busy machine slows"
    )
