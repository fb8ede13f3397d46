"""Fault-injection checkpoints in the point life cycle (for the reliability harness).

The runner calls `checkpoint(stage)` at each stage. Unless the environment
variable FSLAB_FAULTS names a fault for that stage, it does nothing.
"""

from __future__ import annotations

import os

STAGES = (
    "prepare",
    "mkfs",
    "mount",
    "fill",
    "collectors_start",
    "workload",
    "collectors_stop",
    "umount",
    "release",
)


def checkpoint(stage: str) -> None:
    """Inject the fault planned for this stage, if any."""
    if not os.environ.get("FSLAB_FAULTS"):
        return
