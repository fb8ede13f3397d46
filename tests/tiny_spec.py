"""The smallest campaign that still runs real mkfs, mount and fio: for tests
that are about what happens around a campaign (a fleet, a store outage)."""

from __future__ import annotations

import tomllib
from typing import Any

from fslab.spec.load import validate_spec


def tiny_spec(name: str, numjobs: tuple[int, ...] = (1,), repeat: int = 2) -> str:
    """One ext4 configuration, 1 s of 16 KiB fsync'd writes per point."""
    return f"""
name = "{name}"
[target]
size = "512MiB"
[[filesystems]]
label = "ext4"
type = "ext4"
[workload]
kind = "fio"
[workload.options]
rw = "randwrite"
ioengine = "sync"
bs = "16k"
filesize = "2m"
fsync = 1
thread = true
[sweep]
numjobs = {list(numjobs)}
[run]
repeat = {repeat}
runtime = "1s"
"""


def tiny_spec_data(name: str = "t") -> dict[str, Any]:
    """The tiny spec as a campaign stores it (the store reads specs back validated)."""
    return validate_spec(tomllib.loads(tiny_spec(name))).model_dump(mode="json")
