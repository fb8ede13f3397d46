"""dd: the argv for a sequential copy from /dev/zero into a file on the scratch mount."""

from __future__ import annotations

import re
from collections.abc import Sequence

from fslab.base.errors import UsageError

_OPERAND_RE = re.compile(r"^[A-Za-z0-9_]+$")
_BS_RE = re.compile(r"^\d+[A-Za-z]*$")


def build_dd_argv(
    *,
    output_path: str,
    bs: str,
    count: int,
    conv: Sequence[str] = (),
    oflag: Sequence[str] = (),
    input_path: str = "/dev/zero",
    iflag: Sequence[str] = (),
) -> list[str]:
    """dd's argv, operands in a fixed order so the recorded command reads the same every run."""
    if not _BS_RE.match(str(bs)):
        raise UsageError(f"dd bs: not a block size: {bs!r} (examples: 4096, 64k, 1M)")
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise UsageError(f"dd count: must be a positive whole number, not {count!r}")
    for operand, values in (("conv", conv), ("oflag", oflag), ("iflag", iflag)):
        for value in values:
            if not _OPERAND_RE.match(value):
                raise UsageError(
                    f"dd {operand}: not a flag name: {value!r} (examples: fsync, direct)"
                )
    argv = ["dd", f"if={input_path}", f"of={output_path}", f"bs={bs}", f"count={count}"]
    if conv:
        argv.append("conv=" + ",".join(conv))
    if oflag:
        argv.append("oflag=" + ",".join(oflag))
    if iflag:
        argv.append("iflag=" + ",".join(iflag))
    return argv


def drop_cache_argv(path: str) -> list[str]:
    """dd's own way to drop a file's cached pages: posix_fadvise(DONTNEED) over all of it
    (iflag=nocache with count=0)."""
    return ["dd", f"if={path}", "iflag=nocache", "count=0", "status=none"]
