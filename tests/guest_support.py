"""What the guest tests share: the cached kernel they boot, and qemu leak checks.

The kernel is the newest cached 6.1 (`make test` fetches it with
`fslab kernels fetch 6.1`). Without one, or without qemu, the tests skip,
except in CI (FSLAB_CI=1), where they fail: CI must boot real guests.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from fslab.errors import UsageError
from fslab.guest.kernels import Kernel, resolve_kernel
from tests.conftest import IN_CI, require_tool

GUEST_SERIES = "6.1"


def guest_kernel() -> Kernel:
    try:
        return resolve_kernel(GUEST_SERIES)
    except UsageError as exc:
        if IN_CI:
            pytest.fail(f"no cached {GUEST_SERIES} kernel in CI ({exc})")
        pytest.skip(f"no cached {GUEST_SERIES} kernel ({exc}); `make test` fetches one")


def require_qemu() -> None:
    require_tool(shutil.which("qemu-system-x86_64"), "qemu-system-x86")
    require_tool(shutil.which("busybox"), "busybox-static")


def fslab_guests(pid: int | None = None) -> list[str]:
    """qemu processes fslab started (named fslab-<pid>-<hex>), as `pgrep -a` lines."""
    pattern = f"qemu-system.* -name fslab-{pid if pid is not None else ''}"
    out = subprocess.run(
        ["pgrep", "-a", "-f", pattern], capture_output=True, text=True, check=False
    ).stdout
    return out.splitlines()
