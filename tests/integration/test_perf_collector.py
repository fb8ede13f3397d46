"""PerfCollector around real dd writes to ext4 on a RAM-backed loop device.

The scratch filesystem is fslab's own (target.scratch), named as fslab names
its images and mounts, so the no_leaks fixture tells this test's from a
concurrent run's; every test leaves no perf process behind.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import requires_root

from fslab.collect.base import PointContext
from fslab.collect.perf import (
    ARTIFACT_FOLDED,
    PerfCollector,
    perf_error_summary,
    perf_record_argv,
)
from fslab.stacks.profile import Profile
from fslab.target.scratch import scratch_filesystem


@contextlib.contextmanager
def scratch_ext4() -> Iterator[Path]:
    """ext4 on a loop device over a /dev/shm image, mounted; all released after."""
    with scratch_filesystem("ext4", 1 << 30) as (_, mnt):
        yield mnt


def dd_writes(mnt: Path, seconds: float) -> None:
    """Rewrite a 256 MiB file with dd bs=1M until `seconds` have passed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={mnt}/test", "bs=1M", "count=256", "conv=fsync"],
            check=True,
            capture_output=True,
        )


def context(mnt: Path, artifact_dir: Path, ramp_s: float, runtime_s: float) -> PointContext:
    return PointContext(
        device="",
        device_name="",
        mountpoint=str(mnt),
        fs_type="ext4",
        workload_comm="dd",
        ramp_s=ramp_s,
        runtime_s=runtime_s,
        artifact_dir=artifact_dir,
    )


def perf_running(data_path: Path) -> bool:
    out = subprocess.run(["pgrep", "-af", str(data_path)], capture_output=True, text=True).stdout
    return any("perf" in line for line in out.splitlines())


@requires_root
@pytest.mark.root
def test_records_ext4_stacks_around_dd(no_leaks, tmp_path: Path) -> None:
    assert PerfCollector.unavailable_reason() is None
    collector = PerfCollector()
    with scratch_ext4() as mnt:
        started = time.monotonic()
        collector.start(context(mnt, tmp_path, ramp_s=0.5, runtime_s=3.0))
        waited = time.monotonic() - started
        # start returns once perf records (its start-up, collector.start_s), not after the ramp
        assert 0 < collector.start_s <= waited
        assert waited - collector.start_s < 0.5, "start must not wait for the ramp"
        dd_writes(mnt, 4.0)
        result = collector.stop()
    assert result.status == "ok", result.reason
    profile = Profile.from_folded(result.artifacts[ARTIFACT_FOLDED])
    assert profile.total > 100
    assert result.metrics["profile.samples"] == profile.total
    assert any(k.startswith("profile.inclusive.") for k in result.metrics)
    assert any(k.startswith("profile.self.") for k in result.metrics)
    assert all(0.0 <= v <= 1.0 for k, v in result.metrics.items() if ".inclusive." in k)
    assert 0.0 < result.metrics["profile.collector_cpu_s"] < 3.0  # perf record's own CPU
    dd_stacks = [s for s in profile.stacks if s[0] == "dd"]
    assert any(f.startswith("ext4_") for s in dd_stacks for f in s), "no ext4 frame under dd"
    assert not (tmp_path / "perf.data").exists()
    assert not perf_running(tmp_path / "perf.data")


@requires_root
@pytest.mark.root
def test_workload_ending_early_interrupts_perf(no_leaks, tmp_path: Path) -> None:
    collector = PerfCollector(keep_data=True)
    with scratch_ext4() as mnt:
        collector.start(context(mnt, tmp_path, ramp_s=0.2, runtime_s=60.0))
        dd_writes(mnt, 2.5)
        started = time.monotonic()
        result = collector.stop()
        stop_s = time.monotonic() - started
    assert result.status == "ok", result.reason
    assert stop_s < 30, "stop must interrupt perf, not wait for its 60 s sleep"
    assert (tmp_path / "perf.data").exists()  # keep_data
    assert not perf_running(tmp_path / "perf.data")
    assert "perf record" in result.artifacts["profile.oncpu.commands"]


@requires_root
@pytest.mark.root
def test_workload_shorter_than_ramp_is_a_failed_result(tmp_path: Path) -> None:
    collector = PerfCollector()
    collector.start(context(tmp_path, tmp_path, ramp_s=5.0, runtime_s=10.0))
    result = collector.stop()
    assert result.status == "failed"
    assert "ramp" in result.reason
    time.sleep(0.2)
    assert not perf_running(tmp_path / "perf.data")


def test_without_perf_in_path_is_unavailable(monkeypatch, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    reason = PerfCollector.unavailable_reason()
    assert reason and "perf" in reason
    collector = PerfCollector()
    collector.start(context(tmp_path, tmp_path / "art", ramp_s=0.0, runtime_s=1.0))
    result = collector.stop()
    assert result.status == "unavailable"
    assert "perf" in result.reason
    assert not result.artifacts


def test_bad_frequency_is_refused() -> None:
    with pytest.raises(ValueError):
        PerfCollector(freq_hz=0)


def test_failing_perf_is_unavailable_with_its_reason(monkeypatch, tmp_path: Path) -> None:
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = PerfCollector.unavailable_reason()
    assert reason and "trial failed" in reason and "exit code 3" in reason


@requires_root
@pytest.mark.root
def test_error_summary_of_real_unprivileged_perf(tmp_path: Path) -> None:
    """perf refused to an unprivileged user: the summary is its Error line."""
    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    if paranoid <= 0 or shutil.which("runuser") is None:
        pytest.skip("unprivileged users may profile the kernel here")
    argv = perf_record_argv("perf", Path("/dev/null"), 99, 0.1)
    proc = subprocess.run(
        ["runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode != 0
    assert "performance monitoring" in perf_error_summary(proc.stderr)
