#!/usr/bin/env python3
"""What does a guest cost? The same point on the host and in a KVM guest; TCG boots and points.

1. KVM: /dev/kvm is probed with a short boot. Where KVM works, the same fio
   point (the first report's workload: ext4, 16 KiB random writes + fsync, 2
   jobs) runs on the host and in a KVM guest, alternating which goes first,
   for N pairs (one boot serves all guest runs); prints the ratio of median
   IOPS guest/host with a 95% bootstrap interval. Where KVM does not work, it says so and why.
2. TCG boot time: B boots of the cached 6.1 kernel with 2 vCPUs, split into
   the kernel and init (until fslab's agent starts) and the agent getting
   ready (Python, fslab's imports, the guest's facts); one boot with
   possible_cpus=1728; one of 5.10 when it is cached.
3. Per-point overhead in a TCG guest: the host's round trip for a point minus
   the point's own time inside the guest (request and result files over 9p,
   the protocol), and the whole point's time in the guest vs on the host.

Run as root, under the exclusive machine lock (it boots guests):
  flock -x /work/machine.lock .venv/bin/python bench/guest_overhead.py [--pairs 10] [--boots 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from fslab.analyze.campaign.stats import bootstrap_ratio_ci
from fslab.base.errors import UsageError
from fslab.base.hostfacts import collect_host_facts
from fslab.guest.kernels import resolve_kernel
from fslab.guest.probe import kvm_device_problem
from fslab.guest.session import GuestSession, probe_kvm_boot
from fslab.measure.point import RunOptions, run_point
from fslab.spec.load import load_spec
from fslab.spec.model import Spec
from fslab.spec.points import Point, expand_points
from fslab.spec.vm import GuestConfig


def the_point(runtime_s: float) -> tuple[Spec, Point]:
    """The first report's workload (ext4 default journal) at 2 jobs, on a small image."""
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            "sweep.numjobs=[2]",
            "run.adaptive=false",  # the grid's points (the preset scans)
            f'run.runtime="{runtime_s:g}s"',
            'run.ramp="0s"',
            'target.size="512MiB"',
        ],
    )
    return spec, next(p for p in expand_points(spec) if p.filesystem.label == "ext4-default")


def on_host(spec: Spec, point: Point) -> tuple[float, float]:
    """(IOPS, seconds) of one point on the host."""
    start = time.monotonic()
    outcome = run_point(
        spec,
        point,
        options=RunOptions(collect=False),
        host=collect_host_facts(),
        formatted_before=False,
    )
    if outcome.status != "ok":
        raise SystemExit(f"host point failed: {outcome.error}")
    return outcome.metrics["fio.write.iops"], time.monotonic() - start


def kvm_section(pairs: int, runtime_s: float) -> None:
    print("== KVM: the same point on the host and in a KVM guest")
    kernel = resolve_kernel("6.1")
    problem = kvm_device_problem()
    start = time.monotonic()
    if problem is None:
        problem = probe_kvm_boot(kernel)
    print(f"probe ({time.monotonic() - start:.1f} s): ", end="")
    if problem is not None:
        print(f"KVM unavailable here: {problem}")
        print("host vs KVM guest: not measured (guests on this host run under TCG)")
        return
    print("KVM works")
    spec, point = the_point(runtime_s)
    host_iops: list[float] = []
    guest_iops: list[float] = []
    config = GuestConfig(kernel="6.1", cpus=2, accel="kvm")
    with GuestSession(config, target_bytes=spec.target.size_bytes) as guest:
        for i in range(pairs):
            for side in ("host", "guest") if i % 2 == 0 else ("guest", "host"):
                if side == "host":
                    host_iops.append(on_host(spec, point)[0])
                else:
                    outcome = guest.run_point(spec, point, collect=False)
                    if outcome.status != "ok":
                        raise SystemExit(f"guest point failed: {outcome.error}")
                    guest_iops.append(outcome.metrics["fio.write.iops"])
    ratio = statistics.median(guest_iops) / statistics.median(host_iops)
    low, high = bootstrap_ratio_ci(host_iops, guest_iops)
    print(f"pairs {pairs}, runtime {runtime_s:g} s, fio randwrite 16k fsync, 2 jobs, ext4")
    print(f"host  median IOPS {statistics.median(host_iops):9.0f}")
    print(f"guest median IOPS {statistics.median(guest_iops):9.0f}")
    print(f"guest/host ratio of medians {ratio:.3f}  (95% CI {low:.3f} .. {high:.3f})")


def boot_once(config: GuestConfig) -> tuple[float, float, float]:
    """(host-side boot seconds, kernel+init seconds, agent-ready seconds) of one boot."""
    with GuestSession(config) as guest:
        facts = guest.guest_facts
        assert facts is not None
        return guest.boot_s, facts.agent_started_uptime_s, facts.agent_ready_uptime_s


def boot_section(boots: int) -> None:
    print("\n== TCG boot time (host: from starting vng to the agent's ready message)")
    cases = [("6.1, 2 vCPUs", GuestConfig(kernel="6.1", accel="tcg"), boots)]
    cases.append(
        (
            "6.1, 2 vCPUs, possible_cpus=1728",
            GuestConfig(kernel="6.1", possible_cpus=1728, accel="tcg"),
            1,
        )
    )
    try:
        resolve_kernel("5.10")
        cases.append(("5.10, 2 vCPUs", GuestConfig(kernel="5.10", accel="tcg"), 1))
    except UsageError:
        print("(5.10 not cached: `fslab kernels fetch 5.10` adds it to this table)")
    print(f"{'guest':36} {'boots':>5} {'boot s':>8} {'kernel+init s':>14} {'agent ready s':>14}")
    for label, config, count in cases:
        kernel = resolve_kernel(config.kernel)
        runs = [boot_once(config) for _ in range(count)]
        boot, init, ready = (statistics.median(r[i] for r in runs) for i in range(3))
        spread = (
            f" ({min(r[0] for r in runs):.1f}-{max(r[0] for r in runs):.1f})" if count > 1 else ""
        )
        name = f"{label} {kernel.release}"
        print(f"{name:36} {count:5d} {boot:8.1f}{spread} {init:14.1f} {ready:14.1f}")


def point_section(points: int, runtime_s: float) -> None:
    print("\n== Per-point overhead in a TCG guest (one boot, the same point repeated)")
    spec, point = the_point(runtime_s)
    round_trips, in_guest = [], []
    with GuestSession(
        GuestConfig(kernel="6.1", accel="tcg"), target_bytes=spec.target.size_bytes
    ) as guest:
        for _ in range(points):
            outcome = guest.run_point(spec, point, collect=False)
            if outcome.status != "ok":
                raise SystemExit(f"guest point failed: {outcome.error}")
            guest_facts = outcome.facts.guest
            round_trips.append((guest_facts.point_s_host or 0.0) if guest_facts else 0.0)
            in_guest.append(outcome.facts.guest_point_s or 0.0)
    host_s = [on_host(spec, point)[1] for _ in range(max(3, points // 2))]
    overhead = [r - g for r, g in zip(round_trips, in_guest, strict=True)]
    print(f"points {points}, fio runtime {runtime_s:g} s")
    print(f"host round trip per point   median {statistics.median(round_trips):6.2f} s")
    print(f"point inside the guest      median {statistics.median(in_guest):6.2f} s")
    print(
        f"protocol overhead           median {statistics.median(overhead):6.3f} s "
        f"(min {min(overhead):.3f}, max {max(overhead):.3f})"
    )
    print(f"same point on the host      median {statistics.median(host_s):6.2f} s")
    slowdown = statistics.median(in_guest) / statistics.median(host_s)
    print(f"whole point guest/host      {slowdown:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="host/KVM pairs (where KVM works)")
    parser.add_argument("--boots", type=int, default=3, help="TCG boots of the 2-vCPU 6.1 guest")
    parser.add_argument("--points", type=int, default=6, help="points for the per-point overhead")
    parser.add_argument("--runtime", type=float, default=5.0, help="fio runtime per point, s")
    args = parser.parse_args()
    started = time.monotonic()
    kvm_section(args.pairs, args.runtime)
    boot_section(args.boots)
    point_section(args.points, args.runtime)
    print(f"\n(bench took {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
