#!/usr/bin/env python3
"""What makes a fresh machine's first runs slow: memory the hypervisor has not backed.

fslab builds every point on a new RAM image in /dev/shm. On a VM whose freed
memory goes back to the host (virtio-balloon free page reporting; some also
initialise their memory lazily), writing memory that was handed back costs a
host page fault per page, and a fresh machine has none of it backed yet.

Three measurements, printed:

0. With --first-touch SIZE: SIZE written into /dev/shm 1 GiB at a time, then,
   freed, written again: each GiB's rate both times. Memory the guest has
   never used (on a fresh machine: all of it) shows in the first pass only.
   It touches that memory for good, so it measures each machine once.
1. Pairs, alternating which goes first: write SIZE into /dev/shm right after
   the same memory was freed (still backed), against after waiting WAIT
   seconds (handed back by then, where the VM reports free pages). The ratio
   of their times per pair, its median and a 95% interval.
2. The recorded first `make demo` of fresh machines (tests/data/coldstart):
   each configuration's first run against its later runs at the same point.

    bench/warmup_cost.py [--first-touch 18GiB] [--pairs 10] [--size 2GiB] [--wait 15]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np

from fslab.base.units import parse_size_bytes

SHM = Path("/dev/shm")
REPORTED = Path("/sys/module/page_reporting/parameters/reported_kib")
CHUNK = 1 << 20
COLDSTART = Path(__file__).resolve().parent.parent / "tests" / "data" / "coldstart"


def write_seconds(path: Path, size: int) -> float:
    block = b"\xa5" * CHUNK
    started = time.monotonic()
    with path.open("wb", buffering=0) as handle:
        for _ in range(size // CHUNK):
            handle.write(block)
    return time.monotonic() - started


def first_touch(size: int) -> list[tuple[float, float]]:
    """GiB/s of each GiB written twice: first into whatever memory the kernel hands out,
    then, freed, into the same amount again."""
    path = SHM / f"fslab-first-touch-{os.getpid()}"
    rates: list[list[float]] = [[], []]
    block = b"\x5a" * CHUNK
    try:
        for rate in rates:
            with path.open("wb", buffering=0) as handle:
                for _ in range(size // 1024**3):
                    started = time.monotonic()
                    for _ in range(1024**3 // CHUNK):
                        handle.write(block)
                    rate.append(1.0 / (time.monotonic() - started))
            path.unlink()
    finally:
        path.unlink(missing_ok=True)
    return list(zip(rates[0], rates[1], strict=True))


def managed_pages() -> int:
    """Pages the kernel manages now (grows as lazily initialised memory is first used)."""
    text = Path("/proc/zoneinfo").read_text()
    return sum(
        int(line.split()[1]) for line in text.splitlines() if line.strip().startswith("managed")
    )


def reported_kib() -> int | None:
    return int(REPORTED.read_text()) if REPORTED.exists() else None


def one(size: int, wait_s: float) -> float:
    """Seconds to write `size` into memory freed `wait_s` ago."""
    path = SHM / f"fslab-warmup-bench-{os.getpid()}"
    try:
        write_seconds(path, size)
        path.unlink()
        time.sleep(wait_s)
        return write_seconds(path, size)
    finally:
        path.unlink(missing_ok=True)


def interval(log_ratios: list[float]) -> tuple[float, float]:
    rng = np.random.default_rng(20261203)
    x = np.asarray(log_ratios)
    boots = np.median(rng.choice(x, size=(10000, len(x))), axis=1)
    return math.exp(float(np.percentile(boots, 2.5))), math.exp(float(np.percentile(boots, 97.5)))


def cold_starts() -> list[str]:
    lines = []
    for case in sorted(COLDSTART.glob("coldstart-*.json")):
        data = json.loads(case.read_text())
        runs: dict[tuple[str, str], list[tuple[int, float]]] = {}
        for p in data["points"]:
            value = p["metrics"].get("fio.write.iops")
            if p["status"] == "ok" and value and p.get("role") in ("clean", "inline"):
                key = (p["config"], json.dumps(p["sweep"]))
                runs.setdefault(key, []).append((p["seq"], value))
        firsts = sorted(((min(r)[0], k, r) for k, r in runs.items()), key=lambda t: t[0])
        for _, (config, sweep), values in firsts:
            values.sort()
            first, later = values[0][1], [v for _, v in values[1:]]
            if later:
                lines.append(
                    f"  {case.stem} {config} {sweep}: first run {first:.0f}, later median "
                    f"{statistics.median(later):.0f} (x{first / statistics.median(later):.2f})"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--size", default="2GiB")
    parser.add_argument("--wait", type=float, default=15.0, help="seconds before rewriting")
    parser.add_argument("--first-touch", metavar="SIZE", help="measure 0. (once per machine)")
    args = parser.parse_args()
    size = parse_size_bytes(args.size)
    gib = size / 1024**3
    print(f"/proc/cmdline: {Path('/proc/cmdline').read_text().split(' -- ')[0].strip()}")
    if args.first_touch:
        pages = managed_pages()
        for index, (first, again) in enumerate(first_touch(parse_size_bytes(args.first_touch))):
            print(
                f"GiB {index + 1:>2}: first {first:.2f} GiB/s, again {again:.2f} GiB/s "
                f"(x{again / first:.1f})"
            )
        grown = (managed_pages() - pages) * 4096 / 1024**3
        print(f"the kernel initialised {grown:.1f} GiB of memory it had never used")
    before = reported_kib()
    log_ratios = []
    for pair in range(args.pairs):
        order = ("backed", "returned") if pair % 2 == 0 else ("returned", "backed")
        seconds = {name: one(size, 0.0 if name == "backed" else args.wait) for name in order}
        ratio = seconds["returned"] / seconds["backed"]
        log_ratios.append(math.log(ratio))
        print(
            f"pair {pair + 1:>2} ({order[0]} first): backed {gib / seconds['backed']:.2f} GiB/s, "
            f"after {args.wait:g} s {gib / seconds['returned']:.2f} GiB/s, x{ratio:.2f}",
            flush=True,
        )
    if log_ratios:
        low, high = interval(log_ratios)
        median = math.exp(statistics.median(log_ratios))
        print(
            f"writing memory freed {args.wait:g} s earlier takes x{median:.2f} the time of "
            f"writing memory just freed (95% interval {low:.2f}..{high:.2f}, {args.pairs} pairs)"
        )
    after = reported_kib()
    if before is not None and after is not None:
        print(f"free page reporting handed {(after - before) / 1024**2:.1f} GiB back to the host")
    else:
        print("no free page reporting here: freed memory stays backed")
    lines = cold_starts()
    if lines:
        print("recorded cold starts (first make demo of a fresh machine), write IOPS:")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
