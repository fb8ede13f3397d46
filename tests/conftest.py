"""Shared test fixtures: root gating and a leak check for loop devices and mounts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).parent / "data"


# What fslab itself creates: images fslab-<pid>-<hex>.img, mounts under /run/fslab/.
# Only these count as leaks, so tests of other engineers running at the same
# time (with their own decoys) do not make a test fail.
FSLAB_IMAGE_RE = re.compile(r"fslab-\d+-[0-9a-f]{8}\.img")


def loop_devices() -> set[str]:
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    return {line.split(":", 1)[0] for line in out.splitlines() if FSLAB_IMAGE_RE.search(line)}


def loop_mounts() -> set[str]:
    out = subprocess.run(
        ["findmnt", "-rn", "-o", "SOURCE,TARGET"], capture_output=True, text=True, check=False
    ).stdout
    return {
        line for line in out.splitlines() if line.startswith("/dev/loop") and " /run/fslab/" in line
    }


def is_root_capable() -> bool:
    return os.geteuid() == 0 and shutil.which("losetup") is not None


requires_root = pytest.mark.skipif(not is_root_capable(), reason="needs root and losetup")


@pytest.fixture
def no_leaks():
    """Fail the test if it leaves a loop device or a loop mount behind."""
    loops_before, mounts_before = loop_devices(), loop_mounts()
    yield
    leaked_loops = loop_devices() - loops_before
    leaked_mounts = loop_mounts() - mounts_before
    assert not leaked_mounts, f"leaked mounts: {leaked_mounts}"
    assert not leaked_loops, f"leaked loop devices: {leaked_loops}"


@pytest.fixture
def data_dir() -> Path:
    return DATA_DIR
