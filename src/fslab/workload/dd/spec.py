"""dd's [workload] table."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from fslab.base.units import parse_size_bytes
from fslab.workload.base import WorkloadSpec


class DdWorkload(WorkloadSpec):
    """dd from /dev/zero into a file, once or repeated (write + delete) for the runtime;
    or (read = true) dd reading a file fslab wrote first, from a cold page cache."""

    kind: Literal["dd"]
    bs: str = "1M"
    count: Annotated[int, Field(gt=0, le=10_000_000)] = 10
    conv: str = ""  # comma-separated, as dd takes it ("fsync")
    oflag: str = ""
    iflag: str = ""  # a read's input flags ("direct")
    mode: Literal["once", "sustained"] = "once"
    # read bs x count bytes of a file of zeroes written (and synced) before the measured
    # window, its cached pages dropped before every read
    read: bool = False
    size: str | None = None  # a read's file: read whole, in bs blocks (count follows)

    @field_validator("size")
    @classmethod
    def _size_ok(cls, value: str | None) -> str | None:
        if value is not None and parse_size_bytes(value) <= 0:
            raise ValueError("must be a positive size")
        return value

    @model_validator(mode="after")
    def _size_is_a_read_s(self) -> DdWorkload:
        if self.size is not None and not self.read:
            raise ValueError("size: the file a read reads (read = true); a write has count")
        return self

    @property
    def blocks(self) -> int:
        """How many bs blocks one dd copies: count, or a read's size in bs blocks."""
        if self.read and self.size is not None:
            return max(1, parse_size_bytes(self.size) // parse_size_bytes(self.bs))
        return self.count

    @field_validator("bs")
    @classmethod
    def _bs_ok(cls, value: str) -> str:
        if not 0 < parse_size_bytes(value) <= 1024**3:
            raise ValueError("must be between 1 byte and 1GiB")
        return value
