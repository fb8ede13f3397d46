"""How fast `perf script` output folds: samples per second and MB per second.

    .venv/bin/python bench/fold_speed.py [perf-script.txt]
    .venv/bin/python bench/fold_speed.py --record-seconds 60 --freq 10000

With a file, folds it. Without one (root needed), it records a real workload
first: fio buffered 16 KiB random writes with fsync on ext4 over a loop device
in /dev/shm, all CPUs sampled at --freq Hz for --record-seconds (60 s at
10 kHz gives about a million samples on 2 CPUs), then `perf script` with the
collector's fields into /dev/shm/fslab-bench-perf-script.txt (kept, so the
next run can reuse it; nothing here is checked in).

Both folders are timed: the line-by-line `fold_perf_script` and the chunked
`fold_perf_script_stream` the collector uses. CPU time is reported beside wall
time, since a shared machine makes wall time noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fslab.base.proc import run
from fslab.collect.perf import perf_record_argv, perf_script_argv
from fslab.stacks.fold import fold_perf_script, fold_perf_script_stream
from fslab.target.scratch import scratch_filesystem

DEFAULT_OUTPUT = Path("/dev/shm/fslab-bench-perf-script.txt")
RAMP_S = 2.0


@contextlib.contextmanager
def scratch_ext4() -> Iterator[Path]:
    """ext4 on a loop device over a /dev/shm image, mounted; released after."""
    with scratch_filesystem("ext4", 2 << 30) as (_, mountpoint):
        yield mountpoint


def record(output: Path, seconds: float, freq_hz: int) -> None:
    """Record fio fsync writes on ext4 and write perf script text to `output`."""
    data = Path(f"/dev/shm/fslab-bench-{os.getpid()}.data")
    with scratch_ext4() as mnt:
        fio = [
            "fio",
            "--name=bench",
            f"--directory={mnt}",
            "--rw=randwrite",
            "--ioengine=sync",
            "--bs=16k",
            "--size=128m",
            "--fsync=1",
            "--numjobs=2",
            "--thread",
            "--time_based",
            f"--runtime={seconds + RAMP_S + 5:.0f}",
        ]
        proc = subprocess.Popen(fio, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(RAMP_S)
            run(perf_record_argv("perf", data, freq_hz, seconds))
        finally:
            proc.terminate()
            proc.wait()
    try:
        started = time.monotonic()
        with open(output, "wb") as out:
            subprocess.run(perf_script_argv("perf", data), stdout=out, check=True)
        print(f"perf script: {time.monotonic() - started:.1f} s wall")
    finally:
        data.unlink(missing_ok=True)


def timed(label: str, fold: Callable[[], dict[str, int]], size_bytes: int) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    folded = fold()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    samples = sum(folded.values())
    print(
        f"{label:>7}: {samples:,} samples, {len(folded):,} stacks; "
        f"cpu {cpu:.2f} s = {samples / cpu:,.0f} samples/s, {size_bytes / cpu / 1e6:.0f} MB/s; "
        f"wall {wall:.2f} s = {samples / wall:,.0f} samples/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", nargs="?", type=Path, help="perf script text to fold")
    parser.add_argument("--record-seconds", type=float, default=60.0)
    parser.add_argument("--freq", type=int, default=10_000)
    args = parser.parse_args()
    path = args.input
    if path is None:
        path = DEFAULT_OUTPUT
        record(path, args.record_seconds, args.freq)
    size = path.stat().st_size
    print(f"input: {path} ({size / 1e6:.0f} MB)")

    def lines() -> dict[str, int]:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fold_perf_script(fh)

    def stream() -> dict[str, int]:
        with open(path, "rb") as fh:
            return fold_perf_script_stream(fh)

    timed("stream", stream, size)
    timed("lines", lines, size)


if __name__ == "__main__":
    main()
