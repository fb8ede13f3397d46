"""fs_mark, sysbench fileio and dbench parsers, on outputs captured from real runs.

The captures and the scripts that made them are in tests/data/workloads/<tool>/
(capture.sh; manifest.tsv gives each case's argv and exit status). Expected
values are the numbers in those files; truncated inputs are cut from them.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from fslab.base.errors import ToolError
from fslab.base.vocab import Catalog
from fslab.workload.dbench import parse as dbench
from fslab.workload.fs_mark import parse as fs_mark
from fslab.workload.sysbench import parse as sysbench

WORKLOADS = Path(__file__).resolve().parent / "data" / "workloads"
MIB = 1024 * 1024
PARSERS: dict[str, ModuleType] = {"fs_mark": fs_mark, "sysbench": sysbench, "dbench": dbench}


def text(tool: str, case: str) -> str:
    return (WORKLOADS / tool / f"{case}.txt").read_text()


def manifest(tool: str) -> dict[str, int]:
    """case -> exit status, from the capture script's manifest."""
    rows = (WORKLOADS / tool / "manifest.tsv").read_text().splitlines()
    return {r.split("\t")[0]: int(r.split("\t")[2]) for r in rows if not r.startswith("#")}


def finished_cases(tool: str) -> list[str]:
    """Cases that exited 0 and measured something (sysbench's prepare/cleanup do not)."""
    return [
        case
        for case, status in manifest(tool).items()
        if status == 0 and not case.endswith(("_prepare", "_cleanup"))
    ]


ALL_RUNS = [(tool, case) for tool in PARSERS for case in finished_cases(tool)]


def test_every_capture_is_in_a_manifest():
    for tool in PARSERS:
        cases = manifest(tool)
        outputs = {
            p.name.removesuffix(".txt")
            for p in (WORKLOADS / tool).glob("*.txt")
            if not p.name.endswith((".stderr.txt", ".log.txt"))
        }
        assert outputs == set(cases), tool
    assert len(ALL_RUNS) >= 25


@pytest.mark.parametrize(("tool", "case"), ALL_RUNS)
def test_every_finished_run_parses_into_declared_metrics(tool, case):
    module = PARSERS[tool]
    metrics = module.parse(text(tool, case))
    assert module.HEADLINE in metrics
    assert metrics[module.HEADLINE] > 0
    catalog = Catalog(module.METRICS)
    undeclared = [name for name in metrics if not catalog.covers(name)]
    assert undeclared == []
    assert all(name.startswith(f"{tool}.") for name in metrics)
    assert catalog.lookup(module.HEADLINE).direction == "higher"


def test_metric_units_are_the_catalogs():
    # units the catalog already formats (base/format.py); no new spelling per tool
    known = {"1/s", "IO/s", "B/s", "ms", "s", "%", "items", "runs", "threads", "events"}
    known |= {"calls", "jobs"}
    for module in PARSERS.values():
        assert {mdef.unit for _, mdef in module.METRICS} <= known


# ------------------------------------------------------------------ fs_mark


def test_fs_mark_robot_shape_ext4():
    m = fs_mark.parse(text("fs_mark", "ext4_robot_s1"))
    rates = [3642.5, 6208.0, 4967.9, 1350.1, 6167.8, 6054.6, 6126.2, 1871.0]
    for n, rate in enumerate(rates, 1):
        assert m[f"fs_mark.iter{n}.files_per_s"] == rate
    assert "fs_mark.iter9.files_per_s" not in m
    assert m["fs_mark.files_per_s"] == pytest.approx(sum(rates) / 8)
    assert m["fs_mark.iter1.app_overhead_ms"] == pytest.approx(6.792)
    assert m["fs_mark.iter8.app_overhead_ms"] == pytest.approx(6.977)
    assert m["fs_mark.iter1.fs_use_pct"] == 6
    assert m["fs_mark.fs_use_pct"] == 9
    assert m["fs_mark.files"] == 8000
    assert m["fs_mark.iterations"] == 8
    assert m["fs_mark.threads"] == 1


def test_fs_mark_log_file_reads_as_stdout():
    # the -l log differs from stdout only in a "#" line before the table
    for case in finished_cases("fs_mark"):
        log = (WORKLOADS / "fs_mark" / f"{case}.log.txt").read_text()
        assert log != text("fs_mark", case)
        assert fs_mark.parse(log) == fs_mark.parse(text("fs_mark", case))


def test_fs_mark_threads_and_directories():
    # -n is per thread: 4 threads x 1000 files a loop over 2 directories
    m = fs_mark.parse(text("fs_mark", "ext4_s1_t4_d2"))
    assert m["fs_mark.threads"] == 4
    assert m["fs_mark.files"] == 12000
    assert [m[f"fs_mark.iter{n}.files_per_s"] for n in (1, 2, 3)] == [5894.4, 4692.9, 5142.0]
    assert m["fs_mark.app_overhead_ms"] == pytest.approx((25667 + 25710 + 25746) / 3000)


def test_fs_mark_sync_modes_and_filesystems():
    no_sync = fs_mark.parse(text("fs_mark", "ext4_s0_t1"))
    fsync = fs_mark.parse(text("fs_mark", "ext4_s1_t1"))
    assert no_sync["fs_mark.files_per_s"] > fsync["fs_mark.files_per_s"]
    btrfs = fs_mark.parse(text("fs_mark", "btrfs_robot_s1"))
    assert btrfs["fs_mark.iter4.files_per_s"] == 633.1
    assert btrfs["fs_mark.iter1.fs_use_pct"] == 11  # btrfs counts allocated chunks
    xfs = fs_mark.parse(text("fs_mark", "xfs_s1_t4_d4"))
    assert xfs["fs_mark.threads"] == 4
    assert xfs["fs_mark.files"] == 12000


def test_fs_mark_refuses_what_is_not_one_whole_run():
    with pytest.raises(ToolError, match="not fs_mark output"):
        fs_mark.parse(text("fs_mark", "fail_threads"))  # exit 1: stdout is empty
    stderr = (WORKLOADS / "fs_mark" / "fail_threads.stderr.txt").read_text()
    with pytest.raises(ToolError, match="not fs_mark output"):
        fs_mark.parse(stderr)
    with pytest.raises(ToolError, match="not fs_mark output"):
        fs_mark.parse(text("dbench", "ext4_c4"))
    whole = text("fs_mark", "ext4_robot_s1")
    cut = whole[: whole.index("     7         4000")]
    with pytest.raises(ToolError, match="3 of the 8 iterations"):
        fs_mark.parse(cut)
    with pytest.raises(ToolError, match="no rows"):
        fs_mark.parse(whole[: whole.index("     6         1000")])
    with pytest.raises(ToolError, match="2 runs"):
        fs_mark.parse(whole + whole)


# ------------------------------------------------------------------ sysbench


def test_sysbench_rndwr_fsync_every_write():
    m = sysbench.parse(text("sysbench", "ext4_rndwr_t4_fsync1"))
    assert m["sysbench.write.ops_per_s"] == 2249.18
    assert m["sysbench.fsync.ops_per_s"] == 36003.14
    assert m["sysbench.read.ops_per_s"] == 0
    assert m["sysbench.write.bw_bytes_s"] == pytest.approx(35.14 * MIB)
    assert m["sysbench.read.bw_bytes_s"] == 0
    assert m["sysbench.runtime_s"] == 3.0143
    assert m["sysbench.events"] == 115262
    assert m["sysbench.threads"] == 4
    assert m["sysbench.lat_ms_min"] == 0
    assert m["sysbench.lat_ms_max"] == 12.92
    assert m["sysbench.lat_ms_p99"] == 2.26
    # printed "avg: 0.10"; recomputed from "sum: 11972.15" over the events
    assert m["sysbench.lat_ms_avg"] == pytest.approx(11972.15 / 115262)
    assert round(m["sysbench.lat_ms_avg"], 2) == 0.10
    # --file-fsync-freq=1 fsyncs each of the 16 files after every write
    ratio = m["sysbench.fsync.ops_per_s"] / m["sysbench.write.ops_per_s"]
    assert ratio == pytest.approx(16, rel=0.01)


def test_sysbench_fsync_frequencies():
    default = sysbench.parse(text("sysbench", "ext4_rndwr_t4"))  # every 100 requests
    assert default["sysbench.write.ops_per_s"] == 42801.79
    assert default["sysbench.fsync.ops_per_s"] == 6866.59
    assert default["sysbench.lat_ms_p99"] == 1.47
    # 16 files fsynced per 100 writes
    ratio = default["sysbench.fsync.ops_per_s"] / default["sysbench.write.ops_per_s"]
    assert ratio == pytest.approx(0.16, rel=0.01)
    never = sysbench.parse(text("sysbench", "ext4_rndwr_t4_fsync0"))
    # only the fsyncs at the end: 16 files x 4 threads in 3.028 s
    assert never["sysbench.fsync.ops_per_s"] == 21.13
    assert never["sysbench.fsync.ops_per_s"] == pytest.approx(64 / 3.028, abs=0.01)
    assert never["sysbench.lat_ms_p99"] == 0.01


def test_sysbench_seqwr_and_xfs():
    one = sysbench.parse(text("sysbench", "ext4_seqwr_t1"))
    assert one["sysbench.threads"] == 1
    assert one["sysbench.write.ops_per_s"] == 83081.19
    assert one["sysbench.write.bw_bytes_s"] == pytest.approx(1298.14 * MIB)
    xfs = sysbench.parse(text("sysbench", "xfs_rndwr_t4_fsync1"))
    assert xfs["sysbench.write.ops_per_s"] == 1395.4
    assert xfs["sysbench.lat_ms_p99"] == 4.03
    assert xfs["sysbench.lat_ms_max"] == 24.11
    assert xfs["sysbench.lat_ms_avg"] == pytest.approx(11977.84 / 71414)


def test_sysbench_refuses_what_is_not_one_finished_run():
    with pytest.raises(ToolError, match=re.escape("FATAL: Cannot open file 'test_file.0'")):
        sysbench.parse(text("sysbench", "ext4_rndwr_unprepared"))
    for phase in ("ext4_prepare", "ext4_cleanup", "xfs_prepare"):
        with pytest.raises(ToolError, match="prepare or cleanup phase"):
            sysbench.parse(text("sysbench", phase))
    with pytest.raises(ToolError, match="not sysbench output"):
        sysbench.parse(text("fs_mark", "ext4_robot_s1"))
    with pytest.raises(ToolError, match=r"not sysbench output.*\(empty\)"):
        sysbench.parse("")
    whole = text("sysbench", "ext4_rndwr_t4")
    with pytest.raises(ToolError, match="lacks lat_ms_max"):
        sysbench.parse(whole[: whole.index("         max:")])
    with pytest.raises(ToolError, match="no fileio statistics"):
        sysbench.parse(whole[: whole.index("File operations:")])
    with pytest.raises(ToolError, match=r"lacks write\.bw_bytes_s"):
        sysbench.parse(whole[: whole.index("    written, MiB/s:")])
    with pytest.raises(ToolError, match="repeats"):
        sysbench.parse(whole + whole)


# ------------------------------------------------------------------ dbench


def test_dbench_sync_open():
    m = dbench.parse(text("dbench", "ext4_c4_sync"))  # "(sync open)" in the summary
    assert m["dbench.bw_bytes_s"] == pytest.approx(235.341e6)
    assert m["dbench.max_latency_ms"] == 69.403
    assert m["dbench.clients"] == 4
    assert m["dbench.op.writex.count"] == 18317
    assert m["dbench.op.writex.lat_ms_avg"] == 0.927
    assert m["dbench.op.writex.lat_ms_max"] == 22.301
    assert m["dbench.op.flush.count"] == 2587
    assert m["dbench.op.ntcreatex.lat_ms_max"] == 9.632


def test_dbench_operations_present_only_when_called():
    one = dbench.parse(text("dbench", "ext4_c1"))
    assert one["dbench.bw_bytes_s"] == pytest.approx(455.756e6)
    assert one["dbench.clients"] == 1
    assert one["dbench.op.deltree.count"] == 2
    assert one["dbench.op.deltree.lat_ms_max"] == 3.505
    assert one["dbench.op.mkdir.count"] == 1
    four = dbench.parse(text("dbench", "ext4_c4"))
    assert "dbench.op.deltree.count" not in four
    assert "dbench.op.rmdir.count" not in four
    ops = {name.split(".")[2] for name in four if name.startswith("dbench.op.")}
    assert len(ops) == 14


def test_dbench_fsync_and_sync_dirs():
    fsync = dbench.parse(text("dbench", "ext4_c4_fsync"))  # -F: no mark in the summary
    assert fsync["dbench.bw_bytes_s"] == pytest.approx(242.782e6)
    # the summary's max_latency counts waits between operations too
    assert fsync["dbench.max_latency_ms"] == 116.986
    assert fsync["dbench.op.writex.lat_ms_max"] == 116.981
    dirs = dbench.parse(text("dbench", "ext4_c4_syncdirs"))  # "(sync dirs)"
    assert dirs["dbench.bw_bytes_s"] == pytest.approx(237.298e6)
    assert dirs["dbench.max_latency_ms"] == 24.081


def test_dbench_refuses_what_is_not_one_finished_run():
    with pytest.raises(ToolError, match="no summary line"):
        dbench.parse(text("dbench", "fail_loadfile"))  # exit 1 after the banner
    stderr = (WORKLOADS / "dbench" / "fail_loadfile.stderr.txt").read_text()
    with pytest.raises(ToolError, match="not dbench output"):
        dbench.parse(stderr)
    with pytest.raises(ToolError, match="not dbench output"):
        dbench.parse(text("sysbench", "ext4_rndwr_t4"))
    whole = text("dbench", "xfs_c4")
    with pytest.raises(ToolError, match="no summary line"):
        dbench.parse(whole[: whole.index("Throughput ")])
    with pytest.raises(ToolError, match="no operation table"):
        dbench.parse(whole[: whole.index(" Operation")] + whole[whole.index("Throughput ") :])
    with pytest.raises(ToolError, match="2 runs"):
        dbench.parse(whole + whole)


@pytest.mark.parametrize("tool", list(PARSERS))
@pytest.mark.parametrize("garbage", ["", "\n\n", "Segmentation fault\n", "\x00\xff" * 10])
def test_garbage_raises_tool_error(tool, garbage):
    with pytest.raises(ToolError):
        PARSERS[tool].parse(garbage)
