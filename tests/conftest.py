"""Shared test fixtures: root gating and a leak check for loop devices and mounts."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).parent / "data"

# A test run started in the background of a shell without job control (nohup,
# `cmd &` in a script) inherits SIGINT ignored, and Python then installs no
# KeyboardInterrupt handler: the Ctrl-C tests would test nothing. Give this
# process, and through exec every child, the interactive default back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# What fslab itself creates: images fslab-<pid>-<hex>.img and mounts under
# /run/fslab/mnt-<pid>-<hex>. Only these count, and only when their owner is
# this test process or has died: a live fslab of someone else running at the
# same time is not this test's leak.
FSLAB_IMAGE_RE = re.compile(r"fslab-(\d+)-[0-9a-f]{8}\.img")
FSLAB_MOUNT_RE = re.compile(r" /run/fslab/mnt-(\d+)-[0-9a-f]{8}")


def _owner_gone_or_me(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" in status.read_text()


def loop_devices() -> set[str]:
    """fslab's loop devices, as 'device (image)' lines."""
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    return {line for line in out.splitlines() if FSLAB_IMAGE_RE.search(line)}


def loop_mounts() -> set[str]:
    """fslab's mounts, as 'source target' lines."""
    out = subprocess.run(
        ["findmnt", "-rn", "-o", "SOURCE,TARGET"], capture_output=True, text=True, check=False
    ).stdout
    return {
        line for line in out.splitlines() if line.startswith("/dev/loop") and " /run/fslab/" in line
    }


def _leaked(lines: set[str], pattern: re.Pattern[str]) -> set[str]:
    leaked = set()
    for line in lines:
        match = pattern.search(line)
        if match is None or _owner_gone_or_me(int(match.group(1))):
            leaked.add(line)
    return leaked


def is_root_capable() -> bool:
    return os.geteuid() == 0 and shutil.which("losetup") is not None


requires_root = pytest.mark.skipif(not is_root_capable(), reason="needs root and losetup")

# CI (.ci/run) sets FSLAB_CI=1: there `make test` has installed every tool the
# tests need, so a missing one is a failure, never a silent skip.
IN_CI = os.environ.get("FSLAB_CI") == "1"


def require_tool(path: str | None, package: str) -> None:
    """Skip (outside CI) or fail (in CI) when a tool the test needs is missing."""
    if path is not None:
        return
    message = f"{package} is not installed (`make check-deps` installs it; `make check` does)"
    if IN_CI:
        pytest.fail(f"{message}; CI must have it")
    pytest.skip(f"{message}; installing it was not possible on this machine")


@pytest.fixture
def no_leaks():
    """Fail the test if it leaves a loop device or a loop mount behind."""
    loops_before, mounts_before = loop_devices(), loop_mounts()
    yield
    leaked_loops = _leaked(loop_devices() - loops_before, FSLAB_IMAGE_RE)
    leaked_mounts = _leaked(loop_mounts() - mounts_before, FSLAB_MOUNT_RE)
    assert not leaked_mounts, f"leaked mounts: {leaked_mounts}"
    assert not leaked_loops, f"leaked loop devices: {leaked_loops}"


@pytest.fixture
def data_dir() -> Path:
    return DATA_DIR


# ------------------------------------------------------------------ databases


@pytest.fixture(scope="session")
def pg_cluster():
    """One PostgreSQL cluster for the test session (initdb + pg_ctl, private port)."""
    from tests.pgcluster import pg_bindir, running_cluster

    require_tool(None if pg_bindir() is None else "pg_ctl", "postgresql")
    with running_cluster() as (cluster, _data_dir):
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def new_db(request, tmp_path, monkeypatch):
    """A factory of empty results databases (a --db value) on the engine of the test's
    parameter: the store tests run on SQLite and on PostgreSQL alike."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the outage spool
    made = iter(range(1000))

    def make() -> str:
        n = next(made)
        if request.param == "sqlite":
            return str(tmp_path / f"db{n}.db")
        cluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"{tmp_path.name.lower()[:40]}_{n}")

    return make


# `make test` is the inner loop (at most 10 minutes on a 2-CPU machine); `make check`
# runs everything, and is what CI runs. The tests that only `make check` runs, and
# why each is too slow for the inner loop: one list, so the split is read in one place.
SLOW = {
    # a real git bisect over a throughput-costing commit: minutes of campaigns
    "tests/integration/test_bisect_run.py": "bisects a real repository with campaigns",
    "tests/integration/test_calibrate.py": "spaced calibration campaigns",
    "tests/integration/test_fleet.py": "ansible-playbook against hosts on this machine",
    "tests/integration/test_campaign.py::test_sigint_mid_run": (
        "a whole interrupted campaign and its resume; test_sigterm_releases_everything stays"
    ),
    # the statistics' false-alarm and power figures over recorded campaigns
    "tests/test_unsteady.py": "A/A pairs over every recorded spaced campaign",
    "tests/test_groups.py": "grouped A/A and power simulations",
    "tests/test_types.py": "runs mypy on scratch modules",
    "tests/test_fuzz_inputs.py": "the fuzzer's surfaces, each a few hundred inputs",
}


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        # a file, or the start of a test's name in it
        if any(item.nodeid.startswith(key if "::" in key else key + "::") for key in SLOW):
            item.add_marker(pytest.mark.slow)
