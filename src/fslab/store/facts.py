"""The JSON columns of the store, typed both ways: a point's facts (what the
runner learnt around it), a campaign's device and its overrides.

Written strictly, read leniently. The models forbid unknown keys
(extra="forbid"), so a writer (the runner, the guest session and agent) that
builds them with a misspelt or unmodelled key fails at once, where it writes,
instead of storing a key that reads back as None. Reading is a separate path,
`read()` and `read_json()` (the store's rows, `fslab import` of an export):
it accepts unknown keys and keeps them as extra fields, serialised with the
rest, so a campaign stored by another fslab reads, renders and exports
unchanged. Every key the runner, the guest session and agent write, and every
key the recorded campaigns in tests/data carry, is modelled; the lenient read
is for what other versions may have written. Values are typed on both paths.

The columns stay JSON (old databases open unchanged); the store parses them
once, here, so the reports and the analysis read attributes, not
`facts.get("...")`. Every field is optional: a point stored by an older fslab,
or one that failed before a fact was read, has fewer. (The spec and the host
facts have their own types: fslab.spec.model.Spec and
fslab.base.hostfacts.HostFacts.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from fslab.base.timing import PointTiming


class FactsModel(BaseModel):
    """A JSON column's type: strict when built, lenient when read (read(), read_json())."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def read(cls, data: Mapping[str, Any]) -> Self:
        """Stored facts as their type, unknown keys kept (the lenient read path)."""
        return cls.model_validate(data, extra="allow")

    @classmethod
    def read_json(cls, text: str) -> Self:
        """read(), from the JSON text of a column."""
        return cls.model_validate_json(text, extra="allow")

    def updated(self, **changes: Any) -> Self:
        """These facts with `changes` set, checked as the constructor checks them (an
        unknown name or a wrong type raises ValidationError)."""
        checked = type(self).model_validate(changes)
        return self.model_copy(update={name: getattr(checked, name) for name in changes})

    @model_serializer(mode="wrap")
    def _with_extras(self, handler: SerializerFunctionWrapHandler) -> Any:
        # the read path's extras are kept in model_extra, which a model configured with
        # extra="forbid" does not serialise by itself: keep them, so an export round-trips
        out = handler(self)
        if self.model_extra and isinstance(out, dict):
            out.update(self.model_extra)
        return out

    def stored(self) -> dict[str, Any]:
        """The facts as the store holds them (what was set, extras included)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_dict(self) -> dict[str, Any]:  # the reports' JSON (report.json_report.plain)
        return self.stored()


class FilesystemFacts(FactsModel):
    """The filesystem read back after mkfs (fslab.target.fs.describe_filesystem: dumpe2fs,
    xfs_info, btrfs filesystem show); the fields differ by type, `raw` is the tool's text.
    `error` instead when it could not be read."""

    fs_type: str = ""
    error: str | None = None  # the describing tool failed: nothing else was read
    raw: str | None = None
    label: str | None = None  # ext4, btrfs
    uuid: str | None = None  # ext4, btrfs
    block_size_bytes: int | None = None
    cluster_size_bytes: int | None = None
    inode_size_bytes: int | None = None  # ext4, xfs
    features: list[str] | dict[str, Any] = []  # ext4: names; xfs: name -> value
    # ext4 (dumpe2fs -h)
    block_count: int | None = None
    reserved_block_count: int | None = None
    free_blocks: int | None = None
    inode_count: int | None = None
    mount_options: str | None = None  # the superblock's default mount options
    journal_features: list[str] | None = None
    journal_blocks: int | None = None
    journal_size_bytes: int | None = None
    fields: dict[str, str] | None = None  # every "name: value" line
    # xfs (xfs_info)
    data_blocks: int | None = None
    agcount: int | None = None
    agsize_blocks: int | None = None
    sector_size_bytes: int | None = None
    log_internal: bool | None = None
    log_blocks: int | None = None
    log_size_bytes: int | None = None
    sections: dict[str, dict[str, str]] | None = None  # section -> key -> value
    # btrfs (btrfs filesystem show)
    total_devices: int | None = None
    bytes_used: int | None = None
    devices: list[dict[str, Any]] | None = None  # devid, size_bytes, used_bytes, path


class FillFacts(FactsModel):
    """The pre-fill (fallocate) before the point ran (fslab.target.fill.FillResult)."""

    bytes_filled: int = 0
    free_bytes_before: int | None = None
    free_bytes_after: int | None = None
    seconds: float | None = None


class ArrayFacts(FactsModel):
    """target.array as the kernel made it (/sys/block/mdN/md)."""

    device: str = ""
    level: str = ""  # raid0, raid1
    members: list[str] = []
    chunk_bytes: int | None = None  # raid0's stripe unit


class DeviceLimitFacts(FactsModel):
    """target.limits as applied to the device (blkio throttle)."""

    device: str = ""
    devno: str = ""
    how: str = "blkio throttle"
    blkio_root: str | None = None  # where the blkio hierarchy was (None before it was stored)
    read_iops: int | None = None
    write_iops: int | None = None
    read_bps: int | None = None
    write_bps: int | None = None


class HostCpuFacts(FactsModel):
    """The machine's CPU while the workload ran, from the runner's probes (every fact
    here is one of collect.registry.ALL_PROBES's): steal (/proc/stat) is time the
    hypervisor gave to other guests; the speed probe (collect.cpuspeed) sees a vCPU
    that runs slower without steal; other processes (collect.others) take CPUs in the
    machine itself. Each slows a CPU-bound workload."""

    steal_pct: float | None = None  # of all CPUs
    idle_pct: float | None = None
    # of all CPUs: user processes outside fslab's tree (collect.others), a busy neighbour
    others_cpu_pct: float | None = None
    speed_probe_us: float | None = None  # median thread-CPU time of the fixed loop
    speed_probe_samples: int | None = None
    speed_probe_cpu_pct: float | None = None  # the probe's own cost, of all CPUs


class DeviceFacts(FactsModel):
    """What a campaign ran on: a loop image (ram, file) or a block device the guard accepted."""

    kind: str = ""  # "ram" | "file" | "device"
    size_bytes: int | None = None
    image_dir: str | None = None  # ram, file: where the image lives
    path: str | None = None  # device: as named by the user
    resolved_path: str | None = None  # device: after symlinks
    major_minor: str | None = None
    model: str | None = None
    serial: str | None = None


class CampaignOverrides(FactsModel):
    """How the campaign was started beyond its spec (fslab run's command line and callers)."""

    source: str = ""  # the preset or spec file
    set: list[str] = []  # --set key=value, in order
    quick: bool = False
    collect: str | None = None  # the collection mode it was planned with
    candidate: str | None = None  # a bisection's candidate (kernel or commit)
    fleet_key: str | None = None  # the fleet run it belongs to
    imported_from: int | None = None  # its id in the database it was exported from


class GuestFacts(FactsModel):
    """The guest a point ran in, as booted (fslab.guest.session.GuestSession.facts): what
    the agent read inside it (fslab.guest.protocol.GuestFacts), the kernel
    (fslab.guest.kernels.Kernel.facts) and how the host started it."""

    kernel_release: str | None = None
    kernel_cmdline: str | None = None
    kernel_source: str | None = None
    kernel_image: str | None = None
    kernel_config_sha256: str | None = None
    kernel_config: dict[str, str] | None = None  # the options fslab checks, as set
    nr_cpu_ids: int | None = None
    online_cpus: int | None = None
    cpus: int | None = None  # as asked ([vm] cpus)
    possible_cpus: int | None = None  # as asked ([vm] possible_cpus)
    memory_bytes: int | None = None  # MemTotal, inside
    memory_bytes_requested: int | None = None
    shm_bytes: int | None = None  # /dev/shm's size: the largest RAM image it takes
    agent_started_uptime_s: float | None = None  # the kernel's and init's share of the boot
    agent_ready_uptime_s: float | None = None  # + Python, fslab's imports and the setup
    setup_notes: list[str] | None = None  # what the agent's setup could not do
    accel: str | None = None  # "kvm" | "tcg"
    accel_reason: str | None = None
    boot: int | None = None  # which boot of the guest ran the point
    boot_s: float | None = None
    point_s_host: float | None = None  # the point's round trip, seen from the host


class PointFacts(FactsModel):
    """Everything the runner recorded about one point besides its metrics."""

    config: str | None = None  # the filesystem configuration's label
    filesystem: FilesystemFacts | None = None
    mount_options_effective: str | None = None
    ext4_watermark_clusters: int | None = None
    ext4_watermark_bytes: int | None = None
    below_ext4_watermark: bool | None = None
    fill: FillFacts | None = None
    device_limits: DeviceLimitFacts | None = None
    array: ArrayFacts | None = None  # target.array: the md array the filesystem was made on
    timing: dict[str, float] | None = None  # fslab.base.timing.PointTiming, as stored
    collector_seconds: dict[str, dict[str, float]] | None = None  # name -> phase -> s
    umount: str | None = None  # set when the mount had to be detached lazily
    guest: GuestFacts | None = None  # a guest point: the guest as booted
    guest_point_s: float | None = None  # a guest point: its time inside the guest
    host_cpu: HostCpuFacts | None = None  # while the workload ran (the runner's probes)

    @property
    def point_timing(self) -> PointTiming | None:
        """Where the point's wall time went; None for points stored without it."""
        return PointTiming.from_facts({"timing": self.timing})
