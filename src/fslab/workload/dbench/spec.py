"""dbench's [workload] table."""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import Field, field_validator

from fslab.workload.base import WorkloadSpec

LOADFILE_DIR = "/usr/share/dbench"  # where Debian's dbench ships its loadfiles
MAX_CLIENTS = 1024


class DbenchWorkload(WorkloadSpec):
    """dbench -c LOADFILE N: N clients replay a file server's operations for the runtime."""

    kind: Literal["dbench"]
    clients: Annotated[int, Field(ge=1, le=MAX_CLIENTS)] = 1
    loadfile: str = f"{LOADFILE_DIR}/client.txt"
    sync: bool = False  # -s: open files O_SYNC
    sync_dirs: bool = False  # -S: fsync directories after changes
    fsync: bool = False  # -F: fsync after each write

    @field_validator("loadfile")
    @classmethod
    def _shipped_loadfile(cls, value: str) -> str:
        """A loadfile names the paths dbench creates and deletes (relative ones may climb
        out with ..): only the loadfiles the dbench package ships are taken."""
        if os.path.dirname(value) != LOADFILE_DIR or os.path.normpath(value) != value:
            raise ValueError(f"must be a loadfile dbench ships, in {LOADFILE_DIR}/ (not {value!r})")
        return value
