"""System counters around a point: CPU time split, context switches, VM, block device.

Cheap /proc and /sys snapshots taken when steady state begins (after the
ramp) and at stop, plus a light sampler (every 0.25 s) for the gauges whose
peak matters (dirty pages, requests in flight). Everything is a delta or a
peak over the steady-state window.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from fslab.base.vocab import CatalogEntry, MetricDef
from fslab.collect.base import Collector, CollectorResult, PointContext, Unavailable
from fslab.collect.common import RampSnapshot
from fslab.collect.probe import Probe, read_proc_stat
from fslab.collect.tracefs import Ticker

PROC = Path("/proc")
SYS_BLOCK = Path("/sys/block")

CPU_FIELDS = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
    "guest",
    "guest_nice",
)
# /sys/block/<dev>/stat columns (Documentation/block/stat.rst)
BLOCK_FIELDS = (
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks_ms",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks_ms",
    "in_flight",
    "io_ticks_ms",
    "time_in_queue_ms",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ticks_ms",
    "flush_ios",
    "flush_ticks_ms",
)
# /proc/vmstat counters worth a delta (pages or events)
VMSTAT_DELTAS = (
    "nr_dirtied",
    "nr_written",
    "pgpgin",
    "pgpgout",
    "pgscan_direct",
    "pgsteal_direct",
    "allocstall_normal",
    "allocstall_movable",
    "pgmajfault",
)
VMSTAT_GAUGES = ("nr_dirty", "nr_writeback")


# --------------------------------------------------------------------------
# Parsers


def parse_proc_stat(text: str) -> dict[str, float]:
    """The aggregate `cpu` line (in USER_HZ ticks) plus ctxt, processes, procs_*."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            for name, value in zip(CPU_FIELDS, parts[1:], strict=False):
                out[f"cpu_{name}"] = float(value)
        elif parts[0] in ("ctxt", "processes", "procs_running", "procs_blocked", "intr"):
            out[parts[0]] = float(parts[1])
    return out


def parse_vmstat(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[name] = float(value)
    return out


def parse_throttle_counts(text: str, devno: str) -> dict[str, float]:
    """One device's lines of blkio.throttle.io_serviced or io_service_bytes
    ("7:0 Write 1234"), keyed by direction in lower case ({} when absent)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == devno:
            with contextlib.suppress(ValueError):
                out[parts[1].lower()] = float(parts[2])
    return out


def throttle_metrics(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What the blkio throttle counted for the device: bios before merging, as a limit counts."""
    out: dict[str, float] = {}
    for key, value in after.items():
        direction, _, unit = key.partition(".")
        if direction in ("read", "write") and key in before:
            out[f"throttle.{direction}_{unit}"] = value - before[key]
    return out


def parse_block_stat(text: str) -> dict[str, float]:
    """A /sys/block/<dev>/stat line; older kernels have fewer columns."""
    return {name: float(value) for name, value in zip(BLOCK_FIELDS, text.split(), strict=False)}


# --------------------------------------------------------------------------
# Deltas -> metrics


def cpu_metrics(before: dict[str, float], after: dict[str, float], elapsed_s: float) -> dict:
    """CPU time split in percent of all CPUs, context switches and forks per second."""
    deltas = _cpu_deltas(before, after)
    total = _all_ticks(deltas)
    out: dict[str, float] = {}
    if total > 0:
        split = {
            "usr": deltas["user"] + deltas["nice"],
            "sys": deltas["system"],
            "iowait": deltas["iowait"],
            "idle": deltas["idle"],
            "irq": deltas["irq"],
            "softirq": deltas["softirq"],
            "steal": deltas["steal"],
        }
        out.update({f"sys.cpu.{k}_pct": 100.0 * v / total for k, v in split.items()})
    if elapsed_s > 0:
        for key, metric in (("ctxt", "sys.ctxt_per_s"), ("processes", "sys.forks_per_s")):
            if key in before and key in after:
                out[metric] = (after[key] - before[key]) / elapsed_s
        if "intr" in before and "intr" in after:
            out["sys.intr_per_s"] = (after["intr"] - before["intr"]) / elapsed_s
    return out


def _cpu_deltas(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Each CPU_FIELDS field's ticks between two parsed reads of /proc/stat."""
    return {f: after.get(f"cpu_{f}", 0.0) - before.get(f"cpu_{f}", 0.0) for f in CPU_FIELDS}


def _all_ticks(deltas: Mapping[str, float]) -> float:
    """The ticks of every CPU in a window (guest time is already counted in user/nice)."""
    return sum(v for k, v in deltas.items() if k not in ("guest", "guest_nice"))


def all_cpu_ticks(before_text: str, after_text: str) -> float:
    """The ticks of every CPU between two reads of /proc/stat: a window's size, in the
    unit /proc/PID/stat counts a process's CPU in (collect.others)."""
    return _all_ticks(_cpu_deltas(parse_proc_stat(before_text), parse_proc_stat(after_text)))


def host_cpu_share(before_text: str, after_text: str) -> dict[str, float]:
    """Steal and idle, in percent of all CPUs, between two reads of /proc/stat: what the
    runner stores with every run (facts.host_cpu), collectors or not."""
    split = cpu_metrics(parse_proc_stat(before_text), parse_proc_stat(after_text), 0.0)
    return {
        f"{name}_pct": round(split[f"sys.cpu.{name}_pct"], 3)
        for name in ("steal", "idle")
        if f"sys.cpu.{name}_pct" in split
    }


class StealProbe(Probe):
    """Steal and idle over every run (host_cpu_share), collectors or not (collect.probe)."""

    name: ClassVar[str] = "steal"
    fact_names: ClassVar[tuple[str, ...]] = ("steal_pct", "idle_pct")

    def __init__(self, proc: Path = PROC) -> None:
        self.proc = proc
        self._before = self._after = ""

    def begin(self) -> None:
        self._before = read_proc_stat(self.proc)

    def end(self) -> None:
        self._after = read_proc_stat(self.proc)

    def facts(self) -> dict[str, float]:
        if not (self._before and self._after):
            return {}
        return dict(host_cpu_share(self._before, self._after))


def vm_metrics(before: dict[str, float], after: dict[str, float], elapsed_s: float) -> dict:
    out: dict[str, float] = {}
    for name in VMSTAT_DELTAS:
        if name in before and name in after:
            out[f"vm.{name}_delta"] = after[name] - before[name]
    if elapsed_s > 0:
        for name, metric in (
            ("nr_dirtied", "vm.dirtied_pages_per_s"),
            ("nr_written", "vm.written_pages_per_s"),
        ):
            if name in before and name in after:
                out[metric] = (after[name] - before[name]) / elapsed_s
    return out


def block_metrics(before: dict[str, float], after: dict[str, float], elapsed_s: float) -> dict:
    """Deltas of the device's I/O counters, busy percent and mean latencies."""
    d = {k: after[k] - before[k] for k in after if k in before and k != "in_flight"}
    out: dict[str, float] = {}
    for name in (
        "read_ios",
        "write_ios",
        "read_sectors",
        "write_sectors",
        "io_ticks_ms",
        "time_in_queue_ms",
        "flush_ios",
        "discard_ios",
        "read_merges",
        "write_merges",
    ):
        if name in d:
            out[f"blk.{name}"] = d[name]
    if elapsed_s > 0 and "io_ticks_ms" in d:
        out["blk.busy_pct"] = min(100.0, 100.0 * d["io_ticks_ms"] / (elapsed_s * 1000.0))
    if elapsed_s > 0 and "write_sectors" in d:
        out["blk.write_bytes_per_s"] = d["write_sectors"] * 512.0 / elapsed_s
    for op in ("read", "write", "flush"):
        if d.get(f"{op}_ios", 0) > 0 and f"{op}_ticks_ms" in d:
            out[f"blk.{op}_lat_ms_mean"] = d[f"{op}_ticks_ms"] / d[f"{op}_ios"]
    return out


# --------------------------------------------------------------------------
# Steady-state snapshots


@dataclass
class _Snapshot:
    stat: dict[str, float] = field(default_factory=dict)
    vmstat: dict[str, float] = field(default_factory=dict)
    block: dict[str, float] = field(default_factory=dict)
    throttle: dict[str, float] = field(default_factory=dict)  # "write.ios", "write.bytes"
    raw: dict[str, str] = field(default_factory=dict)


class SysstatCollector(Collector):
    """CPU split, context switches, VM writeback counters, block device counters."""

    name: ClassVar[str] = "sysstat"
    catalog: ClassVar[tuple[CatalogEntry, ...]] = (
        ("blk.*_pct", MetricDef("none", "%", "block device time busy / utilisation")),
        ("blk.*_lat_ms_mean", MetricDef("none", "ms", "device time per I/O (diskstats ticks/ios)")),
        ("blk.*_bytes_per_s", MetricDef("none", "B/s", "bytes per second at the block device")),
        ("blk.**", MetricDef("none", "", "block layer statistics")),
        ("throttle.*_ios", MetricDef("none", "events", "bios the blkio throttle counted")),
        ("throttle.*_bytes", MetricDef("none", "B", "bytes the blkio throttle counted")),
        ("throttle.**", MetricDef("none", "", "the blkio throttle's counters (target.limits)")),
        ("sys.cpu.*_pct", MetricDef("none", "%", "system-wide CPU time share by state")),
        ("sys.*_per_s", MetricDef("none", "1/s", "system-wide event rate (/proc/stat, vmstat)")),
        ("sys.elapsed_s", MetricDef("none", "s", "time the system statistics cover")),
        ("sys.**", MetricDef("none", "", "system-wide statistics")),
        ("vm.*_per_s", MetricDef("none", "pages/s", "pages dirtied or written back per second")),
        ("vm.*_delta", MetricDef("none", "events", "/proc/vmstat counter change during the run")),
        ("vm.*_pages_*", MetricDef("none", "pages", "dirty or writeback pages during the run")),
        ("vm.**", MetricDef("none", "", "virtual memory statistics (/proc/vmstat)")),
    )

    def __init__(
        self, *, proc: Path = PROC, sys_block: Path = SYS_BLOCK, sample_interval_s: float = 0.25
    ) -> None:
        self.proc = proc
        self.sys_block = sys_block
        self.sample_interval_s = sample_interval_s
        self._ctx: PointContext | None = None
        self._before: RampSnapshot[_Snapshot] | None = None
        self._ticker: Ticker | None = None
        self._peaks: dict[str, float] = {}
        self._gauge_sums: dict[str, float] = {}
        self._gauge_samples = 0
        self._ramp_end = 0.0

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not (PROC / "stat").is_file():
            return "/proc/stat is missing"
        return None

    def _block_stat_path(self) -> Path | None:
        if self._ctx is None or not self._ctx.device_name:
            return None
        path = self.sys_block / self._ctx.device_name / "stat"
        if path.is_file():
            return path
        # a partition: /sys/class/block/<part>/stat
        alt = self.sys_block.parent / "class" / "block" / self._ctx.device_name / "stat"
        return alt if alt.is_file() else None

    def _snapshot(self) -> _Snapshot:
        snap = _Snapshot()
        snap.raw["stat"] = (self.proc / "stat").read_text()
        snap.stat = parse_proc_stat(snap.raw["stat"])
        with contextlib.suppress(OSError):
            snap.raw["vmstat"] = (self.proc / "vmstat").read_text()
            snap.vmstat = parse_vmstat(snap.raw["vmstat"])
        block = self._block_stat_path()
        if block is not None:
            with contextlib.suppress(OSError):
                snap.raw["block"] = block.read_text()
                snap.block = parse_block_stat(snap.raw["block"])
        snap.throttle = self._throttle_counts()
        return snap

    def _throttle_counts(self) -> dict[str, float]:
        """The throttle's own counters for the device when a limit is set: a limit
        counts bios before the block layer merges them, which diskstats never sees."""
        if self._ctx is None or not self._ctx.throttle_root:
            return {}
        root = Path(self._ctx.throttle_root)
        out: dict[str, float] = {}
        try:
            devno = self.sys_block.parent / "class" / "block" / self._ctx.device_name / "dev"
            number = devno.read_text().strip()
            for unit, name in (("ios", "io_serviced"), ("bytes", "io_service_bytes")):
                text = (root / f"blkio.throttle.{name}").read_text()
                for direction, value in parse_throttle_counts(text, number).items():
                    out[f"{direction}.{unit}"] = value
        except OSError:
            return {}
        return out

    def begin(self, ctx: PointContext) -> None:
        self._ctx = ctx
        self._peaks, self._gauge_sums, self._gauge_samples = {}, {}, 0
        self._ramp_end = time.monotonic() + ctx.ramp_s
        try:
            self._before = RampSnapshot(self._snapshot, ctx.ramp_s)
        except (OSError, ValueError, IndexError) as exc:
            self._before = None
            raise Unavailable("cannot read /proc/stat") from exc
        self._ticker = Ticker(self._sample_gauges, self.sample_interval_s, "fslab-sysstat")
        self._ticker.start()

    def _sample_gauges(self) -> None:
        if time.monotonic() < self._ramp_end:
            return
        gauges: dict[str, float] = {}
        vm = parse_vmstat((self.proc / "vmstat").read_text())
        for name in VMSTAT_GAUGES:
            if name in vm:
                gauges[f"vm.{name}_pages"] = vm[name]
        block = self._block_stat_path()
        if block is not None:
            with contextlib.suppress(OSError):
                gauges["blk.in_flight"] = parse_block_stat(block.read_text()).get("in_flight", 0.0)
        for key, value in gauges.items():
            self._peaks[key] = max(self._peaks.get(key, 0.0), value)
            self._gauge_sums[key] = self._gauge_sums.get(key, 0.0) + value
        self._gauge_samples += 1

    def end(self) -> CollectorResult:
        assert self._before is not None and self._ticker is not None
        self._ticker.stop()
        self._before.cancel()
        after = self._snapshot()
        before = self._before.value
        elapsed_s = time.monotonic() - self._before.at
        metrics: dict[str, float] = {"sys.elapsed_s": elapsed_s}
        metrics.update(cpu_metrics(before.stat, after.stat, elapsed_s))
        metrics.update(vm_metrics(before.vmstat, after.vmstat, elapsed_s))
        metrics.update(block_metrics(before.block, after.block, elapsed_s))
        metrics.update(throttle_metrics(before.throttle, after.throttle))
        for key, peak in self._peaks.items():
            metrics[f"{key}_peak"] = peak
            metrics[f"{key}_mean"] = self._gauge_sums[key] / max(1, self._gauge_samples)
        metrics["sys.collector_cpu_s"] = self._ticker.cpu_s  # the gauge sampler, ramp included
        reasons = []
        if not after.block:
            device = self._ctx.device_name if self._ctx else None
            reasons.append(f"no block stats for device {device!r}")
        if self._ticker.error is not None:
            reasons.append(f"gauge sampler stopped: {self._ticker.error}")
        artifacts = {f"sysstat.{k}.before": v for k, v in before.raw.items()}
        artifacts.update({f"sysstat.{k}.after": v for k, v in after.raw.items()})
        return CollectorResult(metrics=metrics, artifacts=artifacts, reason="; ".join(reasons))
