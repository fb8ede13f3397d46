"""dd's [workload] table."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from fslab.base.units import parse_size_bytes
from fslab.workload.base import WorkloadSpec


class DdWorkload(WorkloadSpec):
    """dd from /dev/zero into a file, once or repeated (write + delete) for the runtime."""

    kind: Literal["dd"]
    bs: str = "1M"
    count: Annotated[int, Field(gt=0, le=10_000_000)] = 10
    conv: str = ""  # comma-separated, as dd takes it ("fsync")
    oflag: str = ""
    mode: Literal["once", "sustained"] = "once"

    @field_validator("bs")
    @classmethod
    def _bs_ok(cls, value: str) -> str:
        if not 0 < parse_size_bytes(value) <= 1024**3:
            raise ValueError("must be between 1 byte and 1GiB")
        return value
