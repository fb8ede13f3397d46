"""Guest kernels: fslab's kernel cache, and a user's own build.

A cached kernel is a directory `<cache>/kernels/<release>/` holding what
`dpkg -x` unpacked (boot/vmlinuz-<release>, boot/config-<release>,
lib/modules/<release>/ with modules.dep) and a manifest written last, so a
fetch interrupted half-way is never taken for a kernel. A user's build is a
built kernel tree (.config, arch/x86/boot/bzImage), a root laid out the same
way as a cache entry, or a bzImage whose modules sit under an ancestor's
lib/modules/<release> (or in a directory named beside it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from fslab.base.errors import UsageError

MANIFEST = "fslab-kernel.json"
TREE_IMAGE = Path("arch/x86/boot/bzImage")
# Kernel options a result's reader needs to trust a guest point.
KEY_CONFIG_OPTIONS = (
    "CONFIG_NR_CPUS",
    "CONFIG_HZ",
    "CONFIG_PREEMPT_NONE",
    "CONFIG_PREEMPT_VOLUNTARY",
    "CONFIG_PREEMPT",
    "CONFIG_PREEMPT_DYNAMIC",
    "CONFIG_EXT4_FS",
    "CONFIG_XFS_FS",
    "CONFIG_BTRFS_FS",
    "CONFIG_BLK_DEV_LOOP",
    "CONFIG_BLK_DEV_THROTTLING",
)
# What target.limits needs in a guest: the blkio cgroup and its throttle.
THROTTLE_OPTIONS = ("CONFIG_BLK_CGROUP", "CONFIG_BLK_DEV_THROTTLING")
_SETUP_HEADER_MAGIC = b"HdrS"
T = TypeVar("T")


def cache_root() -> Path:
    """$XDG_CACHE_HOME/fslab (default ~/.cache/fslab)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fslab"


def kernels_dir() -> Path:
    return cache_root() / "kernels"


@dataclass(frozen=True)
class Kernel:
    """A kernel a guest can boot, with where its modules and config are."""

    release: str
    image: Path  # what `vng --run` takes: a bzImage/vmlinuz, or a built kernel tree
    modules_dir: Path | None  # lib/modules/<release>; None for a tree (vng prepares it)
    config_path: Path | None
    source: str  # "debian linux-image-... 6.1.192-3" or "build /path"
    tree: bool = False

    def config_options(self) -> dict[str, str]:
        """CONFIG_X -> value from the kernel's .config (empty when there is none)."""
        if self.config_path is None or not self.config_path.is_file():
            return {}
        return parse_kconfig(self.config_path.read_text(errors="replace"))

    def max_possible_cpus(self) -> int | None:
        """CONFIG_NR_CPUS: the most possible CPUs this kernel can have."""
        value = self.config_options().get("CONFIG_NR_CPUS")
        return int(value) if value and value.isdigit() else None

    def facts(self) -> dict[str, Any]:
        """What a point records about its kernel (the running guest adds the rest)."""
        options = self.config_options()
        config_sha = (
            hashlib.sha256(self.config_path.read_bytes()).hexdigest()
            if self.config_path is not None and self.config_path.is_file()
            else ""
        )
        return {
            "kernel_source": self.source,
            "kernel_image": str(self.image),
            "kernel_config_sha256": config_sha,
            "kernel_config": {k: options[k] for k in KEY_CONFIG_OPTIONS if k in options},
        }


def parse_kconfig(text: str) -> dict[str, str]:
    options = {}
    for line in text.splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            key, value = line.split("=", 1)
            options[key] = value.strip().strip('"')
    return options


def bzimage_release(path: Path) -> str:
    """The release a bzImage was built as, from its x86 boot-protocol setup header."""
    try:
        with path.open("rb") as image:
            header = image.read(0x220)
            if len(header) < 0x210 or header[0x202:0x206] != _SETUP_HEADER_MAGIC:
                raise UsageError(
                    f"{path}: not an x86 bzImage (no boot-protocol header); give the "
                    "kernel's arch/x86/boot/bzImage or a /boot/vmlinuz-* file"
                )
            pointer = int.from_bytes(header[0x20E:0x210], "little")
            image.seek(pointer + 0x200)
            text = image.read(256).split(b"\0", 1)[0].decode("ascii", errors="replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the kernel image: {exc.strerror}") from None
    release = text.split(" ", 1)[0]
    if not release:
        raise UsageError(f"{path}: the bzImage names no kernel release")
    return release


def release_sort_key(release: str) -> tuple[tuple[int, str], ...]:
    """Natural order: 6.1.0-9 < 6.1.0-57 < 6.12.117."""
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.+~-]", release))


def in_series(release: str, series: str) -> bool:
    """'6.1' names 6.1.0-57-amd64 but not 6.12.117+deb12-amd64."""
    return release.startswith(series + ".") or release.startswith(series + "-")


# ---------------------------------------------------------------- the cache


def write_manifest(directory: Path, kernel: Kernel, extra: dict[str, Any]) -> None:
    data = {**asdict(kernel), **extra}
    data = {k: str(v) if isinstance(v, Path) else v for k, v in data.items()}
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(directory / MANIFEST)


def read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def entry_kernel(directory: Path, release: str, source: str) -> Kernel:
    """The kernel in a directory laid out as `dpkg -x` unpacks a Debian kernel."""
    return Kernel(
        release=release,
        image=directory / "boot" / f"vmlinuz-{release}",
        modules_dir=directory / "lib" / "modules" / release,
        config_path=directory / "boot" / f"config-{release}",
        source=source,
    )


def cached_kernels(root: Path | None = None) -> list[Kernel]:
    """Complete cache entries, oldest release first."""
    base = root or kernels_dir()
    if not base.is_dir():
        return []
    found = []
    for entry in base.iterdir():
        manifest = read_manifest(entry) if entry.is_dir() else None
        if manifest is None:
            continue
        found.append(entry_kernel(entry, manifest["release"], manifest.get("source", "cache")))
    return sorted(found, key=lambda k: release_sort_key(k.release))


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.startswith(".") or Path(text).exists()


def resolve_kernel(text: str, modules: str | None = None, *, root: Path | None = None) -> Kernel:
    """A release or series from the cache, or a user's build at a path; checked."""
    kernel = (
        kernel_from_path(Path(text), Path(modules) if modules else None)
        if _looks_like_path(text)
        else _from_cache(text, root)
    )
    check_kernel(kernel)
    return kernel


def pick_release(items: Sequence[T], wanted: str, release_of: Callable[[T], str]) -> T | None:
    """The item of this exact release, else the newest of the series `wanted` names.

    `items` are in release order (oldest first), as the cache and the registry list them.
    """
    for item in items:
        if release_of(item) == wanted:
            return item
    series = [item for item in items if in_series(release_of(item), wanted)]
    return series[-1] if series else None


def _from_cache(text: str, root: Path | None) -> Kernel:
    cached = cached_kernels(root)
    found = pick_release(cached, text, lambda k: k.release)
    if found is not None:
        return found
    have = ", ".join(k.release for k in cached) or "none"
    raise UsageError(
        f"kernel {text!r}: not in fslab's kernel cache ({root or kernels_dir()}; cached: "
        f"{have}). Fetch it with `fslab kernels fetch {text}`; `fslab kernels list` shows "
        "what Debian offers. A kernel you built is given by its path."
    )


def kernel_from_path(path: Path, modules: Path | None = None) -> Kernel:
    """A built tree, a root with boot/ and lib/modules/, or a bzImage (+ modules)."""
    path = path.absolute()
    if path.is_dir() and (path / TREE_IMAGE).is_file() and (path / ".config").is_file():
        return _from_tree(path)
    if path.is_dir():
        images = sorted((path / "boot").glob("vmlinuz-*"))
        if len(images) != 1:
            raise UsageError(
                f"kernel {path}: not a built kernel tree (.config and {TREE_IMAGE}) nor a "
                f"root with one boot/vmlinuz-* (found {len(images)})"
            )
        release = images[0].name.removeprefix("vmlinuz-")
        config = path / "boot" / f"config-{release}"
        return Kernel(
            release,
            images[0],
            modules or path / "lib" / "modules" / release,
            config if config.is_file() else None,
            f"build {path}",
        )
    if not path.is_file():
        raise UsageError(f"kernel {path}: no such file or directory")
    release = bzimage_release(path)
    moddir = modules or _ancestor_modules(path, release)
    config = path.parent / f"config-{release}"
    return Kernel(
        release, path, moddir, config if config.is_file() else None, f"build {path}", tree=False
    )


def _from_tree(tree: Path) -> Kernel:
    release_file = tree / "include" / "config" / "kernel.release"
    release = release_file.read_text().strip() if release_file.is_file() else ""
    release = release or bzimage_release(tree / TREE_IMAGE)
    return Kernel(release, tree, None, tree / ".config", f"build {tree}", tree=True)


def _ancestor_modules(image: Path, release: str) -> Path | None:
    for parent in image.parents:
        for candidate in (parent / "lib/modules" / release, parent / "usr/lib/modules" / release):
            if candidate.is_dir():
                return candidate
    return None


def limits_problem(kernel: Kernel) -> str | None:
    """Why target.limits cannot be applied in a guest of this kernel, or None.

    Only its config can say before a boot; without one the guest's point says."""
    options = kernel.config_options()
    missing = [name for name in THROTTLE_OPTIONS if options and options.get(name) != "y"]
    if not missing:
        return None
    return (
        f"kernel {kernel.release} is built without {' and '.join(missing)}: a guest "
        "applies the limits with the blkio throttle; boot a kernel that has it"
    )


def check_kernel(kernel: Kernel) -> None:
    """Refuse a kernel that would boot without the modules fslab needs."""
    if kernel.tree:
        options = kernel.config_options()
        if options.get("CONFIG_MODULES") == "y" and not (kernel.image / "modules.order").is_file():
            raise UsageError(
                f"kernel {kernel.image}: CONFIG_MODULES=y but the modules are not built "
                "(no modules.order); run `make modules` in the tree"
            )
        return
    if kernel.modules_dir is None or not kernel.modules_dir.is_dir():
        where = kernel.modules_dir or f"lib/modules/{kernel.release} beside {kernel.image}"
        raise UsageError(
            f"kernel {kernel.release}: missing modules ({where} not found). Install them "
            "with `make modules_install INSTALL_MOD_PATH=DIR` and give DIR/lib/modules/"
            f"{kernel.release} as the modules directory, or fetch a packaged kernel"
        )
    if not (kernel.modules_dir / "modules.dep").is_file():
        raise UsageError(
            f"kernel {kernel.release}: {kernel.modules_dir} has no modules.dep; run "
            f"`depmod -b ROOT {kernel.release}` (ROOT holds lib/modules/{kernel.release})"
        )
