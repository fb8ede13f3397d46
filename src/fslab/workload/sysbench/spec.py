"""sysbench fileio's [workload] table."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from fslab.base.units import parse_size_bytes
from fslab.workload.base import WorkloadSpec

MAX_THREADS = 1024


class SysbenchWorkload(WorkloadSpec):
    """sysbench fileio: file_num files of file_total_size in all, laid out by prepare,
    then read or written by threads for the runtime."""

    kind: Literal["sysbench"]
    test_mode: Literal["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"] = "rndwr"
    file_num: Annotated[int, Field(ge=1, le=4096)] = 16
    file_total_size: str = "64MiB"
    file_block_size: Annotated[int, Field(ge=512, le=64 * 1024**2)] = 16384
    io_mode: Literal["sync", "async", "mmap"] = "sync"
    extra_flags: list[Literal["sync", "dsync", "direct"]] = Field(default_factory=list)
    fsync_freq: Annotated[int, Field(ge=0, le=1_000_000)] = 100  # 0: only at the end
    fsync_all: bool = False
    fsync_end: bool = True
    fsync_mode: Literal["fsync", "fdatasync"] = "fsync"
    rw_ratio: Annotated[float, Field(gt=0, le=1000)] = 1.5  # rndrw's reads per write
    threads: Annotated[int, Field(ge=1, le=MAX_THREADS)] = 1
    percentile: Annotated[int, Field(ge=1, le=100)] = 99  # the latency percentile printed

    @field_validator("file_total_size")
    @classmethod
    def _size_ok(cls, value: str) -> str:
        if not 1024**2 <= parse_size_bytes(value) <= 1024**4:
            raise ValueError("must be between 1MiB and 1TiB")
        return value
