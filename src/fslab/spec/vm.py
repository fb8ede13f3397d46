"""The guest a point runs in: kernel, CPUs, possible CPUs, memory, accelerator.

A pydantic model like the spec's sections, so the spec's `[vm]` table can be
this model as it is, and a sweep over `kernel`, `cpus` or `possible_cpus`
is `config.with_axes(point.sweep_dict)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fslab.base.units import parse_duration_s, parse_size_bytes

GUEST_AXES = ("kernel", "cpus", "possible_cpus")
Accel = Literal["kvm", "tcg"]

# What the guest needs beside the loop image: its kernel, the page cache of
# the filesystem under test, fslab's Python and the tools (docs/guests.md).
MEMORY_HEADROOM_BYTES = 1024**3
MIN_MEMORY_BYTES = 2 * 1024**3
# The kernel sets per-CPU areas aside for every possible CPU; fslab allows twice
# what it was measured to take (docs/guests.md).
PERCPU_BYTES_PER_POSSIBLE_CPU = 1024**2
# Boot deadlines, with room over the boots measured (docs/guests.md).
BOOT_TIMEOUT_S = {"tcg": 300.0, "kvm": 120.0}


class GuestConfig(BaseModel):
    """One guest: which kernel, how many vCPUs and possible CPUs, how much memory."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kernel: Annotated[str, Field(min_length=1)]  # release, series ("6.1") or a path
    modules: str | None = None  # modules directory for a bare bzImage
    cpus: Annotated[int, Field(ge=1)] = 2  # the accelerator's limit is checked at boot
    possible_cpus: Annotated[int, Field(ge=1)] | None = None  # nr_cpu_ids; <= CONFIG_NR_CPUS
    memory: str | None = None  # default: the target image + 1 GiB, at least 2 GiB
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    boot_timeout: str | None = None  # default: 300 s under TCG, 120 s under KVM

    @field_validator("memory")
    @classmethod
    def _memory_ok(cls, value: str | None) -> str | None:
        if value is not None and parse_size_bytes(value) < 256 * 1024**2:
            raise ValueError("must be at least 256MiB")
        return value

    @field_validator("boot_timeout")
    @classmethod
    def _timeout_ok(cls, value: str | None) -> str | None:
        if value is not None and parse_duration_s(value) <= 0:
            raise ValueError("must be greater than 0")
        return value

    @model_validator(mode="after")
    def _possible_covers_online(self) -> GuestConfig:
        if self.possible_cpus is not None and self.possible_cpus < self.cpus:
            raise ValueError(
                f"possible_cpus ({self.possible_cpus}) must be at least cpus ({self.cpus}): "
                "the kernel cannot bring up more CPUs than are possible"
            )
        return self

    def with_axes(self, sweep: Mapping[str, object]) -> GuestConfig:
        """This guest with a point's `kernel`, `cpus` or `possible_cpus` sweep values."""
        update = {axis: sweep[axis] for axis in GUEST_AXES if axis in sweep}
        if not update:
            return self
        return GuestConfig.model_validate({**self.model_dump(), **update})

    def memory_bytes(self, target_bytes: int) -> int:
        """Guest RAM: as configured, else room for a RAM loop image of target_bytes
        beside what the kernel keeps for each possible CPU."""
        if self.memory is not None:
            return parse_size_bytes(self.memory)
        percpu = (self.possible_cpus or self.cpus) * PERCPU_BYTES_PER_POSSIBLE_CPU
        return max(MIN_MEMORY_BYTES, target_bytes + MEMORY_HEADROOM_BYTES + percpu)

    def boot_timeout_s(self, accel: Accel) -> float:
        if self.boot_timeout is not None:
            return parse_duration_s(self.boot_timeout)
        return BOOT_TIMEOUT_S[accel]
