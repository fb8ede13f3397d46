"""What the guest tests share: the cached kernel they boot, and qemu leak checks.

The kernel is the newest cached 6.1 (`make test` fetches it with
`fslab kernels fetch 6.1`). Without one the tests skip, except under CI,
where a missing kernel fails them: CI must boot real guests.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from fslab.errors import UsageError
from fslab.guest.kernels import Kernel, resolve_kernel

GUEST_SERIES = "6.1"


def guest_kernel() -> Kernel:
    try:
        return resolve_kernel(GUEST_SERIES)
    except UsageError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no cached {GUEST_SERIES} kernel ({exc}); `make test` fetches one")


def require_qemu() -> None:
    missing = [t for t in ("qemu-system-x86_64", "busybox") if shutil.which(t) is None]
    if missing and not os.environ.get("CI"):
        pytest.skip(f"{', '.join(missing)} not installed; `make deps` installs them")


def fslab_guests(pid: int | None = None) -> list[str]:
    """qemu processes fslab started (named fslab-<pid>-<hex>), as `pgrep -a` lines."""
    pattern = f"qemu-system.* -name fslab-{pid if pid is not None else ''}"
    out = subprocess.run(
        ["pgrep", "-a", "-f", pattern], capture_output=True, text=True, check=False
    ).stdout
    return out.splitlines()
