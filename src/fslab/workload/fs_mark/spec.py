"""fs_mark's [workload] table."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from fslab.workload.base import WorkloadSpec

MAX_THREADS = 64  # fs_mark 3.3: "Max threads is 64"; -d directories likewise


class FsMarkWorkload(WorkloadSpec):
    """fs_mark -n files of -s bytes per thread, -L iterations, sync method -S."""

    kind: Literal["fs_mark"]
    files: Annotated[int, Field(ge=1, le=1_000_000)] = 1000  # -n, per thread and iteration
    size: Annotated[int, Field(ge=0, le=1024**3)] = 4096  # -s, bytes per file
    threads: Annotated[int, Field(ge=1, le=MAX_THREADS)] = 1  # -t
    dirs: Annotated[int, Field(ge=1, le=MAX_THREADS)] = 1  # -d directories; -t a multiple
    subdirs: Annotated[int, Field(ge=0, le=100_000)] = 0  # -D (0: files in the -d dir)
    files_per_subdir: Annotated[int, Field(ge=0, le=1_000_000)] = 0  # -N (0: fs_mark's)
    iterations: Annotated[int, Field(ge=1, le=1000)] = 1  # -L
    sync_method: Literal[0, 1, 2, 3, 4, 5, 6] = 1  # -S: 0 none, 1 fsync before close, ...

    @model_validator(mode="after")
    def _subdirs_for_files(self) -> FsMarkWorkload:
        # threads against dirs is checked per point (benchmark.py): either may be swept
        if self.files_per_subdir and not self.subdirs:
            raise ValueError("files_per_subdir (-N) needs subdirs (-D)")
        return self
