"""Capture real fio and dd outputs for the workload parser tests.

Run as root from the repo:  .venv/bin/python tests/data/capture_workload.py

It makes a sparse image in /dev/shm, attaches it to a loop device, builds a
small ext4 on it, runs short fio and dd workloads on the mounted filesystem and
writes what the tools printed, untouched, to tests/data/fio_* and dd_*. A
manifest (fio_dd_manifest.json) records each command line, exit status, tool
versions and kernel so the captures can be judged and redone. The loop device,
mount and image are released whatever happens.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path

from fslab.base.proc import CommandRecord, run
from fslab.target.scratch import scratch_filesystem

DATA_DIR = Path(__file__).resolve().parent
IMAGE_SIZE_BYTES = 256 * 1024 * 1024

SEED_SHAPE = [
    "--rw=randwrite",
    "--ioengine=sync",
    "--buffered=1",
    "--bs=16k",
    "--fsync=1",
    "--thread",
    "--time_based",
    "--filesize=4m",
]


def fio_cases(mnt: str) -> dict[str, list[str]]:
    """The fio runs to capture: name -> argv (all json+ except the failing ones)."""
    base = ["fio", "--output-format=json+", f"--directory={mnt}"]
    return {
        # (1) the seed workload shape, scaled down, grouped
        "fio_seed_grouped": [
            *base,
            "--name=seed_randwrite_fsync",
            *SEED_SHAPE,
            "--numjobs=8",
            "--runtime=3",
            "--group_reporting",
        ],
        # (2) same shape, not grouped: one json entry per job, to test merging
        "fio_seed_pertask": [
            *base,
            "--name=seed_randwrite_fsync",
            *SEED_SHAPE,
            "--numjobs=4",
            "--runtime=3",
        ],
        # (3) random reads (the files are laid out first, then read back)
        "fio_randread": [
            *base,
            "--name=randread",
            "--rw=randread",
            "--ioengine=psync",
            "--bs=4k",
            "--size=16m",
            "--numjobs=2",
            "--time_based",
            "--runtime=2",
            "--group_reporting",
        ],
        # (4) mixed random read/write
        "fio_randrw": [
            *base,
            "--name=randrw",
            "--rw=randrw",
            "--rwmixread=70",
            "--ioengine=psync",
            "--bs=4k",
            "--size=16m",
            "--numjobs=2",
            "--time_based",
            "--runtime=2",
            "--group_reporting",
        ],
        # (5a) fails at run time: the file is larger than the filesystem
        "fio_fail_enospc": [
            *base,
            "--name=too_big",
            "--rw=write",
            "--bs=1m",
            "--filesize=1g",
            "--fallocate=posix",
        ],
        # (5b) fails at parse time: an option value fio rejects
        "fio_fail_badopt": [*base, "--name=bad", "--rw=sideways", "--bs=4k", "--size=1m"],
    }


def dd_cases(mnt: str) -> dict[str, list[str]]:
    """The dd runs to capture: name -> argv."""
    out = f"{mnt}/dd.out"
    return {
        # the 1728-core seed's command, cached
        "dd_cached": ["dd", "if=/dev/zero", f"of={out}", "bs=1M", "count=10"],
        "dd_fsync": ["dd", "if=/dev/zero", f"of={out}", "bs=1M", "count=10", "conv=fsync"],
        # slow enough (synchronous 4k writes) that dd prints progress lines first
        "dd_progress": [
            "dd",
            "if=/dev/zero",
            f"of={out}",
            "bs=4k",
            "count=25000",
            "oflag=dsync",
            "status=progress",
        ],
        "dd_fail_enospc": ["dd", "if=/dev/zero", f"of={mnt}/dd.full", "bs=1M", "count=400"],
        "dd_fail_operand": ["dd", "if=/dev/zero", f"of={out}", "bs=1M", "count=ten"],
    }


def save(name: str, record: CommandRecord, manifest: dict[str, dict]) -> None:
    """Write stdout and stderr exactly as the tool printed them."""
    suffix = ".json" if name.startswith("fio_") and record.returncode == 0 else ".stdout.txt"
    files = {}
    if record.stdout:
        (DATA_DIR / f"{name}{suffix}").write_text(record.stdout)
        files["stdout"] = f"{name}{suffix}"
    if record.stderr:
        (DATA_DIR / f"{name}.stderr.txt").write_text(record.stderr)
        files["stderr"] = f"{name}.stderr.txt"
    manifest[name] = {
        "argv": record.argv,
        "returncode": record.returncode,
        "seconds": round(record.seconds, 3),
        "files": files,
    }
    print(f"{name}: exit {record.returncode}, {record.seconds:.1f} s")


def empty_directory(path: Path) -> None:
    for entry in path.iterdir():
        if entry.is_dir() and entry.name != "lost+found":
            shutil.rmtree(entry)
        elif entry.is_file():
            entry.unlink()


def capture_all(mnt: str, manifest: dict[str, dict]) -> None:
    for name, argv in fio_cases(mnt).items():
        save(name, run(argv, check=False, timeout_s=120), manifest)
        empty_directory(Path(mnt))  # each case starts on an empty filesystem
    for name, argv in dd_cases(mnt).items():
        save(name, run(argv, check=False, timeout_s=120), manifest)
        empty_directory(Path(mnt))


def main() -> None:
    if os.geteuid() != 0:
        raise SystemExit("run as root: needs losetup, mkfs.ext4 and mount")
    os.environ["LC_ALL"] = "C"  # dd's summary uses the locale's decimal separator
    manifest: dict[str, dict] = {}
    with scratch_filesystem("ext4", IMAGE_SIZE_BYTES) as (_, mountpoint):
        capture_all(str(mountpoint), manifest)
    manifest["_environment"] = {
        "fio": run(["fio", "--version"]).stdout.strip(),
        "dd": run(["dd", "--version"]).stdout.splitlines()[0],
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "filesystem": f"ext4, loop device, {IMAGE_SIZE_BYTES >> 20} MiB image in /dev/shm",
    }
    (DATA_DIR / "fio_dd_manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
