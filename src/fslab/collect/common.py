"""What several collectors share: device numbers as the kernel writes them, and
snapshots retaken at the end of the ramp."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def kernel_dev_t(device: str) -> tuple[int, int] | None:
    """(major, minor) of a block device node, or None."""
    try:
        rdev = os.stat(device).st_rdev
    except OSError:
        return None
    return (os.major(rdev), os.minor(rdev)) if rdev else None


def dev_filter(majmin: tuple[int, int] | None, field_name: str = "dev") -> str | None:
    """An ftrace filter on a dev_t field (the kernel's MKDEV: major << 20 | minor)."""
    if majmin is None:
        return None
    return f"{field_name} == {(majmin[0] << 20) | majmin[1]}"


class RampSnapshot(Generic[T]):
    """A snapshot taken now and retaken when the ramp ends (if the point lasts)."""

    def __init__(self, take: Callable[[], T], ramp_s: float) -> None:
        self._take = take
        self.value: T = take()
        self.at = time.monotonic()
        self._timer: threading.Timer | None = None
        if ramp_s > 0:
            self._timer = threading.Timer(ramp_s, self._retake)
            self._timer.daemon = True
            self._timer.start()

    def _retake(self) -> None:
        with contextlib.suppress(Exception):
            value = self._take()
            self.value, self.at = value, time.monotonic()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join(timeout=10)
