"""Debian's kernels: what the registry offers, and fetching one into fslab's cache.

fslab keeps its own apt state under <cache>/apt (sources, package lists, a
download cache, an empty dpkg status), so adding bullseye for 5.10 never
touches the host's apt configuration. Its sources reuse the archive and
security mirrors the host's apt already uses (from `apt-get indextargets`),
for the suites that carry the kernels fslab offers: 5.10 (bullseye,
bullseye-security), 6.1 and 6.12 (bookworm, bookworm-security).
A package is unpacked with `dpkg -x` (never installed) and given a
modules.dep with `depmod -b`, then moved into the cache in one rename.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from fslab.base.errors import ToolError, UsageError
from fslab.base.proc import CommandLog, run
from fslab.guest.kernels import (
    Kernel,
    cache_root,
    cached_kernels,
    entry_kernel,
    kernels_dir,
    pick_release,
    release_sort_key,
    write_manifest,
)

ARCHIVE_SUITES = ("bookworm", "bookworm-updates", "bullseye")
SECURITY_SUITES = ("bookworm-security", "bullseye-security")
OFFERED_SERIES = ("5.10", "6.1", "6.12")  # the kernel series those suites carry
DEBIAN_CODENAMES = ("buster", "bullseye", "bookworm", "trixie", "forky", "sid")
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
LISTS_MAX_AGE_S = 24 * 3600
APT_TIMEOUT_S = 600.0
# linux-image-6.1.0-57-amd64-unsigned, linux-image-6.12.117+deb12-amd64-unsigned;
# not the -cloud- or -rt- flavours, which lack drivers or change the scheduler.
PACKAGE_RE = re.compile(
    r"^linux-image-(?P<release>\d+\.\d+[0-9.]*(?:-\d+|\+deb\d+)-amd64)-unsigned$"
)
PARTIAL_PREFIX = ".partial-"


@dataclass(frozen=True)
class RegistryKernel:
    """A kernel package Debian's registry offers."""

    release: str  # 6.1.0-57-amd64
    package: str  # linux-image-6.1.0-57-amd64-unsigned
    version: str  # 6.1.192-3
    suite: str  # bookworm-security

    @property
    def series(self) -> str:
        return ".".join(self.release.split(".")[:2])


@dataclass(frozen=True)
class Mirrors:
    archive: str  # serves bookworm, bullseye
    security: str  # serves bookworm-security, bullseye-security


def apt_root() -> Path:
    return cache_root() / "apt"


def parse_indextargets(text: str) -> Mirrors | None:
    """The host's Debian archive and security mirrors from `apt-get indextargets` lines
    formatted as '$(REPO_URI)|$(RELEASE)|$(ORIGIN)'."""
    archive = security = None
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 3:
            continue
        uri, release, origin = parts[0].rstrip("/"), parts[1], parts[2]
        codename = release.split("-", 1)[0]
        if origin != "Debian" and codename not in DEBIAN_CODENAMES:
            continue
        if release.endswith("-security"):
            security = security or uri
        elif release == codename:
            archive = archive or uri
    if archive is None or security is None:
        return None
    return Mirrors(archive=archive, security=security)


def host_mirrors(log: CommandLog | None = None) -> Mirrors:
    """Debian mirrors: $FSLAB_DEBIAN_ARCHIVE/$FSLAB_DEBIAN_SECURITY, else the host's apt's."""
    env_archive = os.environ.get("FSLAB_DEBIAN_ARCHIVE")
    env_security = os.environ.get("FSLAB_DEBIAN_SECURITY")
    if env_archive and env_security:
        return Mirrors(env_archive.rstrip("/"), env_security.rstrip("/"))
    if shutil.which("apt-get") is None:
        raise UsageError(
            "fetching Debian kernels needs apt-get; or set FSLAB_DEBIAN_ARCHIVE and "
            "FSLAB_DEBIAN_SECURITY to a Debian archive and its security mirror"
        )
    record = run(
        ["apt-get", "indextargets", "--format", "$(REPO_URI)|$(RELEASE)|$(ORIGIN)"],
        log=log,
        timeout_s=60,
    )
    mirrors = parse_indextargets(record.stdout)
    if mirrors is None:
        raise UsageError(
            "the host's apt sources name no Debian archive and security mirror; set "
            "FSLAB_DEBIAN_ARCHIVE and FSLAB_DEBIAN_SECURITY to their URLs"
        )
    return Mirrors(
        env_archive.rstrip("/") if env_archive else mirrors.archive,
        env_security.rstrip("/") if env_security else mirrors.security,
    )


def sources_list(mirrors: Mirrors, keyring: Path = KEYRING) -> str:
    signed = f"[signed-by={keyring}] " if keyring.is_file() else ""
    lines = [f"deb {signed}{mirrors.archive} {suite} main" for suite in ARCHIVE_SUITES]
    lines += [f"deb {signed}{mirrors.security} {suite} main" for suite in SECURITY_SUITES]
    return "\n".join(lines) + "\n"


def apt_options(root: Path) -> list[str]:
    """-o options that point apt at fslab's private state and nothing of the host's."""
    settings = {
        "Dir::Etc::SourceList": root / "sources.list",
        "Dir::Etc::SourceParts": root / "sources.list.d",
        "Dir::Etc::Preferences": root / "preferences",
        "Dir::Etc::PreferencesParts": root / "preferences.d",
        "Dir::State::Lists": root / "lists",
        "Dir::State::status": root / "status",
        "Dir::Cache": root / "cache",
        "APT::Architectures": "amd64",
        "Acquire::Languages": "none",
        "APT::Sandbox::User": "root",
    }
    options = []
    for key, value in settings.items():
        options += ["-o", f"{key}={value}"]
    return options


class DebianRegistry:
    """Debian's kernel packages, seen through fslab's private apt state."""

    def __init__(self, root: Path | None = None, log: CommandLog | None = None) -> None:
        self.root = root or apt_root()
        self.log = log or CommandLog()

    def _prepare(self) -> None:
        for sub in ("lists/partial", "cache/archives/partial", "sources.list.d", "preferences.d"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "status").touch()
        wanted = sources_list(host_mirrors(self.log))
        path = self.root / "sources.list"
        if not path.is_file() or path.read_text() != wanted:
            path.write_text(wanted)
            with contextlib.suppress(FileNotFoundError):
                (self.root / "lists" / ".fslab-updated").unlink()

    def lists_age_s(self) -> float | None:
        stamp = self.root / "lists" / ".fslab-updated"
        return time.time() - stamp.stat().st_mtime if stamp.is_file() else None

    def update(self, *, force: bool = False) -> bool:
        """Refresh the package lists when older than a day (or forced). True if refreshed."""
        self._prepare()
        age = self.lists_age_s()
        if not force and age is not None and age < LISTS_MAX_AGE_S:
            return False
        try:
            run(
                ["apt-get", *apt_options(self.root), "-q", "update"],
                log=self.log,
                timeout_s=APT_TIMEOUT_S,
            )
        except ToolError as exc:
            raise ToolError(f"cannot read Debian's package lists: {exc}", exc.stderr) from None
        (self.root / "lists" / ".fslab-updated").touch()
        return True

    def available(self) -> list[RegistryKernel]:
        """Every amd64 kernel image package the registry offers, oldest release first."""
        self.update()
        names = run(
            ["apt-cache", *apt_options(self.root), "pkgnames", "linux-image-"],
            log=self.log,
            timeout_s=APT_TIMEOUT_S,
        ).stdout.split()
        packages = sorted(n for n in names if PACKAGE_RE.match(n))
        if not packages:
            return []
        madison = run(
            ["apt-cache", *apt_options(self.root), "madison", *packages],
            log=self.log,
            timeout_s=APT_TIMEOUT_S,
        ).stdout
        return parse_madison(madison)

    def find(self, wanted: str) -> RegistryKernel:
        """An exact release, or the newest of a series ("6.1", "5.10")."""
        offered = self.available()
        found = pick_release(offered, wanted, lambda k: k.release)
        if found is not None:
            return found
        newest = {k.series: k.release for k in offered}  # sorted: the last one wins
        series_text = ", ".join(f"{s} (newest {r})" for s, r in newest.items()) or "none"
        raise UsageError(
            f"kernel {wanted!r}: Debian's registry has no such release or series. It offers "
            f"{series_text}; `fslab kernels list` shows every release"
        )

    def fetch(self, wanted: str, *, dest: Path | None = None) -> tuple[Kernel, bool]:
        """Download and unpack a kernel into the cache. Returns (kernel, newly fetched)."""
        base = dest or kernels_dir()
        for kernel in cached_kernels(base):
            if kernel.release == wanted:
                return kernel, False
        offered = self.find(wanted)
        for kernel in cached_kernels(base):
            if kernel.release == offered.release:
                return kernel, False
        base.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(base)
        partial = base / f"{PARTIAL_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        partial.mkdir()
        try:
            kernel = self._unpack(offered, partial)
            final = base / offered.release
            if final.exists():
                shutil.rmtree(final)  # an entry without a manifest: a broken earlier fetch
            partial.rename(final)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
        return entry_kernel(final, kernel.release, kernel.source), True

    def _unpack(self, offered: RegistryKernel, directory: Path) -> Kernel:
        download = directory / ".download"
        download.mkdir()
        run(
            ["apt-get", *apt_options(self.root), "-q", "download", offered.package],
            log=self.log,
            timeout_s=APT_TIMEOUT_S,
            cwd=str(download),
        )
        debs = list(download.glob("*.deb"))
        if len(debs) != 1:
            raise ToolError(f"apt-get download {offered.package} left {len(debs)} .deb files")
        run(["dpkg", "-x", str(debs[0]), str(directory)], log=self.log, timeout_s=APT_TIMEOUT_S)
        shutil.rmtree(download)
        run(["depmod", "-b", str(directory), offered.release], log=self.log, timeout_s=300)
        source = f"debian {offered.package} {offered.version} ({offered.suite})"
        kernel = entry_kernel(directory, offered.release, source)
        if not kernel.image.is_file() or not kernel.modules_dir or not kernel.modules_dir.is_dir():
            raise ToolError(f"{offered.package}: the package holds no kernel image or modules")
        write_manifest(
            directory,
            kernel,
            {"package": offered.package, "version": offered.version, "suite": offered.suite},
        )
        return kernel


def remove_stale_partials(base: Path) -> None:
    """Half-done fetches whose fslab is gone (killed mid-download)."""
    for entry in base.glob(PARTIAL_PREFIX + "*"):
        pid_text = entry.name.removeprefix(PARTIAL_PREFIX).split("-", 1)[0]
        if pid_text.isdigit() and not Path(f"/proc/{pid_text}").exists():
            shutil.rmtree(entry, ignore_errors=True)


def parse_madison(text: str) -> list[RegistryKernel]:
    """`apt-cache madison` lines: 'pkg | version | URI suite/main amd64 Packages'."""
    found: dict[str, RegistryKernel] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3:
            continue
        package, version, where = parts
        match = PACKAGE_RE.match(package)
        words = where.split()
        if match is None or len(words) < 2:
            continue
        suite = words[1].split("/", 1)[0]
        release = match.group("release")
        if release not in found:  # madison lists the candidate first
            found[release] = RegistryKernel(release, package, version, suite)
    return sorted(found.values(), key=lambda k: release_sort_key(k.release))
