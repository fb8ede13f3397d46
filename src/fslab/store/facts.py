"""The JSON columns of the store, typed as they are read back: a point's facts
(what the runner learnt around it), a campaign's device and its overrides.

The runner, the guest session and the agent write them as JSON (the columns
stay JSON: old databases open unchanged); the store parses them once, here,
so the reports and the analysis read attributes, not `facts.get("...")`.
Every field is optional: a point stored by an older fslab, or one that failed
before a fact was read, has fewer. Fields a collector or filesystem adds that
these models do not name are kept (extra fields), so nothing stored is lost
and an export round-trips. (The spec and the host facts have their own types:
fslab.spec.model.Spec and fslab.base.hostfacts.HostFacts.)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from fslab.base.timing import PointTiming


class _Facts(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    def stored(self) -> dict[str, Any]:
        """The facts as the store holds them (what was set, extras included)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_dict(self) -> dict[str, Any]:  # the reports' JSON (report.json_report.plain)
        return self.stored()


class FilesystemFacts(_Facts):
    """The filesystem read back after mkfs (dumpe2fs / xfs_info); fields differ by type."""

    fs_type: str = ""
    block_size_bytes: int | None = None
    cluster_size_bytes: int | None = None
    journal_size_bytes: int | None = None  # ext4
    log_size_bytes: int | None = None  # xfs
    features: list[str] | dict[str, Any] = []  # ext4: names; xfs: name -> value


class FillFacts(_Facts):
    """The pre-fill (fallocate) before the point ran."""

    bytes_filled: int = 0
    free_bytes_before: int | None = None
    free_bytes_after: int | None = None
    seconds: float | None = None


class DeviceLimitFacts(_Facts):
    """target.limits as applied to the device (blkio throttle)."""

    device: str = ""
    devno: str = ""
    how: str = "blkio throttle"
    blkio_root: str | None = None  # where the blkio hierarchy was (None before it was stored)
    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None


class HostCpuFacts(_Facts):
    """The machine's CPU while the workload ran: steal (/proc/stat) is time the
    hypervisor gave to other guests; the speed probe (collect.cpuspeed) sees a vCPU
    that runs slower without steal; other processes (collect.others) take CPUs in the
    machine itself. Each slows a CPU-bound workload."""

    steal_pct: float | None = None  # of all CPUs
    idle_pct: float | None = None
    speed_probe_us: float | None = None  # median thread-CPU time of the fixed loop
    speed_probe_samples: int | None = None
    speed_probe_cpu_pct: float | None = None  # the probe's own cost, of all CPUs
    # of all CPUs: user processes outside fslab's tree (collect.others), a busy neighbour
    others_cpu_pct: float | None = None


class DeviceFacts(_Facts):
    """What a campaign ran on: a loop image (ram, file) or a block device the guard accepted."""

    kind: str = ""  # "ram" | "file" | "device"
    size_bytes: int | None = None
    image_dir: str | None = None  # ram, file: where the image lives
    path: str | None = None  # device: as named by the user
    resolved_path: str | None = None  # device: after symlinks
    major_minor: str | None = None
    model: str | None = None
    serial: str | None = None


class CampaignOverrides(_Facts):
    """How the campaign was started beyond its spec (fslab run's command line and callers)."""

    source: str = ""  # the preset or spec file
    set: list[str] = []  # --set key=value, in order
    quick: bool = False
    collect: str | None = None  # the collection mode it was planned with
    candidate: str | None = None  # a bisection's candidate (kernel or commit)
    fleet_key: str | None = None  # the fleet run it belongs to
    imported_from: int | None = None  # its id in the database it was exported from


class GuestFacts(_Facts):
    """The guest a point ran in, as booted (fslab.guest.session.GuestSession.facts)."""

    kernel_release: str | None = None
    kernel_source: str | None = None
    nr_cpu_ids: int | None = None
    online_cpus: int | None = None
    possible_cpus: int | None = None
    memory_bytes: int | None = None
    accel: str | None = None  # "kvm" | "tcg"
    accel_reason: str | None = None
    boot: int | None = None  # which boot of the guest ran the point
    boot_s: float | None = None
    point_s_host: float | None = None  # the point's round trip, seen from the host


class PointFacts(_Facts):
    """Everything the runner recorded about one point besides its metrics."""

    config: str | None = None  # the filesystem configuration's label
    filesystem: FilesystemFacts | None = None
    mount_options_effective: str | None = None
    ext4_watermark_clusters: int | None = None
    ext4_watermark_bytes: int | None = None
    below_ext4_watermark: bool | None = None
    fill: FillFacts | None = None
    device_limits: DeviceLimitFacts | None = None
    timing: dict[str, float] | None = None  # fslab.base.timing.PointTiming, as stored
    collector_seconds: dict[str, dict[str, float]] | None = None  # name -> phase -> s
    umount: str | None = None  # set when the mount had to be detached lazily
    guest: GuestFacts | None = None  # a guest point: the guest as booted
    guest_point_s: float | None = None
    host_cpu: HostCpuFacts | None = None  # while the workload ran (runner)

    @property
    def point_timing(self) -> PointTiming | None:
        """Where the point's wall time went; None for points stored without it."""
        return PointTiming.from_facts({"timing": self.timing})
