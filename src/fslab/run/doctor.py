"""`fslab doctor`: can this machine run fslab, and exactly how to fix it if not."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from fslab.base.format import format_bytes
from fslab.base.proc import run

TOOLS = (
    ("mkfs.ext4", "mkfs.ext4 / dumpe2fs", "apt-get install e2fsprogs"),
    ("dumpe2fs", "dumpe2fs", "apt-get install e2fsprogs"),
    ("mkfs.xfs", "mkfs.xfs / xfs_info", "apt-get install xfsprogs"),
    ("mkfs.btrfs", "mkfs.btrfs (only for btrfs configurations)", "apt-get install btrfs-progs"),
    ("losetup", "losetup", "apt-get install util-linux"),
    ("perf", "perf (on-CPU call graphs)", "apt-get install linux-perf"),
    ("mdadm", "mdadm (only for target.array)", "apt-get install mdadm"),
)
OPTIONAL_TOOLS = ("mkfs.btrfs", "perf", "mdadm")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _root() -> Check:
    is_root = os.geteuid() == 0
    return Check(
        "root",
        is_root,
        "running as root" if is_root else f"running as uid {os.geteuid()}",
        "" if is_root else "run fslab as root (sudo): it creates loop devices, runs mkfs and mount",
    )


def _benchmarks() -> list[Check]:
    """Each registered benchmark's binary (workload/registry.py), from its package."""
    from fslab.workload.registry import BENCHMARKS

    checks = []
    for bench in BENCHMARKS.values():
        path = shutil.which(bench.binary)
        fix = "" if path else f"apt-get install {bench.package}"
        label = bench.binary if bench.binary == bench.kind else f"{bench.binary} ({bench.kind})"
        checks.append(Check(label, path is not None, path or "not found", fix))
    return checks


def _tools() -> list[Check]:
    checks = []
    for binary, label, fix in TOOLS:
        path = shutil.which(binary)
        required = binary not in OPTIONAL_TOOLS
        checks.append(
            Check(label, path is not None, path or "not found", "" if path else fix, required)
        )
    return checks


def _loop_support() -> Check:
    ok = Path("/dev/loop-control").exists()
    return Check(
        "loop devices",
        ok,
        "/dev/loop-control present" if ok else "/dev/loop-control missing",
        "" if ok else "modprobe loop",
    )


def _tracefs() -> Check:
    from fslab.collect import tracefs

    found = tracefs.find_tracefs()
    if found is not None:
        return Check("tracefs", True, f"mounted at {found}", required=False)
    problem = tracefs.mount_problem()
    if problem is None:
        return Check(
            "tracefs",
            True,
            f"not mounted; fslab mounts it at {tracefs.DEFAULT_ROOT} when a collector needs it",
            required=False,
        )
    return Check(
        "tracefs",
        False,
        problem,
        "mount -t tracefs nodev /sys/kernel/tracing (kernel needs CONFIG_TRACING)",
        required=False,
    )


def _shm_space(image_bytes: int) -> Check:
    try:
        stat = os.statvfs("/dev/shm")
    except OSError as exc:
        return Check("RAM for images", False, f"/dev/shm: {exc}", "mount -t tmpfs tmpfs /dev/shm")
    free = stat.f_bavail * stat.f_frsize
    meminfo = Path("/proc/meminfo").read_text()
    available_kb = next(
        (int(line.split()[1]) for line in meminfo.splitlines() if line.startswith("MemAvailable")),
        0,
    )
    available = available_kb * 1024
    # images are sparse: a point writes a fraction of the image; ask for half of it
    needed = image_bytes // 2
    ok = free >= needed and available >= needed
    detail = (
        f"/dev/shm free {format_bytes(free)}, memory available {format_bytes(available)}; "
        f"a {format_bytes(image_bytes)} image may use up to that much RAM as it is written"
    )
    fix = "" if ok else "free memory, use a smaller target.size, or target.kind = 'file'"
    return Check("RAM for images", ok, detail, fix)


def _collectors() -> list[Check]:
    try:
        from fslab.collect.registry import availability
    except ImportError as exc:  # pragma: no cover - registry ships with fslab
        return [Check("collectors", False, str(exc), required=False)]
    checks = []
    for name, reason in availability().items():
        checks.append(
            Check(
                f"collector {name}",
                reason is None,
                "available" if reason is None else reason,
                "" if reason is None else "the point is still measured; this evidence is skipped",
                required=False,
            )
        )
    return checks


def _guests() -> list[Check]:
    """What `fslab run --kernel` needs: qemu, busybox, virtme-ng, a kernel, an accelerator.

    Guests are optional, so none of these fails the doctor. KVM is only checked
    as far as /dev/kvm answers: whether a kernel really boots on it is probed
    (one short boot) when a guest first starts.
    """
    from importlib import metadata

    from fslab.base.errors import ToolError
    from fslab.guest.kernels import cached_kernels, kernels_dir
    from fslab.guest.probe import QEMU, TCG_NOTE, kvm_device_problem
    from fslab.guest.vng import QEMU_INSTALL_HINT, VNG_INSTALL_HINT, vng_binary

    checks = []
    for binary in (QEMU, "busybox"):
        path = shutil.which(binary)
        checks.append(
            Check(
                f"guest: {binary}",
                path is not None,
                path or "not found",
                "" if path else QEMU_INSTALL_HINT,
                required=False,
            )
        )
    try:
        vng = f"{vng_binary()} (virtme-ng {metadata.version('virtme-ng')})"
        checks.append(Check("guest: virtme-ng", True, vng, required=False))
    except (ToolError, metadata.PackageNotFoundError) as exc:
        checks.append(Check("guest: virtme-ng", False, str(exc), VNG_INSTALL_HINT, False))
    releases = [k.release for k in cached_kernels()]
    checks.append(
        Check(
            "guest: kernels cached",
            bool(releases),
            f"{', '.join(releases)} in {kernels_dir()}" if releases else f"none in {kernels_dir()}",
            "" if releases else "fslab kernels fetch 6.1 (or give --kernel PATH to your build)",
            required=False,
        )
    )
    problem = kvm_device_problem()
    detail = (
        "/dev/kvm answers; the first boot of each kernel probes whether it boots on it"
        if problem is None
        else f"TCG: {problem}. {TCG_NOTE}"
    )
    checks.append(Check("guest: accelerator", True, detail, required=False))
    return checks


def run_checks(image_bytes: int = 16 * 1024**3) -> list[Check]:
    return [
        _root(),
        *_benchmarks(),
        *_tools(),
        _loop_support(),
        _shm_space(image_bytes),
        _tracefs(),
        *_collectors(),
        *_guests(),
    ]


# ------------------------------------------------------------------ fslab workloads


def package_installed(package: str) -> bool | None:
    """Whether dpkg has the package installed; None where there is no dpkg to ask."""
    if shutil.which("dpkg-query") is None:
        return None
    try:
        record = run(["dpkg-query", "-W", "-f=${Status}", package], check=False, timeout_s=30)
    except Exception:
        return None
    return record.returncode == 0 and record.stdout.strip().endswith(" installed")


@dataclass(frozen=True)
class WorkloadRow:
    """One registered benchmark as `fslab workloads` lists it."""

    kind: str
    summary: str
    package: str
    package_installed: bool | None  # None: no dpkg to ask
    binary: str
    binary_path: str | None
    axes: list[str]
    open_axes: str
    headline: list[str]
    metrics: list[dict[str, str]]  # name, unit, direction, description

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def workload_listing() -> list[WorkloadRow]:
    """Every registered benchmark: its package (installed or not), binary, axes, metrics."""
    from fslab.workload.registry import BENCHMARKS

    return [
        WorkloadRow(
            kind=bench.kind,
            summary=bench.summary,
            package=bench.package,
            package_installed=package_installed(bench.package),
            binary=bench.binary,
            binary_path=shutil.which(bench.binary),
            axes=list(bench.axes),
            open_axes=bench.open_axes,
            headline=list(bench.headline),
            metrics=[
                {
                    "name": m.name,
                    "unit": m.unit,
                    "direction": m.direction,
                    "description": m.description,
                }
                for m in bench.metrics
            ],
        )
        for bench in BENCHMARKS.values()
    ]
