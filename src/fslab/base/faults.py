"""Fault injection at the point life-cycle checkpoints (for the reliability harness).

The runner calls `begin_point(seq)` before each point and `checkpoint(stage)`
at each stage. Unless the environment variable FSLAB_FAULTS plans a fault,
both do nothing. A plan is a JSON object, or a list of them:

    {"stage": "workload", "action": "sigkill-child:fio", "point_seq": 3, "delay_s": 0.5}

Actions:
  sigint-self, sigterm-self, sigkill-self   signal fslab itself
  sigkill-child:NAME, stop-child:NAME       SIGKILL / SIGSTOP fslab's descendants whose
                                            command name starts with NAME (fio, mkfs, perf)
  busy-mount                                start a process holding a file open (and its
                                            working directory) on the point's mount

`point_seq` (default: the first point to reach the stage) picks the point;
each fault fires at most once per process. `delay_s` > 0 fires from a timer
thread, so the fault lands *during* the stage that follows (the workload)
rather than at its edge. A child action keeps looking for its target for
`window_s` seconds (mkfs may not have started yet when its timer fires);
`hold_s` is how long the busy-mount holder keeps the mount busy.

If FSLAB_FAULTS_LOG names a file, every fault appends one JSON line there
saying whether it fired and at what, so a harness can tell a fault that
landed from one that found nothing to hit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fslab.base.errors import UsageError

STAGES = (
    "prepare",
    "mkfs",
    "mount",
    "fill",
    "collectors_start",
    "workload",
    "collectors_stop",
    "umount",
    "release",
)
SELF_SIGNALS = {
    "sigint-self": signal.SIGINT,
    "sigterm-self": signal.SIGTERM,
    "sigkill-self": signal.SIGKILL,
}
CHILD_SIGNALS = {"sigkill-child": signal.SIGKILL, "stop-child": signal.SIGSTOP}
MOUNT_BASE = "/run/fslab"
_POLL_S = 0.002
_holders: list[subprocess.Popen[bytes]] = []  # kept so they are reaped, not garbage-collected


@dataclass(frozen=True)
class Fault:
    """One planned fault."""

    stage: str
    action: str
    point_seq: int | None = None
    delay_s: float = 0.0
    window_s: float = 10.0
    hold_s: float = 8.0

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise UsageError(f"FSLAB_FAULTS: unknown stage {self.stage!r}; one of {STAGES}")
        kind, _, target = self.action.partition(":")
        known = self.action in SELF_SIGNALS or self.action == "busy-mount"
        if not known and not (kind in CHILD_SIGNALS and target):
            raise UsageError(
                f"FSLAB_FAULTS: unknown action {self.action!r}; one of "
                f"{', '.join(SELF_SIGNALS)}, busy-mount, sigkill-child:NAME, stop-child:NAME"
            )
        if self.delay_s < 0 or self.window_s < 0 or self.hold_s < 0:
            raise UsageError("FSLAB_FAULTS: delay_s, window_s and hold_s must not be negative")


def parse_plan(text: str) -> list[Fault]:
    """The faults in a FSLAB_FAULTS value (a JSON object or a list of objects)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"FSLAB_FAULTS is not JSON: {exc}") from None
    items = data if isinstance(data, list) else [data]
    faults = []
    for item in items:
        if not isinstance(item, dict):
            raise UsageError(f"FSLAB_FAULTS: each fault is a JSON object, not {item!r}")
        try:
            faults.append(Fault(**item))
        except TypeError as exc:
            raise UsageError(f"FSLAB_FAULTS: {exc}") from None
    return faults


class _Injector:
    """The plan of this process, which faults already fired, and the current point."""

    def __init__(self, plan_text: str) -> None:
        self.plan_text = plan_text
        self.faults = parse_plan(plan_text)
        self.used: set[int] = set()
        self.point_seq: int | None = None

    def due(self, stage: str) -> list[Fault]:
        found = []
        for index, fault in enumerate(self.faults):
            if index in self.used or fault.stage != stage:
                continue
            if fault.point_seq is not None and fault.point_seq != self.point_seq:
                continue
            self.used.add(index)
            found.append(fault)
        return found


_injector: _Injector | None = None


def _current() -> _Injector | None:
    global _injector
    text = os.environ.get("FSLAB_FAULTS", "")
    if not text:
        return None
    if _injector is None or _injector.plan_text != text:
        _injector = _Injector(text)
    return _injector


def begin_point(seq: int) -> None:
    """Tell the injector which point the following checkpoints belong to."""
    injector = _current()
    if injector is not None:
        injector.point_seq = seq


def checkpoint(stage: str) -> None:
    """Inject the fault planned for this stage, if any."""
    injector = _current()
    if injector is None:
        return
    for fault in injector.due(stage):
        seq = injector.point_seq
        # a child action waits for its target, which the main thread has yet to start
        if fault.delay_s > 0 or fault.action.partition(":")[0] in CHILD_SIGNALS:
            timer = threading.Timer(fault.delay_s, _fire, args=(fault, seq))
            timer.daemon = True
            timer.start()
        else:
            _fire(fault, seq)


# ------------------------------------------------------------------ actions


def _fire(fault: Fault, seq: int | None) -> None:
    kind, _, target = fault.action.partition(":")
    if fault.action in SELF_SIGNALS:
        _log(fault, seq, fired=True, detail=f"pid {os.getpid()}")
        os.kill(os.getpid(), SELF_SIGNALS[fault.action])
    elif fault.action == "busy-mount":
        _hold_mount(fault, seq)
    else:
        _signal_children(fault, seq, target, CHILD_SIGNALS[kind])


def _signal_children(fault: Fault, seq: int | None, name: str, sig: int) -> None:
    """Signal every descendant called `name*`, waiting up to window_s for one to appear."""
    deadline = time.monotonic() + fault.window_s
    while True:
        victims = [pid for pid, comm in descendants(os.getpid()) if comm.startswith(name)]
        hit = []
        for pid in victims:
            try:
                os.kill(pid, sig)
                hit.append(pid)
            except ProcessLookupError:
                continue
        if hit:
            _log(fault, seq, fired=True, detail=f"{signal.Signals(sig).name} {name} pids {hit}")
            return
        if time.monotonic() >= deadline:
            _log(fault, seq, fired=False, detail=f"no {name} process within {fault.window_s} s")
            return
        time.sleep(_POLL_S)


def descendants(root_pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of every live descendant of root_pid."""
    children: dict[int, list[int]] = {}
    comms: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        pid, ppid = int(entry.name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        comms[pid] = comm
    found: list[tuple[int, str]] = []
    stack = list(children.get(root_pid, []))
    while stack:
        pid = stack.pop()
        found.append((pid, comms[pid]))
        stack.extend(children.get(pid, []))
    return found


def own_mountpoints(base: str = MOUNT_BASE) -> list[str]:
    """This process's mount points (fslab names them mnt-<pid>-<hex>)."""
    prefix = f"mnt-{os.getpid()}-"
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    points = [line.split()[4] for line in mounts]
    return [
        p for p in points if os.path.dirname(p) == base and os.path.basename(p).startswith(prefix)
    ]


def _hold_mount(fault: Fault, seq: int | None) -> None:
    """Start a process whose cwd and stdout are on the mount: umount then finds it busy.

    The file is opened here and handed over, and Popen returns only after the
    child's chdir and exec succeeded, so the mount is busy once this returns.
    """
    mountpoints = own_mountpoints()
    if not mountpoints:
        _log(fault, seq, fired=False, detail="no mount of this process to hold")
        return
    mountpoint = mountpoints[-1]
    try:
        with open(os.path.join(mountpoint, "fslab-fault-holder"), "w") as held:
            holder = subprocess.Popen(
                ["sleep", f"{fault.hold_s:g}"],
                cwd=mountpoint,
                stdin=subprocess.DEVNULL,
                stdout=held,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
    except OSError as exc:
        _log(fault, seq, fired=False, detail=f"could not hold {mountpoint}: {exc}")
        return
    _holders.append(holder)
    _log(fault, seq, fired=True, detail=f"pid {holder.pid} holds {mountpoint} {fault.hold_s:g} s")


def _log(fault: Fault, seq: int | None, *, fired: bool, detail: str) -> None:
    path = os.environ.get("FSLAB_FAULTS_LOG")
    if not path:
        return
    record: dict[str, Any] = {**asdict(fault), "seq": seq, "fired": fired, "detail": detail}
    record["time"] = time.time()
    with open(path, "a") as log:  # one short write per line: atomic enough for O_APPEND
        log.write(json.dumps(record) + "\n")
        log.flush()
        os.fsync(log.fileno())
