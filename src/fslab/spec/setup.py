"""A spec's setup steps: what fslab does between mount and the workload, as typed data.

A reporter's setup (a `truncate -s 100G` of the job's file, a prefill `dd`, a
`mkdir`, `sysctl vm.dirty_bytes=...`, dropping caches) is replayed from these
models, never from text: fslab does each step itself (measure.setup), inside
the scratch filesystem, and restores every setting it changed after the point.
A path is relative to the scratch filesystem and cannot leave it; a setting is
one of SYSCTLS; a block-queue setting is one of QUEUE_SETTINGS, and applies to the
point's own scratch device, never to a device a spec or report names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from fslab.base.units import parse_size_bytes

MAX_STEPS = 64
MAX_FILE_BYTES = 1 << 50  # 1 PiB: the filesystem's free space is checked when it runs
# The settings a spec may change for its points: writeback and cache behaviour, each
# restored after the point (the *_bytes and *_ratio twins as the kernel pairs them).
SYSCTLS = frozenset(
    {
        "vm.dirty_bytes",
        "vm.dirty_background_bytes",
        "vm.dirty_ratio",
        "vm.dirty_background_ratio",
        "vm.dirty_expire_centisecs",
        "vm.dirty_writeback_centisecs",
        "vm.vfs_cache_pressure",
    }
)
# The block-queue settings a spec may change on its scratch device(s) for a point:
# the request queue's policies (wbt's latency target, the scheduler, merging, depth).
QUEUE_SETTINGS = frozenset(
    {
        "wbt_lat_usec",
        "scheduler",
        "nr_requests",
        "nomerges",
        "max_sectors_kb",
        "read_ahead_kb",
        "rq_affinity",
        "add_random",
        "iostats",
    }
)
# the kernel keeps one of each pair: writing a *_bytes value zeroes its *_ratio twin
TWINS = {
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
}
_PATH_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")


def scratch_path(value: str) -> str:
    """A relative path of plain names inside the scratch filesystem: no '..', no '/' first."""
    parts = value.split("/")
    if not value or len(parts) > 8 or not all(_PATH_PART.fullmatch(p) for p in parts):
        raise ValueError(
            f"{value!r} is not a path inside the scratch filesystem (up to 8 plain names "
            "joined by '/', each of letters, digits, '_', '.', '+', '-', not starting with '.')"
        )
    return value


def _size(value: str) -> str:
    if not 0 <= parse_size_bytes(value) <= MAX_FILE_BYTES:
        raise ValueError(f"{value!r}: a file's size is 0..1PiB")
    return value


def _one_of(allowed: frozenset[str], what: str) -> Callable[[str], str]:
    """A validator that accepts only the names of an allowlist, and lists them when not."""

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(
                f"{value!r} is not {what} a spec may change ({', '.join(sorted(allowed))})"
            )
        return value

    return check


ScratchPath = Annotated[str, AfterValidator(scratch_path)]
Note = Annotated[str, Field(max_length=300)]  # where the step came from (a report's line)


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    note: Note = ""


class SysctlStep(_Step):
    """Set a vm.* setting for the point; the previous value is restored after it."""

    kind: Literal["sysctl"]
    name: Annotated[str, AfterValidator(_one_of(SYSCTLS, "a setting"))]
    value: Annotated[int, Field(ge=0, le=2**62)]


class QueueStep(_Step):
    """Set /sys/block/<scratch device>/queue/<name> for the point (on every scratch
    device of the filesystem); the previous value is restored after it."""

    kind: Literal["queue"]
    name: Annotated[str, AfterValidator(_one_of(QUEUE_SETTINGS, "a queue setting"))]
    value: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")]


class DropCachesStep(_Step):
    """sync, then drop the page cache, dentries and inodes (echo 3 > drop_caches)."""

    kind: Literal["drop_caches"]


class FileStep(_Step):
    """Make a file of `size` in the scratch filesystem: sparse (truncate), allocated
    (fallocate) or written with zeros (write)."""

    kind: Literal["file"]
    path: ScratchPath
    size: Annotated[str, AfterValidator(_size)]
    how: Literal["truncate", "fallocate", "write"] = "truncate"

    @property
    def size_bytes(self) -> int:
        return parse_size_bytes(self.size)


class MkdirStep(_Step):
    """Make a directory (and its parents) in the scratch filesystem."""

    kind: Literal["mkdir"]
    path: ScratchPath


class NocowStep(_Step):
    """Mark a file or directory No_COW (`chattr +C`), making an empty file when the path
    does not exist yet: btrfs then writes it in place, without checksums or compression,
    and files made in a marked directory inherit it. It only holds for a file with no data
    yet, so it comes before the step that fills the file."""

    kind: Literal["nocow"]
    path: ScratchPath


SetupStep = Annotated[
    SysctlStep | QueueStep | DropCachesStep | FileStep | MkdirStep | NocowStep,
    Field(discriminator="kind"),
]
SetupSteps = Annotated[list[SetupStep], Field(max_length=MAX_STEPS)]
