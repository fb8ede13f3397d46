"""Facts about the host that a result needs to be trusted and reproduced.

nr_cpu_ids (possible CPUs) matters as much as the online count: ext4's
free-cluster watermark scales with it, which is the second seed report's bug.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import fslab

EXT4_MIN_PERCPU_BATCH = 32


def parse_cpu_list(text: str) -> list[int]:
    """Parse a sysfs CPU list such as '0-3,8,10-11'."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.extend(range(int(low), int(high) + 1))
        else:
            cpus.append(int(part))
    return cpus


def percpu_counter_batch(online_cpus: int) -> int:
    """The kernel's percpu_counter_batch: max(32, 2 * online CPUs)."""
    return max(EXT4_MIN_PERCPU_BATCH, 2 * online_cpus)


def ext4_free_clusters_watermark(online_cpus: int, nr_cpu_ids: int) -> int:
    """EXT4_FREECLUSTERS_WATERMARK in clusters: 4 * percpu_counter_batch * nr_cpu_ids.

    Below this many free clusters, each ext4 allocation sums the free-cluster
    per-CPU counters over every possible CPU (the slow path of the second report).
    """
    return 4 * percpu_counter_batch(online_cpus) * nr_cpu_ids


@dataclass(frozen=True)
class HostFacts:
    hostname: str
    kernel_release: str
    kernel_cmdline: str
    cpu_model: str
    cpu_governor: str  # cpufreq scaling governor(s); "none" without cpufreq (most VMs)
    online_cpus: int
    nr_cpu_ids: int
    memory_bytes: int
    fio_version: str
    perf_version: str
    e2fsprogs_version: str
    xfsprogs_version: str
    fslab_version: str
    ext4_watermark_clusters: int
    # the facts a stored campaign recorded (older fslab versions recorded fewer);
    # None: all of them (collected here)
    recorded: frozenset[str] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, object]:
        """The facts as stored: only those recorded, so a stored campaign round-trips."""
        return {name: getattr(self, name) for name in _FACTS if self.has(name)}

    def has(self, name: str) -> bool:
        return name in _FACTS and (self.recorded is None or name in self.recorded)

    def fact(self, name: str) -> str | int | None:
        """A fact by name; None when the campaign did not record it."""
        return getattr(self, name) if self.has(name) else None

    def shown(self, name: str, missing: str = "?") -> str:
        """A fact as text, `missing` when the campaign did not record it."""
        value = self.fact(name)
        return str(value) if value is not None else missing

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> HostFacts:
        """The facts a campaign stored; a field an older fslab did not record reads as
        'unknown' (or 0), so every stored campaign has the same typed facts, and
        `fact()` says None for it."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in _FACTS:
                continue
            default: Any = 0 if f.type in (int, "int") else UNKNOWN
            raw = data.get(f.name, default)
            values[f.name] = int(raw) if isinstance(default, int) else str(raw)
        return cls(**values, recorded=frozenset(data).intersection(_FACTS))


UNKNOWN = "unknown"
_FACTS = tuple(f.name for f in fields(HostFacts) if f.name != "recorded")  # in field order


def host_name() -> str:
    """The name this host's campaigns are stored under: $FSLAB_HOST_NAME (a fleet sets
    it to the inventory name), else the hostname."""
    return os.environ.get("FSLAB_HOST_NAME") or platform.node()


def _read(path: str, default: str = "") -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return default


def _tool_version(argv: list[str]) -> str:
    if shutil.which(argv[0]) is None:
        return "not installed"
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (proc.stdout + proc.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


def _cpu_model(cpuinfo: str) -> str:
    match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def _memory_bytes(meminfo: str) -> int:
    match = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def memory_total_bytes() -> int:
    """MemTotal of this machine (or guest)."""
    return _memory_bytes(_read("/proc/meminfo"))


def cpu_governor() -> str:
    """The CPUs' cpufreq governors, e.g. "performance" or "powersave,performance"."""
    found = sorted(
        {
            path.read_text().strip()
            for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")
            if path.is_file()
        }
    )
    return ",".join(found) or "none"


def online_cpu_count() -> int:
    online = _read("/sys/devices/system/cpu/online")
    return len(parse_cpu_list(online)) if online else os.cpu_count() or 1


def nr_cpu_ids() -> int:
    """Highest possible CPU number + 1, as the kernel's nr_cpu_ids."""
    possible = _read("/sys/devices/system/cpu/possible")
    return max(parse_cpu_list(possible)) + 1 if possible else online_cpu_count()


def collect_host_facts() -> HostFacts:
    online = online_cpu_count()
    possible = nr_cpu_ids()
    return HostFacts(
        hostname=platform.node(),
        kernel_release=platform.release(),
        kernel_cmdline=_read("/proc/cmdline").strip(),
        cpu_model=_cpu_model(_read("/proc/cpuinfo")),
        cpu_governor=cpu_governor(),
        online_cpus=online,
        nr_cpu_ids=possible,
        memory_bytes=memory_total_bytes(),
        fio_version=_tool_version(["fio", "--version"]),
        perf_version=_tool_version(["perf", "--version"]),
        e2fsprogs_version=_tool_version(["mke2fs", "-V"]),
        xfsprogs_version=_tool_version(["mkfs.xfs", "-V"]),
        fslab_version=fslab.__version__,
        ext4_watermark_clusters=ext4_free_clusters_watermark(online, possible),
    )
