"""Capture the real `perf script` outputs the folding tests read (run as root).

    .venv/bin/python tests/data/capture_perf.py [--seconds 4] [--max-bytes 1900000]

Each capture builds ext4 on a loop device over a RAM-backed image
(/dev/shm/fslab-perftest-*.img), starts the workload, records all CPUs with
the collector's own `perf record` command at 499 Hz after a short ramp, runs
`perf script`, and releases the mount, the loop device and the files.

- perf_script_fio_fsync.txt: fio buffered 16 KiB random writes with an fsync
  after every write (2 threads): the second seed report's shape, kernel-heavy
  (jbd2, block layer, loop worker). Printed with the collector's field set
  (`-F comm,pid,tid,ip,sym --no-inline`).
- perf_script_dd_1m.txt: dd bs=1M from /dev/zero to a file, rewritten in a
  loop (the first seed report's workload: cached writes, block allocation).
  Printed with perf script's default fields, so the parser also sees the
  `comm tid [cpu] time: period event:` header and `sym+0xoff (dso)` frames.

Files are trimmed to stay under --max-bytes by keeping whole samples only:
the first N samples of the recording, N as large as fits. The machine is
shared, so other processes' samples (python, kworkers) appear too; that is
real data, kept as captured.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from fslab.base.proc import run
from fslab.collect.perf import perf_record_argv, perf_script_argv
from fslab.target.scratch import scratch_filesystem

DATA_DIR = Path(__file__).parent
FREQ_HZ = 499
RAMP_S = 1.0
IMAGE_BYTES = 2 << 30


@contextlib.contextmanager
def scratch_ext4(name: str) -> Iterator[Path]:
    """A fresh ext4 on a RAM-backed loop device, mounted (`name` says which capture)."""
    with scratch_filesystem("ext4", IMAGE_BYTES) as (_, mountpoint):
        yield mountpoint


def fio_fsync_argv(directory: Path, seconds: float) -> list[str]:
    return [
        "fio",
        "--name=fsync-randwrite",
        f"--directory={directory}",
        "--rw=randwrite",
        "--ioengine=sync",
        "--buffered=1",
        "--bs=16k",
        "--size=64m",
        "--fsync=1",
        "--numjobs=2",
        "--thread",
        "--time_based",
        f"--runtime={seconds:.0f}",
        "--group_reporting",
    ]


def dd_loop_argv(directory: Path, seconds: float) -> list[str]:
    """dd rewrites a 512 MiB file until the time is up (no shell: a timeout argv)."""
    script = f"while :; do dd if=/dev/zero of={directory}/test bs=1M count=512 2>/dev/null; done"
    return ["timeout", f"{seconds:.0f}", "sh", "-c", script]


def record_script(workload: list[str], seconds: float, data: Path, script_fields: bool) -> bytes:
    """Run the workload, record its steady state, return the perf script text."""
    proc = subprocess.Popen(workload, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(RAMP_S)
        run(perf_record_argv("perf", data, FREQ_HZ, seconds - RAMP_S - 0.5))
    finally:
        proc.wait(timeout=seconds + 60)
    argv = perf_script_argv("perf", data) if script_fields else ["perf", "script", "-i", str(data)]
    try:
        return subprocess.run(argv, capture_output=True, check=True).stdout
    finally:
        data.unlink(missing_ok=True)


def first_samples(text: bytes, max_bytes: int) -> tuple[bytes, int, int]:
    """The first whole samples that fit in max_bytes; also kept and total counts."""
    samples = [s for s in text.split(b"\n\n") if s.strip()]
    kept, size = [], 0
    for sample in samples:
        if size + len(sample) + 2 > max_bytes:
            break
        kept.append(sample)
        size += len(sample) + 2
    return b"".join(s + b"\n\n" for s in kept), len(kept), len(samples)


def capture(name: str, out_name: str, seconds: float, max_bytes: int) -> None:
    with scratch_ext4(name) as mnt:
        if name == "fio":
            workload, script_fields = fio_fsync_argv(mnt, seconds), True
        else:
            workload, script_fields = dd_loop_argv(mnt, seconds), False
        data = Path(f"/dev/shm/fslab-perftest-{name}.data")
        text = record_script(workload, seconds, data, script_fields)
    trimmed, kept, total = first_samples(text, max_bytes)
    (DATA_DIR / out_name).write_bytes(trimmed)
    print(f"{out_name}: kept the first {kept} of {total} samples, {len(trimmed)} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--max-bytes", type=int, default=1_900_000)
    args = parser.parse_args()
    capture("fio", "perf_script_fio_fsync.txt", args.seconds, args.max_bytes)
    capture("dd", "perf_script_dd_1m.txt", args.seconds, args.max_bytes)


if __name__ == "__main__":
    main()
