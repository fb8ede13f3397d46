"""Which accelerator a guest gets, and how many vCPUs it allows.

/dev/kvm can be present and still unusable: on a nested, paravirtual one
stock kernels hang or qemu aborts setting an MSR. So `auto` does not trust
the device node: it boots the kernel once under KVM with a short deadline and
falls back to TCG, saying why. The answer is remembered per kernel for the
life of the process.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fslab.base.errors import ToolError, UsageError
from fslab.guest.kernels import Kernel
from fslab.spec.vm import Accel

KVM_DEVICE = Path("/dev/kvm")
_KVM_GET_API_VERSION = 0xAE00
_KVM_CHECK_EXTENSION = 0xAE03
_KVM_CAP_MAX_VCPUS = 66
_KVM_API_VERSION = 12
QEMU = "qemu-system-x86_64"
MACHINE = "q35"
PROBE_TIMEOUT_S = 45.0  # a KVM boot takes seconds; a hung one never ends

TCG_NOTE = (
    "TCG emulates the CPU: compare points only within this run; absolute figures are not the host's"
)


@dataclass(frozen=True)
class AccelChoice:
    """The accelerator a guest runs on and why (shown to the user, stored per point)."""

    accel: Accel
    reason: str
    probe_s: float = 0.0


# Boots a kernel under KVM with a short deadline: None if it worked, else why not.
BootProbe = Callable[[Kernel], str | None]

_choices: dict[str, AccelChoice] = {}
_machine_max: dict[str, int] = {}


def kvm_device_problem(device: Path | None = None) -> str | None:
    """Why /dev/kvm cannot be opened and asked its API version; None when it can."""
    device = device or KVM_DEVICE
    if not device.exists():
        return f"{device} does not exist (no KVM module, or virtualisation off in firmware)"
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot open {device}: {exc.strerror}"
    try:
        version = fcntl.ioctl(fd, _KVM_GET_API_VERSION, 0)
    except OSError as exc:
        return f"{device}: KVM_GET_API_VERSION failed: {exc.strerror}"
    finally:
        os.close(fd)
    if version != _KVM_API_VERSION:
        return f"{device}: KVM API version {version}, qemu needs {_KVM_API_VERSION}"
    return None


def kvm_max_vcpus(device: Path | None = None) -> int | None:
    """KVM_CAP_MAX_VCPUS: the most vCPUs one KVM guest may have here."""
    device = device or KVM_DEVICE
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        value = fcntl.ioctl(fd, _KVM_CHECK_EXTENSION, _KVM_CAP_MAX_VCPUS)
    except OSError:
        return None
    finally:
        os.close(fd)
    return value or None


def machine_max_cpus(machine: str = MACHINE) -> int:
    """The machine type's cpu-max, asked of qemu itself over QMP."""
    if machine in _machine_max:
        return _machine_max[machine]
    commands = "".join(
        json.dumps({"execute": name}) + "\n"
        for name in ("qmp_capabilities", "query-machines", "quit")
    )
    try:
        proc = subprocess.run(
            [QEMU, "-machine", "none", "-nodefaults", "-display", "none", "-qmp", "stdio"],
            input=commands,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except FileNotFoundError:
        raise ToolError(f"{QEMU} not found; apt-get install qemu-system-x86") from None
    except subprocess.TimeoutExpired:
        raise ToolError(f"{QEMU} did not answer query-machines within 60 s") from None
    for line in proc.stdout.splitlines():
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            continue
        machines = reply.get("return")
        if isinstance(machines, list):
            for entry in machines:
                if machine in (entry.get("name"), entry.get("alias")):
                    _machine_max[machine] = int(entry["cpu-max"])
                    return _machine_max[machine]
    raise ToolError(f"{QEMU} does not know the {machine} machine: {proc.stderr.strip()[-300:]}")


def max_vcpus(accel: Accel) -> int:
    """vCPUs a guest may have: the machine's limit, and KVM's under KVM."""
    limit = machine_max_cpus()
    if accel == "kvm":
        kvm = kvm_max_vcpus()
        if kvm is not None:
            limit = min(limit, kvm)
    return limit


def check_cpus(cpus: int, possible_cpus: int | None, accel: Accel, kernel: Kernel) -> None:
    """Refuse CPU counts the accelerator or the kernel cannot give, before booting."""
    limit = max_vcpus(accel)
    if cpus > limit:
        raise UsageError(
            f"cpus = {cpus}: {accel.upper()} on the {MACHINE} machine allows at most {limit} "
            "vCPUs; use possible_cpus for a larger nr_cpu_ids"
        )
    kernel_max = kernel.max_possible_cpus()
    if possible_cpus is not None and kernel_max is not None and possible_cpus > kernel_max:
        raise UsageError(
            f"possible_cpus = {possible_cpus}: kernel {kernel.release} was built with "
            f"CONFIG_NR_CPUS={kernel_max}"
        )


def choose_accel(requested: str, kernel: Kernel, boot_probe: BootProbe) -> AccelChoice:
    """kvm, tcg, or auto: KVM if a short boot under it works, else TCG with the reason."""
    if requested == "tcg":
        return AccelChoice("tcg", f"accel = tcg was asked for. {TCG_NOTE}")
    problem = kvm_device_problem()
    if requested == "kvm":
        if problem is not None:
            raise UsageError(f"accel = kvm: {problem}; use accel = auto or tcg")
        return AccelChoice("kvm", "accel = kvm was asked for")
    key = f"{kernel.release}:{kernel.image}"
    if key in _choices:
        return _choices[key]
    start = time.monotonic()
    if problem is None:
        problem = boot_probe(kernel)
    elapsed = time.monotonic() - start
    if problem is None:
        choice = AccelChoice("kvm", "a probe boot under KVM worked", elapsed)
    else:
        choice = AccelChoice("tcg", f"KVM unavailable: {problem}. {TCG_NOTE}", elapsed)
    _choices[key] = choice
    return choice
