"""Capture the raw inputs of the kernel-side collectors' parsers (run as root).

    .venv/bin/python tests/data/capture_collect.py            # rewrite tests/data/collect_*
    .venv/bin/python tests/data/capture_collect.py --bench    # workqueue mechanism costs

Everything runs on loop devices backed by sparse images
`/dev/shm/fslab-colltest-*.img`, unmounted and detached whatever happens.
Files are kept under 1 MB each. Pointers are captured unhashed
(`options/hash-ptr 0`) so the text and raw captures can be compared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from fslab.base.units import parse_size_bytes
from fslab.collect import tracefs
from fslab.collect.common import dev_filter, kernel_dev_t
from fslab.collect.jbd2 import journal_dirs
from fslab.collect.offcpu import find_processes, uses_mountpoint
from fslab.collect.tpcounters import (
    WRITEBACK_QUEUE,
    parse_wb_reasons,
    perf_stat_argv,
    plan_counters,
)
from fslab.collect.workqueue import EVENTS as WQ_EVENTS
from fslab.measure.plan import preset_argv
from fslab.target.scratch import scratch_filesystem
from fslab.workload.fio.parse import parse_fio_json

OUT = Path(__file__).resolve().parent
MAX_BYTES = 1_000_000


@contextlib.contextmanager
def loop_ext4(tag: str, size: str = "2G", *mkfs_args: str) -> Iterator[tuple[str, Path]]:
    """A fresh ext4 on a RAM-backed loop device; always torn down (`tag` names the use)."""
    with scratch_filesystem("ext4", parse_size_bytes(size), mkfs_options=mkfs_args) as fs:
        yield fs


def fio_argv(directory: Path, numjobs: int, runtime_s: float) -> list[str]:
    """The seed case's fsync workload (from the ext4-fsync-storm preset), scaled."""
    return preset_argv("ext4-fsync-storm", str(directory), {"numjobs": numjobs}, runtime_s)


def fio_iops(directory: Path, numjobs: int, runtime_s: float) -> float:
    out = subprocess.run(
        fio_argv(directory, numjobs, runtime_s), check=True, capture_output=True, text=True
    ).stdout
    return parse_fio_json(out).metrics["fio.write.iops"]


def write(name: str, data: str | bytes) -> None:
    path = OUT / name
    size = len(data)
    if size > MAX_BYTES:
        raise ValueError(f"{name}: {size} bytes, over the 1 MB limit")
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    print(f"  wrote {name} ({size} bytes)")


def _data_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def save_raw(prefix: str, raw: dict[int, bytes], page_size: int) -> None:
    """Raw per-CPU pages in one file plus an index of where each CPU's pages are."""
    blob, index, offset = b"", {}, 0
    for cpu, data in sorted(raw.items()):
        index[str(cpu)] = [offset, len(data)]
        blob += data
        offset += len(data)
    write(f"{prefix}_raw.bin", blob)
    write(f"{prefix}_raw.json", json.dumps({"page_size": page_size, "cpus": index}, indent=1))


# --------------------------------------------------------------------------


def capture_workqueue(root: Path) -> None:
    """Workqueue events under an fsync load on a fresh ext4 (conversions happen)."""
    print("workqueue events")
    with loop_ext4("wq", "4G") as (_, mnt):
        inst = tracefs.TraceInstance(root)
        try:
            inst.create(buffer_kb_per_cpu=384, overwrite=True)
            inst._write("options/hash-ptr", "0")
            for ev in WQ_EVENTS:
                inst.enable_event(ev)
            inst.set_tracing(True)
            fio_iops(mnt, 64, 2)
            inst.set_tracing(False)
            text = inst.read("trace")
            cpu_stats = "".join(
                f"### cpu{cpu}\n" + inst.read(f"per_cpu/cpu{cpu}/stats") for cpu in inst.cpus()
            )
            formats = {ev: inst.read(f"events/{ev}/format") for ev in WQ_EVENTS}
            inst.open_raw()
            raw = inst.read_raw()
            page_size = inst.page_size()
        finally:
            inst.remove()
    for ev, fmt in formats.items():
        write(f"collect_format_{ev.split('/')[1]}.txt", fmt)
    write("collect_wq_trace.txt", "\n".join(_data_lines(text)[:2000]) + "\n")
    write("collect_tracefs_cpu_stats.txt", cpu_stats)
    save_raw("collect_wq", raw, page_size)
    # the kallsyms lines of the work functions seen, to test address -> name
    functions = set(re.findall(r"function[= ](\w+)", text))
    kallsyms = [
        line
        for line in Path("/proc/kallsyms").read_text().splitlines()
        if len(line.split()) >= 3 and line.split()[2] in functions and line.split()[1] in "tT"
    ]
    write("collect_kallsyms_excerpt.txt", "\n".join(kallsyms) + "\n")


def capture_writeback(root: Path) -> None:
    """Fill a small ext4 with buffered writes: ext4 queues fs_free_space writeback."""
    print("writeback_queue (fs_free_space) + perf stat counts")
    with loop_ext4("wb", "256M") as (dev, mnt):
        wb_format = (root / "events" / WRITEBACK_QUEUE / "format").read_text()
        reasons = parse_wb_reasons(wb_format)
        available = {
            ev
            for ev in (
                WRITEBACK_QUEUE,
                "writeback/balance_dirty_pages",
                "ext4/ext4_da_write_begin",
                "ext4/ext4_write_begin",
                "ext4/ext4_sync_file_enter",
                "ext4/ext4_writepages",
                "jbd2/jbd2_checkpoint",
                "jbd2/jbd2_handle_start",
                "jbd2/jbd2_lock_buffer_stall",
            )
            if not tracefs.missing_events(root, [ev])
        }
        counters = plan_counters("ext4", dev, available, reasons, per_call=True)  # every event
        inst = tracefs.TraceInstance(root)
        with tempfile.TemporaryDirectory() as tmp:
            csv = Path(tmp) / "perf.csv"
            perf = subprocess.Popen(
                perf_stat_argv(counters, csv), stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
            try:
                inst.create(buffer_kb_per_cpu=256)
                inst.enable_event(WRITEBACK_QUEUE)
                inst.set_tracing(True)
                time.sleep(0.5)
                subprocess.run(
                    ["dd", "if=/dev/zero", f"of={mnt}/fill", "bs=1M", "count=300"],
                    check=False,
                    capture_output=True,
                )
                subprocess.run(["sync"], check=True)
                time.sleep(0.3)
                inst.set_tracing(False)
                text = inst.read("trace")
                inst.open_raw()
                raw = inst.read_raw()
                page_size = inst.page_size()
            finally:
                perf.send_signal(2)
                perf.wait(timeout=30)
                inst.remove()
            perf_csv = csv.read_text()
    write("collect_format_writeback_queue.txt", wb_format)
    write("collect_wb_trace.txt", "\n".join(_data_lines(text)) + "\n")
    save_raw("collect_wb", raw, page_size)
    write("collect_tp_perfstat.csv", perf_csv)
    write(
        "collect_tp_counters.json",
        json.dumps([[c.metric, c.event, c.filter] for c in counters], indent=1),
    )


def capture_jbd2_sysstat(root: Path) -> None:
    """jbd2 info before/after, jbd2_run_stats text and /proc + /sys/block pairs."""
    print("jbd2 info, jbd2_run_stats, /proc/stat, /proc/vmstat, block stat")
    with loop_ext4("jbd2", "4G") as (dev, mnt):
        name = Path(dev).name
        info = journal_dirs(name)[0] / "info"
        block = Path(f"/sys/block/{name}/stat")
        inst = tracefs.TraceInstance(root)
        try:
            inst.create(buffer_kb_per_cpu=256)
            inst.enable_event("jbd2/jbd2_run_stats", dev_filter(kernel_dev_t(dev)))
            before = {
                "jbd2_info": info.read_text(),
                "proc_stat": Path("/proc/stat").read_text(),
                "vmstat": Path("/proc/vmstat").read_text(),
                "block_stat": block.read_text(),
            }
            inst.set_tracing(True)
            fio_iops(mnt, 64, 3)
            inst.set_tracing(False)
            after = {
                "jbd2_info": info.read_text(),
                "proc_stat": Path("/proc/stat").read_text(),
                "vmstat": Path("/proc/vmstat").read_text(),
                "block_stat": block.read_text(),
            }
            run_stats = inst.read_text_pipe()
        finally:
            inst.remove()
    write(
        "collect_format_jbd2_run_stats.txt",
        (root / "events/jbd2/jbd2_run_stats/format").read_text(),
    )
    for key in before:
        write(f"collect_{key}.before", before[key])
        write(f"collect_{key}.after", after[key])
    lines = run_stats.splitlines()
    write("collect_jbd2_run_stats.txt", "\n".join(lines[:3000]) + "\n")


def capture_offcpu(numjobs: int) -> None:
    """stat/wchan/stack of blocked fio threads at high fsync concurrency."""
    print(f"off-CPU stacks at {numjobs} fsync threads")
    blocks: list[str] = []
    with loop_ext4("offcpu", "16G") as (_, mnt):
        fio = subprocess.Popen(
            fio_argv(mnt, numjobs, 8), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(4)
            pids = [p for p in find_processes("fio") if uses_mountpoint(p, str(mnt))]
            tids = [(p, t) for p in pids for t in os.listdir(f"/proc/{p}/task")]
            for pid, tid in random.Random(1).sample(tids, min(250, len(tids))):
                base = f"/proc/{pid}/task/{tid}"
                with contextlib.suppress(OSError):
                    stat = Path(f"{base}/stat").read_text()
                    wchan = Path(f"{base}/wchan").read_text()
                    stack = Path(f"{base}/stack").read_text()
                    blocks.append(f"### {tid} stat\n{stat.rstrip()}\n### {tid} wchan\n{wchan}\n")
                    blocks.append(f"### {tid} stack\n{stack}")
        finally:
            fio.wait(timeout=120)
    write("collect_offcpu_samples.txt", "".join(blocks))


# --------------------------------------------------------------------------
# Mechanism benchmark (numbers quoted in docs/collectors.md)

_TEXT_RE = re.compile(
    r"\[(\d+)\].*?\s(\d+)\.(\d+): (\w+): work struct[= ]([0-9a-f]+):? function[= ](\S+)"
    r"(?: workqueue=(\S+))?"
)


def bench(numjobs: int, runtime_s: float, repeat: int) -> None:
    """fio IOPS and reader CPU: no tracing, raw collector, text trace_pipe parser."""
    from fslab.collect.base import PointContext
    from fslab.collect.workqueue import WorkqueueCollector

    root, _ = tracefs.ensure_tracefs()
    with loop_ext4("bench", "16G") as (dev, mnt):
        fio_iops(mnt, numjobs, 2)  # lay the files out first
        for _ in range(repeat):
            print(f"none: iops {fio_iops(mnt, numjobs, runtime_s):.0f}")

            ctx = PointContext(dev, Path(dev).name, str(mnt), "ext4", "fio", 0, runtime_s, mnt)
            col = WorkqueueCollector()
            col.start(ctx)
            iops = fio_iops(mnt, numjobs, runtime_s)
            res = col.stop()
            m = res.metrics
            print(
                f"raw:  iops {iops:.0f} events/s {m['wq.events_per_s']:.0f} "
                f"collector cpu {m['wq.collector_cpu_s']:.2f}s "
                f"= {1e6 * m['wq.collector_cpu_s'] / max(m['wq.events'], 1):.2f} us/event, "
                f"lost {m['wq.events_lost']:.0f}"
            )

            inst = tracefs.TraceInstance(root)
            inst.create(buffer_kb_per_cpu=8192)
            stop = threading.Event()
            stats: dict[str, float] = {"events": 0, "cpu": 0.0}

            def reader(
                inst: tracefs.TraceInstance = inst,
                stop: threading.Event = stop,
                stats: dict[str, float] = stats,
            ) -> None:
                cpu0 = time.thread_time()
                buf = ""
                while True:
                    last = stop.is_set()
                    lines = (buf + inst.read_text_pipe()).split("\n")
                    buf = lines.pop()
                    stats["events"] += sum(1 for line in lines if _TEXT_RE.search(line))
                    if last:
                        break
                    time.sleep(0.1)
                stats["cpu"] = time.thread_time() - cpu0

            try:
                for ev in WQ_EVENTS:
                    inst.enable_event(ev)
                inst.set_tracing(True)
                t0 = time.monotonic()
                th = threading.Thread(target=reader)
                th.start()
                iops = fio_iops(mnt, numjobs, runtime_s)
                inst.set_tracing(False)
                elapsed = time.monotonic() - t0
                stop.set()
                th.join()
                lost = tracefs.lost_from_stats(inst.stats())
            finally:
                inst.remove()
            print(
                f"text: iops {iops:.0f} events/s {stats['events'] / elapsed:.0f} "
                f"reader cpu {stats['cpu']:.2f}s "
                f"= {1e6 * stats['cpu'] / max(stats['events'], 1):.2f} us/event, lost {lost}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", action="store_true", help="measure, don't capture")
    parser.add_argument("--numjobs", type=int, default=64)
    parser.add_argument("--runtime", type=float, default=10)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--offcpu-jobs", type=int, default=512)
    parser.add_argument(
        "--only", choices=["workqueue", "writeback", "jbd2", "offcpu"], action="append"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (tracefs, loop devices, /proc/<pid>/stack)", file=sys.stderr)
        return 1
    if args.bench:
        bench(args.numjobs, args.runtime, args.repeat)
        return 0
    root, note = tracefs.ensure_tracefs()
    if note:
        print(note)
    steps = {
        "workqueue": lambda: capture_workqueue(root),
        "writeback": lambda: capture_writeback(root),
        "jbd2": lambda: capture_jbd2_sysstat(root),
        "offcpu": lambda: capture_offcpu(args.offcpu_jobs),
    }
    for name, step in steps.items():
        if not args.only or name in args.only:
            step()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
