"""Preflight: try what a campaign will run, before the campaign is created.

A mkfs or mount option the tools reject, or a workload option its tool rejects, would
otherwise show up as failed points: every point of that configuration, maybe
hours into a campaign. Here each is found in a fraction of a second per
configuration and reported as one SpecError naming the fields, in the tools'
own words:

- the workload: its benchmark's own check (fio: `fio --parse-only` on the base
  options, each sweep value and each combination);
- mkfs: the real mkfs on a sparse regular file of the target's size (no loop device);
- mount: that same file attached to a loop device, mounted and unmounted (the
  kernel's reason for a refusal is read from /dev/kmsg); its free space then
  shows whether the workload's files fit after the fill, and the benchmark's
  check on a mounted filesystem runs on it (dd's operands with count=0).

Images are named fslab-<pid>-<hex>.img (so `fslab doctor --cleanup` knows them
if fslab is killed here), mounts live under /run/fslab, and everything is
released before this returns, on error and on SIGINT/SIGTERM alike. A device
target is never touched: a sparse stand-in of its size is used instead.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fslab.base.errors import FslabError, SpecError, ToolError, UsageError
from fslab.base.format import format_bytes
from fslab.base.proc import CommandLog, run
from fslab.measure import plan
from fslab.measure.setup import SYS_BLOCK, queue_path, sysctl_path
from fslab.spec.model import (
    NON_WORKLOAD_AXES,
    FilesystemSpec,
    ScalarValue,
    Spec,
    sweep_combinations,
)
from fslab.spec.setup import QueueStep, SysctlStep
from fslab.target import fill as fill_mod
from fslab.target.fs import Mount, mkfs_argv
from fslab.target.guard import block_major_minor, sysfs_dir
from fslab.target.limits import unavailable_reason as limits_unavailable
from fslab.target.loop import InterruptGuard, LoopImage, check_image_space
from fslab.target.md import md_problem
from fslab.workload.base import one_paragraph as _one_paragraph

TOOL_TIMEOUT_S = 120.0
MAX_LISTED = 12  # problems listed in the message; the rest are counted


@dataclass(frozen=True)
class Problem:
    """One rejected field, with the tool's own words."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass
class Space:
    """What a configuration's freshly made filesystem offers."""

    total_bytes: int
    free_bytes: int


@dataclass
class PreflightResult:
    space: dict[str, Space] = field(default_factory=dict)  # by configuration label
    seconds: float = 0.0


# ------------------------------------------------------------------ entry point


def run_preflight(spec: Spec, *, mount: bool = True) -> PreflightResult:
    """Check the spec against the real tools; raise SpecError listing every problem.

    mount=False skips the loop-device stage (mount options, fit), for callers
    without root.
    """
    start = time.monotonic()
    result = PreflightResult()
    with InterruptGuard():
        problems = check_workload(spec) + check_limits(spec) + check_array(spec) + check_setup(spec)
        fs_problems, result.space = check_filesystems(spec, mount=mount)
        problems += fs_problems
        if mount and not any(p.field.startswith(("workload", "sweep")) for p in problems):
            problems += check_fits(spec, result.space)
    result.seconds = time.monotonic() - start
    if problems:
        raise SpecError(format_problems(problems))
    return result


def check_limits(spec: Spec) -> list[Problem]:
    """target.limits needs the blkio throttle files: refuse before any point runs.
    A guest applies them itself (its kernel is checked with the guest)."""
    if spec.target.limits is None or spec.vm is not None:
        return []
    reason = limits_unavailable(spec.target.limits.device_limits())
    return [Problem("target.limits", reason)] if reason else []


def check_array(spec: Spec) -> list[Problem]:
    """target.array needs the kernel's md driver: refuse before any point runs.
    A guest's kernel is checked in the guest, at its first point."""
    if spec.target.array is None or spec.vm is not None:
        return []
    reason = md_problem(spec.target.array)
    return [Problem("target.array", reason)] if reason else []


def check_setup(spec: Spec) -> list[Problem]:
    """A setting a setup step changes must be there to change (a guest checks its own)."""
    if spec.vm is not None:
        return []
    problems = []
    steps = [(f"setup.{i}", step) for i, step in enumerate(spec.setup)]
    for n, fs in enumerate(spec.filesystems):
        steps += [(f"filesystems.{n}.setup.{i}", step) for i, step in enumerate(fs.setup)]
    for where, step in steps:
        if isinstance(step, SysctlStep):
            path = sysctl_path(step.name)
            if not os.access(path, os.W_OK):
                why = "not writable (run as root)" if path.exists() else "not in this kernel"
                problems.append(Problem(f"{where}.name", f"{step.name}: {path} is {why}"))
        elif isinstance(step, QueueStep):
            problems += _check_queue(spec, f"{where}.name", step.name)
    return problems


def _check_queue(spec: Spec, where: str, name: str) -> list[Problem]:
    """The setting must exist on the device it will be made on (a loop device: any one)."""
    if spec.target.kind == "device" and spec.target.path:
        try:
            path = queue_path(spec.target.path, name)
        except FslabError as exc:
            return [Problem(where, str(exc).removeprefix("setup: "))]
        return [] if path.exists() else [Problem(where, f"{name}: {path} is not in this kernel")]
    if any(SYS_BLOCK.glob(f"loop*/queue/{name}")):
        return []
    return [Problem(where, f"{name}: no loop device here has queue/{name} (not in this kernel)")]


def format_problems(problems: Sequence[Problem]) -> str:
    unique = list(dict.fromkeys(problems))
    lines = [
        f"preflight: {len(unique)} problem(s); nothing was created "
        "(--no-preflight skips these checks):"
    ]
    lines += [f"  - {problem}" for problem in unique[:MAX_LISTED]]
    if len(unique) > MAX_LISTED:
        lines.append(f"  ... and {len(unique) - MAX_LISTED} more")
    return "\n".join(lines)


# ------------------------------------------------------------------ the workload


def _workload_axes(spec: Spec) -> dict[str, list[ScalarValue]]:
    return {k: v for k, v in spec.sweep.items() if k not in NON_WORKLOAD_AXES}


def check_workload(spec: Spec) -> list[Problem]:
    """The workload's tool on the base options, each sweep value and each combination
    (fio --parse-only); nothing is created."""
    bench = plan.benchmark(spec)
    complaints = bench.preflight(spec.workload, _workload_axes(spec), spec.run_shape)
    return [Problem(c.field, c.message) for c in complaints]


# ------------------------------------------------------------------ mkfs


def scratch_site(spec: Spec) -> tuple[str, int]:
    """(image directory, image size) that stand in for the campaign's target."""
    target = spec.target
    if target.kind == "ram":
        return "/dev/shm", target.size_bytes
    if target.kind == "file":
        assert target.path is not None
        return target.path, target.size_bytes
    assert target.path is not None  # a device: never written here, a sparse stand-in instead
    size = _device_size(target.path) or target.size_bytes
    try:
        st = os.statvfs("/dev/shm")
        size = min(size, st.f_bavail * st.f_frsize // 2)
    except OSError:
        pass
    return "/dev/shm", max(size - size % 4096, 64 * 1024**2)


def _device_size(path: str) -> int | None:
    mm = block_major_minor(path)
    if mm is None:
        return None
    try:
        return int((sysfs_dir(mm) / "size").read_text()) * 512
    except (OSError, ValueError):
        return None


def _mkfs_problem(index: int, fs: FilesystemSpec, size: int, exc: ToolError) -> Problem:
    words = _one_paragraph(exc.stderr or str(exc))
    if fs.mkfs_options:
        options = shlex.join(fs.mkfs_options)
        return Problem(
            f"filesystems.{index}.mkfs_options", f"mkfs.{fs.type} rejected '{options}': {words}"
        )
    return Problem(
        f"filesystems.{index}.type",
        f"mkfs.{fs.type} fails on a {format_bytes(size)} target (target.size): {words}",
    )


def check_filesystems(spec: Spec, *, mount: bool = True) -> tuple[list[Problem], dict[str, Space]]:
    """Per configuration: mkfs on a sparse regular file of the target's size, then
    (mount=True) attach that very file to a loop device, mount, measure, umount.

    mkfs on a regular file takes milliseconds where the same mkfs through a loop
    device zeroes inode tables and journal in RAM (about a second at 16GiB),
    and it needs no root; the loop device is only for the mount.
    """
    directory, size = scratch_site(spec)
    problems: list[Problem] = []
    space: dict[str, Space] = {}
    if not os.path.isdir(directory):
        where = "target.path" if spec.target.kind == "file" else "target.kind"
        return [Problem(where, f"image directory {directory} does not exist")], space
    try:
        check_image_space(size, directory)
    except FslabError as exc:
        return [Problem("target.size", str(exc))], space
    for index, fs in enumerate(spec.filesystems):
        mkfs_failed: list[ToolError] = []
        devices = spec.target.devices if fs.type == "btrfs" else 1
        # several devices under one btrfs: mkfs over as many sparse files; the mount
        # (all of them attached) is the run's own
        attach = mount and devices == 1

        try:
            with contextlib.ExitStack() as stack:
                more = [
                    stack.enter_context(LoopImage(size, directory=directory, attach=False))
                    for _ in range(devices - 1)
                ]

                def make(
                    path: str,
                    fs: FilesystemSpec = fs,
                    failed: list[ToolError] = mkfs_failed,
                    more: list[LoopImage] = more,
                ) -> None:
                    try:
                        _mkfs(fs, path, [image.image_path for image in more])
                    except ToolError as exc:
                        failed.append(exc)
                        raise

                # the target's own image: mkfs on the sparse file, then (mount) a loop device
                image = stack.enter_context(
                    LoopImage(size, directory=directory, prepare=make, attach=attach)
                )
                if attach:
                    found = _mount_image(spec, index, fs, image.device)
                    if isinstance(found, Space):
                        space[fs.label] = found
                    else:
                        problems.extend(found)
        except FslabError as exc:  # mkfs refused, no room for the image, no free loop device
            if mkfs_failed:
                problems.append(_mkfs_problem(index, fs, size, mkfs_failed[0]))
            else:
                problems.append(Problem(f"filesystems.{index}", str(exc)))
    return problems, space


def check_mkfs(spec: Spec) -> list[Problem]:
    """Only the mkfs half of check_filesystems: no loop device, no root needed."""
    return check_filesystems(spec, mount=False)[0]


def _mkfs(fs: FilesystemSpec, path: str, more: Sequence[str] = ()) -> None:
    argv = mkfs_argv(fs.type, path, fs.mkfs_options, more=more)
    record = run(argv, check=False, timeout_s=TOOL_TIMEOUT_S)
    if record.returncode != 0:
        raise ToolError(
            f"mkfs.{fs.type} exited {record.returncode}", stderr=record.stderr or record.stdout
        )


# ------------------------------------------------------------------ mount


class KernelLog:
    """Kernel messages logged after this was created (the mount's own reason).

    mount(8) only says "wrong fs type, bad option ..."; the kernel logs which
    option it refused ("ext4: Unknown parameter 'bogus'").
    """

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self._fd, 0, os.SEEK_END)
        except OSError:
            self._fd = None

    def new_messages(self, needles: Sequence[str]) -> list[str]:
        found: list[str] = []
        if self._fd is None:
            return found
        while True:
            try:
                record = os.read(self._fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # ring buffer overrun: skip what was lost
                    continue
                break
            message = record.split(";", 1)[-1].strip()
            if any(needle.lower() in message.lower() for needle in needles):
                found.append(message)
        return found

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _mount_image(spec: Spec, index: int, fs: FilesystemSpec, device: str) -> Space | list[Problem]:
    """Mount the formatted image through a loop device: its space, or the kernel's refusal."""
    kernel = KernelLog()
    try:
        with Mount(device, fs.type, fs.mount_options, log=CommandLog()) as mount:
            total = fill_mod.total_bytes(mount.mountpoint)
            free = fill_mod.free_bytes(mount.mountpoint)
            problems = _mounted_problems(spec, mount.mountpoint)
    except ToolError as exc:
        name = os.path.basename(device)
        said = kernel.new_messages([f"{fs.type}:", f"({name})", f"device {name}"])
        words = "; ".join(said) or _one_paragraph(exc.stderr or str(exc))
        options = ",".join(fs.mount_options) or "(none)"
        return [
            Problem(
                f"filesystems.{index}.mount_options",
                f"the kernel refused to mount {fs.type} with '{options}': {words}",
            )
        ]
    finally:
        kernel.close()
    return problems or Space(total, free)


def _mounted_problems(spec: Spec, mountpoint: str) -> list[Problem]:
    """The workload's tool on the real filesystem (dd's operands, with count=0)."""
    bench = plan.benchmark(spec)
    complaints = bench.preflight_mounted(
        spec.workload, _workload_axes(spec), spec.run_shape, mountpoint
    )
    return [Problem(c.field, c.message) for c in complaints]


# ------------------------------------------------------------------ fit


def check_fits(spec: Spec, space: Mapping[str, Space]) -> list[Problem]:
    """Per configuration and sweep combination: does the fill leave room for the files?

    The runner's rules (plan.fill_request, plan.files_bytes, plan.fits), applied to the
    space a freshly made filesystem of each configuration offers.
    """
    problems: list[Problem] = []
    combos = sweep_combinations(spec.sweep)
    for fs, combo in itertools.product(spec.filesystems, combos):
        if fs.label not in space:
            continue
        sweep = dict(combo)
        at = (" at " + ", ".join(f"{k}={v}" for k, v in combo)) if combo else ""
        total, free = space[fs.label].total_bytes, space[fs.label].free_bytes
        fill = plan.fill_request(spec, sweep)
        available = free
        if fill.leave_free_bytes is not None:
            if fill.leave_free_bytes >= free:
                problems.append(
                    Problem(
                        fill.field,
                        f"leaves {format_bytes(fill.leave_free_bytes)} free, but '{fs.label}' "
                        f"has only {format_bytes(free)} free after mkfs{at}: nothing would be "
                        "filled",
                    )
                )
            available = min(free, fill.leave_free_bytes)
        elif fill.percent is not None:
            available = min(free, total - int(total * fill.percent / 100))
        try:
            needed, how = plan.files_bytes(spec, sweep)
        except (UsageError, ValueError):
            continue  # the fio check reports malformed sizes and numjobs
        if needed is not None and not plan.fits(needed, available):
            filled = f" after the fill ({fill.field})" if available < free else ""
            problems.append(
                Problem(
                    "target.size",
                    f"{how} = {format_bytes(needed)} does not fit '{fs.label}': "
                    f"{format_bytes(available)} free{filled} on a {format_bytes(total)} "
                    f"filesystem{at}; lower the size per job or grow target.size",
                )
            )
    return problems
