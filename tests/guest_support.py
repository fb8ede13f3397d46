"""What the guest tests share: the cached kernel they boot, and qemu leak checks.

The kernel is the newest cached 6.1 (`make check` fetches it with
`fslab kernels fetch 6.1`). Without one, or without qemu, the tests skip,
except in CI (FSLAB_CI=1), where they fail: CI must boot real guests.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from fslab.base.errors import UsageError
from fslab.guest.kernels import Kernel, resolve_kernel
from tests.conftest import IN_CI, require_tool

GUEST_SERIES = "6.1"


def guest_kernel() -> Kernel:
    try:
        return resolve_kernel(GUEST_SERIES)
    except UsageError as exc:
        if IN_CI:
            pytest.fail(f"no cached {GUEST_SERIES} kernel in CI ({exc})")
        pytest.skip(f"no cached {GUEST_SERIES} kernel ({exc}); `make check` fetches it")


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


# A process that boots one guest (TCG) and prints "booted" once it is up.
BOOTING_CHILD = """
import sys
from fslab.spec.vm import GuestConfig
from fslab.guest.session import GuestSession
with GuestSession(GuestConfig(kernel=sys.argv[1], accel="tcg")):
    print("booted", flush=True)
"""


def boot_in_child() -> subprocess.Popen[str]:
    """A child process booting a guest of the test kernel."""
    return subprocess.Popen(
        [sys.executable, "-c", BOOTING_CHILD, GUEST_SERIES],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_guest(child: subprocess.Popen[str], timeout_s: float = 120.0) -> None:
    """Until the child's qemu runs (it has started booting)."""
    deadline = time.monotonic() + timeout_s
    while not fslab_guests(child.pid):
        assert time.monotonic() < deadline, "no guest started"
        assert child.poll() is None, child.communicate()
        time.sleep(0.2)
