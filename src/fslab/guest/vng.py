"""virtme-ng's command line for one guest boot (building it; session.py runs it).

The guest sees the host's root filesystem read-only over 9p (fio, mkfs, perf
and fslab itself come from there), gets one read-write directory for results,
and runs one command. Both accelerators use the q35 machine, so a KVM and a
TCG point differ only in how the CPU is run. `--force-9p` because virtiofsd
is not everywhere and virtme-ng otherwise waits several seconds for it to fail.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from fslab.base.errors import ToolError
from fslab.guest.kernels import Kernel
from fslab.spec.vm import Accel

VNG_INSTALL_HINT = "pip install virtme-ng (fslab pins it; `make venv` installs it)"
QEMU_INSTALL_HINT = "apt-get install qemu-system-x86 busybox-static kmod"


@dataclass(frozen=True)
class BootPlan:
    """Everything one boot needs, resolved: nothing here is a default any more."""

    kernel: Kernel
    kernel_path: Path  # what --run gets (the kernel's image, a staged copy, or its tree)
    cpus: int
    possible_cpus: int | None
    memory_bytes: int
    accel: Accel
    rwdir: Path
    command: tuple[str, ...]  # run inside the guest
    name: str  # qemu -name, fslab-<pid>-<token>: `pgrep -f` finds a stray guest


def vng_binary() -> str:
    """vng beside the running Python (the venv), else on PATH."""
    beside = Path(sys.executable).parent / "vng"
    if beside.is_file():
        return str(beside)
    found = shutil.which("vng")
    if found is None:
        raise ToolError(f"vng (virtme-ng) not found; {VNG_INSTALL_HINT}")
    return found


def check_host_tools() -> None:
    """qemu and busybox (virtme-ng's initramfs) must be installed."""
    missing = [tool for tool in ("qemu-system-x86_64", "busybox") if shutil.which(tool) is None]
    if missing:
        raise ToolError(f"{', '.join(missing)} not found; {QEMU_INSTALL_HINT}")


def vng_env() -> dict[str, str]:
    """vng calls virtme-run by name: put the venv's bin first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(vng_binary()).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "/usr/bin:/bin")])
    return env


def stage_kernel(kernel: Kernel, workdir: Path) -> Path:
    """The path to give --run so that virtme-ng finds the kernel's modules.

    virtme-ng looks for lib/modules/<release> in an ancestor of the image; a
    bzImage with its modules elsewhere is staged as symlinks in workdir.
    """
    if kernel.tree or kernel.modules_dir is None:
        return kernel.image
    expected = kernel.modules_dir.parent.parent.parent  # <root>/lib/modules/<release>
    if expected in kernel.image.parents:
        return kernel.image
    root = workdir / "kernel"
    (root / "boot").mkdir(parents=True, exist_ok=True)
    (root / "lib" / "modules").mkdir(parents=True, exist_ok=True)
    image = root / "boot" / f"vmlinuz-{kernel.release}"
    image.symlink_to(kernel.image)
    (root / "lib" / "modules" / kernel.release).symlink_to(kernel.modules_dir)
    return image


# numpy's AVX2-and-up kernels (X86_V3 and later) crash now and then under
# qemu 7.2's TCG: a guest agent died with a general protection fault in the
# AVX2 argsort's vpgatherqq while fio ran beside it. The guest's own code paths
# are untouched; only the agent's numpy keeps to its X86_V2 baseline there.
TCG_NUMPY_ENV = {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}


def guest_command(plan: BootPlan) -> tuple[str, ...]:
    """The command the guest runs, under `env` with what its accelerator needs."""
    if plan.accel != "tcg":
        return plan.command
    return ("env", *(f"{name}={value}" for name, value in TCG_NUMPY_ENV.items()), *plan.command)


def vng_argv(plan: BootPlan, vng: str = "vng") -> list[str]:
    """The vng command line for a plan (pure: tests check it without booting)."""
    argv = [
        vng,
        "--run",
        str(plan.kernel_path),
        "--force-9p",
        "--disable-microvm",
        "--verbose",  # the console tail is what explains a boot that fails
        "--name",
        plan.name,
        "--cpus",
        str(plan.cpus),
        "--memory",
        f"{plan.memory_bytes // 1024**2}M",
        "--rwdir",
        str(plan.rwdir),
        "--cwd",
        "/",
    ]
    if plan.accel == "tcg":
        argv.append("--disable-kvm")
    if plan.possible_cpus is not None:
        argv += ["--append", f"possible_cpus={plan.possible_cpus}"]
    argv += ["--exec", shlex.join(guest_command(plan))]
    return argv
