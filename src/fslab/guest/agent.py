"""The in-guest side: `python -m fslab.guest.agent <rwdir>/session.json`.

virtme-ng starts it as the guest's one command. It readies the guest (the
loop module, /dev/shm as large as the guest's RAM), reports the guest's facts,
then runs each requested point with the runner's own point code, exactly as
on the host, and writes the outcome as JSON for the host to store. Its setup
mounts the cgroup-v1 blkio hierarchy, so `target.limits` throttle the guest's
loop device as they do the host's (fslab.target.limits). It exits
on `quit` or when its input ends (the host is gone), which powers the guest off.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TextIO

from fslab.base.hostfacts import (
    HostFacts,
    collect_host_facts,
    memory_total_bytes,
    nr_cpu_ids,
    online_cpu_count,
)
from fslab.base.proc import run
from fslab.guest.protocol import (
    FACTS_FILE,
    MARKER,
    GuestFacts,
    guest_target_problem,
    outcome_to_json,
    request_from_json,
    write_json_atomic,
)
from fslab.measure.point import RunOptions, run_point
from fslab.store.db import PointOutcome, utc_now
from fslab.target.limits import mount_blkio

SHM = "/dev/shm"


def result_name(request_name: str) -> str:
    return "res-" + request_name.removeprefix("req-")


def prepare_guest() -> list[str]:
    """Load the loop driver, let /dev/shm hold an image as large as RAM, mount the blkio
    hierarchy (for target.limits); say what failed."""
    notes = []
    for argv in (["modprobe", "loop"], ["mount", "-o", "remount,size=100%", SHM]):
        record = run(argv, check=False, timeout_s=120)
        if record.returncode != 0:
            notes.append(f"{' '.join(argv)}: exit {record.returncode}: {record.stderr.strip()}")
    blkio_problem = mount_blkio()
    return notes + ([blkio_problem] if blkio_problem else [])


def _uptime_s() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def _started_uptime_s() -> float:
    """When this process started, in seconds since the guest's kernel booted."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _size_bytes(mountpoint: str) -> int:
    stat = os.statvfs(mountpoint)
    return stat.f_blocks * stat.f_frsize


def read_guest_facts(notes: list[str]) -> GuestFacts:
    return GuestFacts(
        kernel_release=os.uname().release,
        kernel_cmdline=Path("/proc/cmdline").read_text().strip(),
        nr_cpu_ids=nr_cpu_ids(),
        online_cpus=online_cpu_count(),
        memory_bytes=memory_total_bytes(),
        shm_bytes=_size_bytes(SHM),
        agent_started_uptime_s=round(_started_uptime_s(), 2),
        agent_ready_uptime_s=round(_uptime_s(), 2),
        setup_notes=notes,
    )


def run_request(path: Path, host: HostFacts) -> PointOutcome:
    """One point through the runner's point code; any error becomes a failed point."""
    started = utc_now()
    start = time.monotonic()
    try:
        request = request_from_json(json.loads(path.read_text()))
        spec, point = request.spec_and_point()
        problem = guest_target_problem(spec)
        if problem is not None:
            outcome = PointOutcome(status="failed", error=problem)
        else:
            outcome = run_point(
                spec,
                point,
                options=RunOptions(),
                host=host,
                formatted_before=False,
            )
    except Exception as exc:  # a bug or a bad request fails this point, not the guest
        outcome = PointOutcome(
            status="failed",
            error=f"fslab agent: {type(exc).__name__}: {exc}",
            stderr=traceback.format_exc(),
            started_at=started,
            ended_at=utc_now(),
        )
    outcome.facts = outcome.facts.updated(guest_point_s=round(time.monotonic() - start, 3))
    return outcome


def serve(rwdir: Path, commands: TextIO, protocol: TextIO) -> None:
    def say(*words: str) -> None:
        protocol.write(" ".join((MARKER, *words)) + "\n")
        protocol.flush()

    notes = prepare_guest()
    host = collect_host_facts()  # the guest's own: its nr_cpu_ids sets ext4's watermark
    facts = read_guest_facts(notes)
    write_json_atomic(rwdir / FACTS_FILE, dataclasses.asdict(facts))
    say("ready", FACTS_FILE)
    for line in commands:
        verb, _, argument = line.strip().partition(" ")
        if verb == "quit":
            return
        if verb == "run" and argument and "/" not in argument:
            outcome = run_request(rwdir / argument, host)
            write_json_atomic(rwdir / result_name(argument), outcome_to_json(outcome))
            say("done", argument)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m fslab.guest.agent RWDIR/session.json\n")
        return 2
    # stdout is the protocol channel: keep it for ourselves, send strays to the console
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    try:
        serve(Path(args[0]).parent, sys.stdin, protocol)
    except Exception as exc:
        protocol.write(f"{MARKER} error {type(exc).__name__}: {exc}\n")
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
