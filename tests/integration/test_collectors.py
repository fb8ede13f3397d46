"""The kernel-side collectors around a real fsync fio load on a loop ext4 (root)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import requires_root

from fslab.base.units import parse_size_bytes
from fslab.collect import tracefs
from fslab.collect.base import Collector, CollectorResult, PointContext
from fslab.collect.jbd2 import Jbd2Collector
from fslab.collect.offcpu import OffcpuCollector
from fslab.collect.sysstat import SysstatCollector
from fslab.collect.tpcounters import TpCountersCollector
from fslab.collect.workqueue import WorkqueueCollector
from fslab.measure.plan import preset_argv
from fslab.target.scratch import scratch_filesystem

pytestmark = [
    requires_root,
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio"),
]


@contextlib.contextmanager
def loop_ext4(tag: str, size: str = "2G", *mkfs_args: str) -> Iterator[tuple[str, Path]]:
    """A fresh ext4 on a RAM-backed loop device; always torn down (`tag` names the use)."""
    with scratch_filesystem("ext4", parse_size_bytes(size), mkfs_options=mkfs_args) as fs:
        yield fs


def fsync_fio(directory: Path, numjobs: int = 32, runtime_s: int = 3) -> None:
    """The seed workload (ext4-fsync-storm preset) for `runtime_s` seconds."""
    argv = preset_argv("ext4-fsync-storm", str(directory), {"numjobs": numjobs}, runtime_s)
    subprocess.run(argv, check=True, timeout=120, stdout=subprocess.DEVNULL)


def context(dev: str, mnt: Path, tmp_path: Path, **over: object) -> PointContext:
    fields = dict(
        device=dev,
        device_name=Path(dev).name,
        mountpoint=str(mnt),
        fs_type="ext4",
        workload_comm="fio",
        ramp_s=0.0,
        runtime_s=3.0,
        artifact_dir=tmp_path,
    )
    fields.update(over)
    return PointContext(**fields)  # type: ignore[arg-type]


def my_instances() -> list[str]:
    root = tracefs.find_tracefs()
    if root is None:
        return []
    prefix = f"{tracefs.INSTANCE_PREFIX}{os.getpid()}-"
    return [p.name for p in (root / "instances").iterdir() if p.name.startswith(prefix)]


def run_around(collectors: list[Collector], ctx: PointContext, mnt: Path, **fio) -> dict:
    for col in collectors:
        col.start(ctx)
    try:
        fsync_fio(mnt, **fio)
    finally:
        results: dict[str, CollectorResult] = {c.name: c.stop() for c in collectors}
    return results


# --------------------------------------------------------------------------


def test_all_collectors_on_fsync_load(no_leaks, tmp_path):
    with loop_ext4("all") as (dev, mnt):
        ctx = context(dev, mnt, tmp_path)
        collectors: list[Collector] = [
            WorkqueueCollector(),
            TpCountersCollector(),
            Jbd2Collector(),
            OffcpuCollector(),
            SysstatCollector(),
        ]
        res = run_around(collectors, ctx, mnt)
    assert my_instances() == []
    for name, r in res.items():
        assert r.status == "ok", f"{name}: {r.reason}"
        assert all(isinstance(v, float) for v in r.metrics.values()), name
        assert all(isinstance(v, str) for v in r.artifacts.values()), name

    wq = res["workqueue"].metrics
    # a fresh ext4 converts unwritten extents on the single-threaded rsv workqueue
    assert wq["wq.ext4-rsv-conversion.items_per_s"] > 0
    assert wq["wq.ext4-rsv-conversion.exec_ns_p50"] > 0
    assert wq["wq.ext4-rsv-conversion.peak_concurrency"] >= 1
    assert wq["wq.events"] > 1000 and wq["wq.events_lost"] >= 0
    assert "ext4_end_io_rsv_work" in res["workqueue"].artifacts["workqueue.tsv"]

    tp = res["tpcounters"].metrics
    assert "tp.writeback_queue.fs_free_space.count" in tp
    # the delalloc fallback is counted
    assert "tp.ext4_write_begin.count" in tp
    # the per-call events are counted only on request (a hit per write, fsync or handle)
    per_call = ("tp.jbd2_handle_start", "tp.ext4_sync_file_enter", "tp.ext4_da_write_begin")
    assert not any(k.startswith(per_call) for k in tp)

    jb = res["jbd2"].metrics
    assert jb["jbd2.transactions"] > 0 and jb["jbd2.run.commits"] > 0
    assert jb["jbd2.handles_per_txn"] > 0
    assert "transactions" in res["jbd2"].artifacts["jbd2.info.after"]

    off = res["offcpu"]
    assert off.metrics["offcpu.samples"] > 5
    assert off.metrics["offcpu.blocked_threads_mean"] > 0
    folded = off.artifacts["profile.offcpu.folded"]
    assert "jbd2" in folded and "ext4" in folded
    assert all(line.startswith("fio;[") for line in folded.splitlines())

    sysm = res["sysstat"].metrics
    assert sysm["blk.write_ios"] > 0 and sysm["blk.flush_ios"] > 0
    assert 0 < sysm["blk.busy_pct"] <= 100
    assert sysm["sys.ctxt_per_s"] > 0

    # every collector states its own CPU time (the perf stat process for tpcounters)
    for metric, result in (
        ("wq.collector_cpu_s", wq),
        ("tp.collector_cpu_s", tp),
        ("jbd2.collector_cpu_s", jb),
        ("offcpu.collector_cpu_s", off.metrics),
        ("sys.collector_cpu_s", sysm),
    ):
        assert 0 <= result[metric] < 5, metric
    assert off.metrics["offcpu.collector_cpu_s"] > 0  # it reads /proc for every sample


def test_ramp_window_and_ftrace_backend(no_leaks, tmp_path):
    """Counting starts after the ramp; tpcounters works without perf (ftrace backend),
    per-call events included when asked for."""
    with loop_ext4("ramp") as (dev, mnt):
        ctx = context(dev, mnt, tmp_path, ramp_s=1.0)
        collectors: list[Collector] = [
            TpCountersCollector(backend="ftrace", per_call=True),
            WorkqueueCollector(),
            Jbd2Collector(),
        ]
        res = run_around(collectors, ctx, mnt)
    assert my_instances() == []
    tp = res["tpcounters"]
    assert tp.status == "ok" and "ftrace" in tp.reason
    assert tp.metrics["tp.ext4_da_write_begin.count"] > 0
    assert tp.metrics["tp.jbd2_handle_start.count"] > 0  # per_call: counted on request
    assert tp.metrics["tp.ext4_sync_file_enter.per_s"] > 0
    assert res["workqueue"].status == "ok"
    assert res["jbd2"].metrics["jbd2.run.commits"] > 0


def test_instance_removed_when_the_workload_fails(no_leaks, tmp_path):
    with loop_ext4("exc") as (dev, mnt):
        col = WorkqueueCollector()
        col.start(context(dev, mnt, tmp_path))
        assert len(my_instances()) == 1
        with pytest.raises(subprocess.CalledProcessError):
            try:
                subprocess.run(["fio", "--no-such-option"], check=True, capture_output=True)
            finally:
                res = col.stop()
    # fio failed at once: nothing to measure, but a result rather than an exception
    assert res.status in ("ok", "failed"), res.reason
    assert my_instances() == []


def test_trace_instance_context_manager_cleans_up_on_exception():
    root, _ = tracefs.ensure_tracefs()
    with pytest.raises(RuntimeError), tracefs.TraceInstance(root) as inst:
        inst.create(buffer_kb_per_cpu=64)
        inst.enable_event("workqueue/workqueue_queue_work")
        inst.open_raw()
        raise RuntimeError("workload crashed")
    assert not inst.path.exists()
    assert my_instances() == []


def test_collectors_degrade_without_tracefs(no_leaks, tmp_path):
    """A tracefs path that does not exist: unavailable (or ok without the trace part)."""
    missing = tmp_path / "no-tracefs"
    with loop_ext4("degrade") as (dev, mnt):
        ctx = context(dev, mnt, tmp_path)
        collectors: list[Collector] = [
            WorkqueueCollector(tracefs_root=missing),
            TpCountersCollector(backend="ftrace", tracefs_root=missing),
            Jbd2Collector(tracefs_root=missing),
        ]
        res = run_around(collectors, ctx, mnt, numjobs=4, runtime_s=1)
    assert res["workqueue"].status == "unavailable"
    assert "does not exist" in res["workqueue"].reason
    assert res["tpcounters"].status == "unavailable"
    jb = res["jbd2"]
    assert jb.status == "ok" and "jbd2_run_stats unavailable" in jb.reason
    assert jb.metrics["jbd2.transactions"] > 0 and "jbd2.run.commits" not in jb.metrics


def test_offcpu_without_workload_fails_softly(tmp_path):
    col = OffcpuCollector()
    col.start(context("/dev/null", tmp_path, tmp_path, workload_comm="no-such-comm"))
    res = col.stop()
    assert res.status == "failed" and "no-such-comm" in res.reason


def test_ensure_tracefs_mounts_when_missing(tmp_path):
    """On an empty directory tracefs is mounted, and fslab says so."""
    target = tmp_path / "tracing"
    target.mkdir()
    try:
        root, note = tracefs.ensure_tracefs(target)
        assert root == target and "mounted" in note
        assert tracefs.is_tracefs_root(target)
        again, note2 = tracefs.ensure_tracefs(target)
        assert again == target and note2 == ""
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_an_evidence_point_states_what_each_collector_added_to_its_setup_and_teardown(no_leaks):
    """facts["collector_seconds"]: wall seconds to start and to stop observing, per
    collector, on evidence runs only (a clean run or a warm-up has no instrument to
    account for). The grid plan: an adaptive scan has no evidence run of its own."""
    from fslab.base.hostfacts import collect_host_facts
    from fslab.measure.point import RunOptions, run_point
    from fslab.spec.load import load_spec
    from fslab.spec.points import expand_points

    on = ("jbd2", "sysstat", "tpcounters")
    spec, _ = load_spec(
        "ext4-fsync-storm",
        overrides=[
            "sweep.numjobs=[4]",
            "run.adaptive=false",
            'run.runtime="2s"',
            'run.ramp="1s"',
            *(
                f"collect.{n}={'true' if n in on else 'false'}"
                for n in ("perf", "offcpu", "workqueue", *on)
            ),
        ],
    )
    points = [p for p in expand_points(spec, "separate") if p.filesystem.label == "ext4-default"]
    host = collect_host_facts()
    by_role = {
        p.role: run_point(spec, p, options=RunOptions(), host=host, formatted_before=False)
        for p in points
    }
    assert set(by_role) == {"warmup", "clean", "evidence"}
    assert by_role["clean"].facts.collector_seconds is None
    assert by_role["warmup"].facts.collector_seconds is None
    evidence = by_role["evidence"]
    assert evidence.status == "ok", evidence.error
    seconds = evidence.facts.collector_seconds
    assert seconds is not None
    assert set(seconds) == set(on)
    for name, phases in seconds.items():
        assert set(phases) == {"start_s", "stop_s"}, name
        assert all(0 <= v < 5 for v in phases.values()), name
    # the instruments' part of the evidence run's setup and teardown
    timing = evidence.facts.timing
    assert timing is not None
    assert sum(p["start_s"] for p in seconds.values()) <= timing["setup_s"]
    assert sum(p["stop_s"] for p in seconds.values()) <= timing["teardown_s"]
