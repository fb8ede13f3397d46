"""The experiment spec's model: what to build, what to run, what to sweep.

A spec is TOML validated by these pydantic models; every rule a spec must
keep is checked here, so a spec that validates is one fslab can run.
Reading a spec and its overrides is fslab.spec.load's job, and turning it
into the runs of a campaign is fslab.spec.points'.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from fslab.base.units import parse_duration_s, parse_size_bytes
from fslab.collect.base import CollectorOptions
from fslab.collect.registry import ALL_COLLECTORS
from fslab.spec.reported import ReportedSpec
from fslab.spec.setup import SetupSteps
from fslab.spec.vm import GUEST_AXES, GuestConfig
from fslab.target.limits import DeviceLimits
from fslab.target.md import ArrayKind
from fslab.workload.base import RunShape, WorkloadSpec
from fslab.workload.registry import BENCHMARKS, benchmark_for

FS_TYPES = ("ext4", "xfs", "btrfs")
WARMUP_RUNTIME_S = 5.0
"""The workload's runtime in a warm-up run (spec.warmup_form)."""
MAX_DEVICES = 8
"""Scratch devices under one filesystem (target.devices)."""
MAX_POINTS = 10_000
"""Runs in one campaign (configurations x sweep points x repetitions): weeks of machine
time at the shortest runtimes; a larger spec is a mistake, refused before expansion."""
SPECIAL_AXES = ("fill_percent", "fill_leave_free")
# Axes that are not workload options: fslab's fill axes and the guest's (kernel, CPUs)
NON_WORKLOAD_AXES = SPECIAL_AXES + GUEST_AXES

ScalarValue = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsSpec(_Strict):
    """Device limits (blkio throttle): IOPS as integers, bandwidth as sizes per second."""

    read_iops: Annotated[int, Field(ge=1)] | None = None
    write_iops: Annotated[int, Field(ge=1)] | None = None
    read_bps: str | int | None = None  # "250MiB" = 250 MiB/s
    write_bps: str | int | None = None

    @field_validator("read_bps", "write_bps")
    @classmethod
    def _bps_ok(cls, value: str | int | None) -> str | int | None:
        if value is not None and parse_size_bytes(value) < 4096:
            raise ValueError("must be at least 4KiB per second")
        return value

    def device_limits(self) -> DeviceLimits:
        def bps(value: str | int | None) -> int | None:
            return parse_size_bytes(value) if value is not None else None

        return DeviceLimits(
            read_iops=self.read_iops,
            write_iops=self.write_iops,
            read_bps=bps(self.read_bps),
            write_bps=bps(self.write_bps),
        )


class TargetSpec(_Strict):
    """Where filesystems are built: a RAM loop image (default), a file image, or a device."""

    kind: Literal["ram", "file", "device"] = "ram"
    size: str = "16GiB"
    path: str | None = None  # image path for kind=file, block device for kind=device
    limits: LimitsSpec | None = None  # blkio throttle on the point's scratch device
    # scratch devices, each a loop image of `size`: without `array` a btrfs configuration
    # spans them all (-d raid0 over N) and ext4 and XFS are made on the first; with
    # `array` every configuration is made on one md array over them
    devices: Annotated[int, Field(ge=1, le=MAX_DEVICES)] = 1
    array: ArrayKind | None = None

    @field_validator("size")
    @classmethod
    def _size_ok(cls, value: str) -> str:
        size_bytes = parse_size_bytes(value)
        if size_bytes < 64 * 1024**2:
            raise ValueError("must be at least 64MiB (xfs and ext4 journals need room)")
        if size_bytes > 64 * 1024**4:
            raise ValueError("is larger than 64TiB; that is not a scratch device")
        return value

    @model_validator(mode="after")
    def _devices_are_images(self) -> TargetSpec:
        if self.devices > 1 and self.kind == "device":
            raise ValueError("target.devices: several devices are loop images (kind ram or file)")
        if self.array is not None and self.devices < 2:
            raise ValueError(f"target.array = '{self.array}' needs target.devices = 2 or more")
        return self

    @model_validator(mode="after")
    def _path_matches_kind(self) -> TargetSpec:
        if self.kind in ("file", "device") and not self.path:
            raise ValueError(f"target.kind = '{self.kind}' needs target.path")
        if self.kind == "ram" and self.path:
            raise ValueError("target.path is only for kind 'file' or 'device'")
        return self

    @property
    def size_bytes(self) -> int:
        return parse_size_bytes(self.size)


class FilesystemSpec(_Strict):
    """One configuration: a filesystem type with its mkfs and mount options."""

    label: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")]
    type: Literal["ext4", "xfs", "btrfs"]
    mkfs_options: list[str] = []
    mount_options: list[str] = []
    description: str = ""
    # this configuration's own steps, after the spec's: a counterfactual such as an
    # overwrite pass (the workload's file written in full first) is a configuration
    setup: SetupSteps = []


def _workload_of_kind(value: Any, handler: ValidatorFunctionWrapHandler) -> WorkloadSpec:
    """[workload] validated by the model of its kind's benchmark (workload/registry.py),
    looked up when a spec is validated, so a benchmark registered later is a kind too."""
    if isinstance(value, WorkloadSpec):
        return value
    if not isinstance(value, Mapping) or "kind" not in value:
        raise PydanticCustomError(
            "union_tag_not_found",
            "Unable to extract tag using discriminator {discriminator}",
            {"discriminator": "'kind'"},
        )
    kind = value["kind"]
    if not isinstance(kind, str) or kind not in BENCHMARKS:
        expected = ", ".join(repr(k) for k in BENCHMARKS)
        raise PydanticCustomError(
            "union_tag_invalid",
            "Input tag {tag} found using {discriminator} does not match any of the "
            "expected tags: {expected_tags}",
            {"discriminator": "'kind'", "tag": str(kind), "expected_tags": expected},
        )
    return BENCHMARKS[kind].Spec.model_validate(value)


Workload = Annotated[SerializeAsAny[WorkloadSpec], WrapValidator(_workload_of_kind)]


class FillSpec(_Strict):
    """Pre-fill each fresh filesystem before the workload (fast: fallocate)."""

    percent: Annotated[float, Field(ge=0, lt=100)] | None = None
    leave_free: str | None = None

    @field_validator("leave_free")
    @classmethod
    def _leave_free_ok(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size_bytes(value)  # its ValueError is reported at fill.leave_free
        return value

    @model_validator(mode="after")
    def _one_of(self) -> FillSpec:
        if self.percent is not None and self.leave_free is not None:
            raise ValueError("give fill.percent or fill.leave_free, not both")
        return self


class RunSpec(_Strict):
    """Repetitions, order and timing."""

    repeat: Annotated[int, Field(ge=1, le=1000)] = 1
    warmup: Annotated[int, Field(ge=0, le=10)] = 1  # discarded runs per configuration, first
    # adaptive: scan the first configuration's curve coarsely; the campaign's questions add
    # points where it bends and the other configurations where the answer needs them
    adaptive: bool = False
    order: Literal["interleaved", "sequential", "random"] = "interleaved"
    runtime: str | None = None  # default: the workload's own runtime, else 30s
    ramp: str = "0s"
    seed: int = 0  # for order = random
    timeout_factor: Annotated[float, Field(ge=1.5, le=100)] = 3.0
    setup_timeout: str = "120s"  # added to the point timeout: file layout, start-up, fsyncs

    @field_validator("runtime", "ramp", "setup_timeout")
    @classmethod
    def _duration_ok(cls, value: str | None) -> str | None:
        if value is not None:
            seconds = parse_duration_s(value)
            if seconds > 7 * 24 * 3600:
                raise ValueError("is longer than a week")
        return value

    @field_validator("setup_timeout")
    @classmethod
    def _setup_timeout_ok(cls, value: str) -> str:
        if parse_duration_s(value) < 1:
            raise ValueError("must be at least 1s")
        return value

    @field_validator("runtime")
    @classmethod
    def _runtime_positive(cls, value: str | None) -> str | None:
        if value is not None and parse_duration_s(value) <= 0:
            raise ValueError("must be greater than 0")
        return value


class _CollectTable(_Strict):
    """Which collectors run at each point (on by default where the machine supports
    them), and their options: `<name> = true|false`, `<name>_<option> = value`.

    The fields are the collectors' own (collect/registry.py): each declares its
    options as a model, and CollectSpec below is built from them.
    """

    def enabled(self) -> list[str]:
        return [name for name in ALL_COLLECTORS if getattr(self, name)]

    def options_for(self, name: str) -> CollectorOptions:
        """The collector's options as this spec sets them."""
        options = ALL_COLLECTORS[name].Options
        return options(
            **{field: getattr(self, f"{name}_{field}") for field in options.model_fields}
        )


def _collect_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {name: (bool, True) for name in ALL_COLLECTORS}
    for name, cls in ALL_COLLECTORS.items():
        for field_name, info in cls.Options.model_fields.items():
            fields[f"{name}_{field_name}"] = (info.annotation, info)
    return fields


if TYPE_CHECKING:
    CollectSpec = _CollectTable
else:
    CollectSpec = create_model("CollectSpec", __base__=_CollectTable, **_collect_fields())


class VmSpec(GuestConfig):
    """[vm]: every point runs in a qemu guest (GuestConfig; the kernel may come from
    sweep.kernel instead)."""

    kernel: str | None = None  # type: ignore[assignment]


SweepValues = list[ScalarValue]


class Spec(_Strict):
    """A whole experiment."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")]
    description: str = ""
    target: TargetSpec = TargetSpec()
    filesystems: Annotated[list[FilesystemSpec], Field(min_length=1)]
    workload: Workload
    sweep: dict[str, Annotated[SweepValues, Field(min_length=1)]] = {}
    fill: FillSpec = FillSpec()
    setup: SetupSteps = []  # done by fslab between mount and the workload (spec/setup.py)
    run: RunSpec = RunSpec()
    collect: CollectSpec = CollectSpec()
    quick: dict[str, Any] = {}  # overrides applied by --quick: {"set": {...}, "filesystems": [...]}
    reported: ReportedSpec | None = None  # what a bug report said (fslab reproduce)
    vm: VmSpec | None = None  # run every point in a qemu guest (docs/guests.md)

    @field_validator("filesystems")
    @classmethod
    def _unique_labels(cls, value: list[FilesystemSpec]) -> list[FilesystemSpec]:
        labels = [fs.label for fs in value]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"labels must be unique; repeated: {', '.join(duplicates)}")
        return value

    @model_validator(mode="after")
    def _devices_need_btrfs(self) -> Spec:
        several = self.target.devices > 1 and self.target.array is None
        if several and not any(fs.type == "btrfs" for fs in self.filesystems):
            raise ValueError(
                f"target.devices: {self.target.devices} devices under one filesystem is "
                "btrfs's own (mkfs.btrfs -d raid0 ...); for ext4 and XFS set target.array "
                "('md-raid0' or 'md-raid1')"
            )
        return self

    @model_validator(mode="after")
    def _target_fits_filesystems(self) -> Spec:
        has_xfs = any(fs.type == "xfs" for fs in self.filesystems)
        if self.target.kind != "device" and has_xfs and self.target.size_bytes < 320 * 1024**2:
            raise ValueError("target.size: mkfs.xfs needs at least 320MiB")
        return self

    @model_validator(mode="after")
    def _points_bounded(self) -> Spec:
        count = len(self.filesystems) * (self.run.repeat + self.run.warmup)
        for values in self.sweep.values():
            count *= len(values)
        if count > MAX_POINTS:
            raise ValueError(
                f"sweep: the spec has {count} runs (configurations x sweep values x "
                f"run.repeat); a campaign runs at most {MAX_POINTS}"
            )
        return self

    @model_validator(mode="after")
    def _sweep_axes_ok(self) -> Spec:
        for axis, values in self.sweep.items():
            _check_axis(axis, values, self.workload)
        return self

    @model_validator(mode="before")
    @classmethod
    def _guest_axes_imply_vm(cls, data: Any) -> Any:
        """A sweep over kernel, cpus or possible_cpus runs in guests, [vm] or not."""
        if isinstance(data, dict) and data.get("vm") is None:
            sweep = data.get("sweep")
            if isinstance(sweep, dict) and any(axis in sweep for axis in GUEST_AXES):
                return {**data, "vm": {}}
        return data

    @model_validator(mode="after")
    def _guests_ok(self) -> Spec:
        """Every guest the points run in is a valid one, checked before anything boots."""
        guest_axes = {axis: self.sweep[axis] for axis in GUEST_AXES if axis in self.sweep}
        if self.vm is None:
            return self
        if self.vm.kernel is None and "kernel" not in guest_axes:
            raise ValueError(
                "vm.kernel: a guest needs a kernel: give vm.kernel, sweep.kernel or "
                "`fslab run --kernel RELEASE|PATH`"
            )
        if self.target.kind != "ram":
            raise ValueError(
                f"target.kind: '{self.target.kind}': a guest builds its filesystems on RAM "
                "loop images only (target.kind = 'ram')"
            )
        for combo in sweep_combinations(guest_axes):
            try:
                self.guest_of(dict(combo))
            except ValidationError as exc:
                field = f"sweep.{next(iter(guest_axes))}" if guest_axes else "vm"
                where = ", ".join(f"{k}={v}" for k, v in combo)
                problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                raise ValueError(f"{field}: the guest {where}: {problems}") from None
        return self

    @property
    def runs_in_guest(self) -> bool:
        return self.vm is not None

    def guest_of(self, sweep: Mapping[str, ScalarValue]) -> GuestConfig:
        """The guest a point with these sweep values runs in ([vm] and the guest axes)."""
        assert self.vm is not None, "guest_of on a host spec"
        update = {axis: sweep[axis] for axis in GUEST_AXES if axis in sweep}
        return GuestConfig.model_validate({**self.vm.model_dump(), **update})

    def warmup_form(self) -> Spec:
        """The spec a warm-up run runs: the workload for at most WARMUP_RUNTIME_S, no ramp.

        Enough to lay the files out and drive the workload through the memory,
        caches and threads a measured run uses; not a measurement.
        """
        runtime = min(self.runtime_s, WARMUP_RUNTIME_S)
        run = self.run.model_copy(update={"runtime": f"{runtime:g}s", "ramp": "0s"})
        return self.model_copy(update={"run": run})

    @property
    def runtime_s(self) -> float:
        if self.run.runtime is not None:
            return parse_duration_s(self.run.runtime)
        own = benchmark_for(self.workload).own_runtime_s(self.workload)
        return own if own is not None else 30.0

    @property
    def ramp_s(self) -> float:
        return parse_duration_s(self.run.ramp)

    @property
    def run_shape(self) -> RunShape:
        """[run]'s times as the workload's benchmark sees them."""
        return RunShape(self.runtime_s, self.ramp_s, runtime_given=self.run.runtime is not None)


def workload_axes(sweep: Mapping[str, ScalarValue]) -> dict[str, ScalarValue]:
    """Sweep values that are workload options (fill and guest axes are fslab's own)."""
    return {k: v for k, v in sweep.items() if k not in NON_WORKLOAD_AXES}


def _check_axis(axis: str, values: SweepValues, workload: WorkloadSpec) -> None:
    if len(set(map(str, values))) != len(values):
        raise ValueError(f"sweep.{axis} repeats a value: {values}")
    if axis in GUEST_AXES:
        _check_guest_axis(axis, values)
        return
    if axis == "fill_percent":
        for value in values:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value < 100
            ):
                raise ValueError(
                    f"sweep.fill_percent values must be numbers in [0, 100): {value!r}"
                )
        return
    if axis == "fill_leave_free":
        for value in values:
            if value not in ("", "none"):
                try:
                    parse_size_bytes(str(value))
                except ValueError as exc:
                    raise ValueError(f"sweep.fill_leave_free: {exc}") from None
        return
    benchmark_for(workload).check_axis(axis, values)


def _check_guest_axis(axis: str, values: SweepValues) -> None:
    for value in values:
        if axis == "kernel":
            if not isinstance(value, str) or not value:
                raise ValueError(
                    f"sweep.kernel: values must be kernel releases or paths: {value!r}"
                )
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"sweep.{axis}: values must be integers of at least 1: {value!r}")


Combo = tuple[tuple[str, ScalarValue], ...]


def sweep_combinations(sweep: Mapping[str, SweepValues]) -> list[Combo]:
    """Cartesian product of sweep axes, in declaration order (no axes: one empty combo)."""
    axes = list(sweep)
    return [tuple(zip(axes, values, strict=True)) for values in itertools.product(*sweep.values())]
