"""mkfs, mount and describe for each supported filesystem type.

Running is kept apart from parsing: the parsers take the tools' text output
and are tested on outputs recorded from real runs (tests/data/target_*).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from fslab.base.errors import ToolError, UsageError
from fslab.base.proc import CommandLog, run
from fslab.base.units import parse_size_bytes
from fslab.target.guard import read_mountinfo
from fslab.target.loop import Released, deferred_interrupts

SUPPORTED_FS = ("ext4", "xfs", "btrfs")
_MKFS_FORCE_QUIET = {"ext4": ["-F", "-q"], "xfs": ["-f", "-q"], "btrfs": ["-f", "-q"]}
_UMOUNT_RETRY_PAUSE_S = 0.2
# mkfs discards the whole device; mount may replay a log. umount has no limit:
# it flushes dirty data and must be allowed to finish.
MKFS_TIMEOUT_S = 1800.0
MOUNT_TIMEOUT_S = 600.0
DESCRIBE_TIMEOUT_S = 120.0


def _check_fs_type(fs_type: str) -> None:
    if fs_type not in SUPPORTED_FS:
        raise UsageError(
            f"unsupported filesystem type {fs_type!r}; choose one of {', '.join(SUPPORTED_FS)}"
        )


# --- mkfs ---------------------------------------------------------------------


def mkfs_argv(
    fs_type: str,
    device: str,
    options: Sequence[str],
    label: str | None = None,
    more: Sequence[str] = (),
) -> list[str]:
    """The mkfs command line: force (the guard already judged), quiet, options, label;
    `more`: further devices of one btrfs filesystem."""
    _check_fs_type(fs_type)
    if more and fs_type != "btrfs":
        raise UsageError(f"mkfs.{fs_type} makes a filesystem on one device, not {1 + len(more)}")
    argv = [f"mkfs.{fs_type}", *_MKFS_FORCE_QUIET[fs_type], *options]
    if label is not None:
        argv += ["-L", label]
    return [*argv, device, *more]


def _tool_complaint(stderr: str) -> str:
    """The lines of a tool's stderr before any usage text it dumps after them."""
    lines = []
    for line in stderr.strip().splitlines():
        if line.lower().startswith("usage:"):
            break
        if line.strip():
            lines.append(line.strip())
    return " ".join(lines)[:500] or stderr.strip()[:500]


def make_filesystem(
    fs_type: str,
    device: str,
    options: Sequence[str],
    label: str | None = None,
    *,
    log: CommandLog | None = None,
    more: Sequence[str] = (),
) -> None:
    """Run mkfs; a failure raises ToolError carrying mkfs's stderr."""
    argv = mkfs_argv(fs_type, device, options, label, more)
    try:
        run(argv, log=log, timeout_s=MKFS_TIMEOUT_S)
    except ToolError as err:
        raise ToolError(
            f"mkfs.{fs_type} on {device} failed: {_tool_complaint(err.stderr) or err}",
            stderr=err.stderr,
        ) from err


# --- mount --------------------------------------------------------------------


def mount_argv(device: str, fs_type: str, options: Sequence[str], mountpoint: str) -> list[str]:
    """`mount -t TYPE [-o a,b] device mountpoint`."""
    _check_fs_type(fs_type)
    argv = ["mount", "-t", fs_type]
    if options:
        argv += ["-o", ",".join(options)]
    return [*argv, device, mountpoint]


def is_mounted(mountpoint: str) -> bool:
    return any(e.mount_point == mountpoint for e in read_mountinfo())


def process_users(path: str) -> list[tuple[int, str]]:
    """(pid, comm) of processes with a cwd or open file under path."""
    prefix = path.rstrip("/") + "/"
    users = []
    for proc_dir in Path("/proc").iterdir():
        if not proc_dir.name.isdigit():
            continue
        try:
            links = [proc_dir / "cwd", *(proc_dir / "fd").iterdir()]
            targets = [os.readlink(link) for link in links]
            comm = (proc_dir / "comm").read_text().strip()
        except OSError:
            continue
        if any(t == path or t.startswith(prefix) for t in targets):
            users.append((int(proc_dir.name), comm))
    return users


def processes_using(path: str) -> list[str]:
    """Processes ("pid (comm)") with a cwd or open file under path, for messages."""
    return [f"{pid} ({comm})" for pid, comm in process_users(path)]


class Mount(Released):
    """A filesystem mounted on a private mount point (context manager)."""

    def __init__(
        self,
        device: str,
        fs_type: str,
        options: Sequence[str],
        *,
        log: CommandLog | None = None,
        base_dir: str = "/run/fslab",
        busy_timeout_s: float = 5.0,
    ) -> None:
        _check_fs_type(fs_type)
        self.device = device
        self.fs_type = fs_type
        self.options = list(options)
        self.log = log
        self.base_dir = base_dir
        self.busy_timeout_s = busy_timeout_s
        self.mountpoint = ""
        self.lazily_unmounted = False

    def __enter__(self) -> Mount:
        os.makedirs(self.base_dir, mode=0o755, exist_ok=True)
        name = f"mnt-{os.getpid()}-{secrets.token_hex(4)}"
        self.mountpoint = os.path.join(os.path.realpath(self.base_dir), name)
        os.mkdir(self.mountpoint, 0o755)
        try:
            argv = mount_argv(self.device, self.fs_type, self.options, self.mountpoint)
            run(argv, log=self.log, timeout_s=MOUNT_TIMEOUT_S)
        except ToolError as err:
            with deferred_interrupts():
                self.unmount()
            raise ToolError(
                f"mounting {self.device} ({self.fs_type}, options "
                f"{','.join(self.options) or 'none'}) failed: "
                f"{_tool_complaint(err.stderr)} (the kernel log, dmesg, says why)",
                stderr=err.stderr,
            ) from err
        except BaseException:
            with deferred_interrupts():
                self.unmount()
            raise
        return self

    def release(self) -> None:
        self.unmount()

    def effective_options(self) -> str:
        """Options the kernel actually applied: "per-mount / superblock"."""
        entries = [e for e in read_mountinfo() if e.mount_point == self.mountpoint]
        if not entries:
            raise ToolError(f"{self.mountpoint} is not mounted")
        top = entries[-1]
        return f"{top.per_mount_options} / {top.super_options}"

    def unmount(self) -> None:
        """Unmount (lazily if it stays busy) and remove the mount point directory."""
        if not self.mountpoint:
            return
        try:
            if is_mounted(self.mountpoint):
                self._umount_or_detach()
        finally:
            if not is_mounted(self.mountpoint):
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(self.mountpoint)

    def _umount_or_detach(self) -> None:
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            record = run(["umount", self.mountpoint], check=False, log=self.log)
            if record.returncode == 0 or not is_mounted(self.mountpoint):
                return
            if "busy" not in record.stderr or time.monotonic() >= deadline:
                break
            time.sleep(_UMOUNT_RETRY_PAUSE_S)
        users = ", ".join(processes_using(self.mountpoint)) or "unknown"
        lazy = run(["umount", "--lazy", self.mountpoint], check=False, log=self.log)
        if lazy.returncode != 0 and is_mounted(self.mountpoint):
            raise ToolError(
                f"could not unmount {self.mountpoint}: {lazy.stderr.strip()}", stderr=lazy.stderr
            )
        self.lazily_unmounted = True
        warnings.warn(
            f"{self.mountpoint} stayed busy for {self.busy_timeout_s:.0f} s "
            f"(held by: {users}; umount said: {record.stderr.strip()}); detached it lazily. "
            f"{self.device} stays in use until those files are closed",
            stacklevel=4,
        )


# --- describe -----------------------------------------------------------------


def _colon_fields(text: str) -> dict[str, str]:
    """The "Key:   value" lines of dumpe2fs -h as a dict; keys never contain ':'."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            fields.setdefault(key.strip(), value.strip())
    return fields


def _words(value: str | None) -> list[str]:
    if not value or value == "(none)":
        return []
    return value.split()


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def parse_dumpe2fs(text: str) -> dict[str, object]:
    """Key facts of an ext4 superblock from `dumpe2fs -h` output."""
    fields = _colon_fields(text)
    label = fields.get("Filesystem volume name")
    block_size = _int_or_none(fields.get("Block size"))
    journal_blocks = _int_or_none(fields.get("Total journal blocks"))
    journal_text = fields.get("Total journal size") or fields.get("Journal size")
    if journal_blocks is not None and block_size:
        journal_size: int | None = journal_blocks * block_size
    elif journal_text:
        journal_size = parse_size_bytes(journal_text)
    else:
        journal_size = None
    return {
        "label": None if label == "<none>" else label,
        "uuid": fields.get("Filesystem UUID"),
        "features": _words(fields.get("Filesystem features")),
        "block_size_bytes": block_size,
        "block_count": _int_or_none(fields.get("Block count")),
        "reserved_block_count": _int_or_none(fields.get("Reserved block count")),
        "free_blocks": _int_or_none(fields.get("Free blocks")),
        "inode_count": _int_or_none(fields.get("Inode count")),
        "inode_size_bytes": _int_or_none(fields.get("Inode size")),
        "cluster_size_bytes": _int_or_none(fields.get("Cluster size")) or block_size,
        "mount_options": fields.get("Default mount options"),
        "journal_features": _words(fields.get("Journal features")),
        "journal_blocks": journal_blocks,
        "journal_size_bytes": journal_size,
        "fields": fields,
    }


_XFS_SECTION_RE = re.compile(r"^(?P<section>[a-z-]+)\s*=(?P<rest>.*)$")
_XFS_PAIR_RE = re.compile(r"([A-Za-z][\w-]*)=([^\s,]+)")


def parse_xfs_info_sections(text: str) -> dict[str, dict[str, str]]:
    """`xfs_info` as {section: {key: value}}; "=" lines continue the section above.

    The section's own value ("/dev/loop1", "internal log", "version 2") is
    kept under the key "" .
    """
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        match = _XFS_SECTION_RE.match(line)
        if match:
            current = sections.setdefault(match["section"], {})
            rest = match["rest"]
            first_pair = _XFS_PAIR_RE.search(rest)
            current[""] = (rest[: first_pair.start()] if first_pair else rest).strip()
        elif line.lstrip().startswith("=") and current is not None:
            rest = line.lstrip()[1:]
        else:
            continue
        for key, value in _XFS_PAIR_RE.findall(rest):
            current.setdefault(key, value)
    return sections


def parse_xfs_info(text: str) -> dict[str, object]:
    """Key facts of an XFS filesystem from `xfs_info` output."""
    sections = parse_xfs_info_sections(text)
    meta, data, log = (sections.get(name, {}) for name in ("meta-data", "data", "log"))
    log_blocks = _int_or_none(log.get("blocks"))
    log_bsize = _int_or_none(log.get("bsize"))
    return {
        "block_size_bytes": _int_or_none(data.get("bsize")),
        "data_blocks": _int_or_none(data.get("blocks")),
        "agcount": _int_or_none(meta.get("agcount")),
        "agsize_blocks": _int_or_none(meta.get("agsize")),
        "inode_size_bytes": _int_or_none(meta.get("isize")),
        "sector_size_bytes": _int_or_none(meta.get("sectsz")),
        "log_internal": log.get("", "").startswith("internal"),
        "log_blocks": log_blocks,
        "log_size_bytes": log_blocks * log_bsize if log_blocks and log_bsize else None,
        "features": {k: v for k, v in meta.items() if k and k not in ("isize", "agcount")},
        "sections": sections,
    }


_BTRFS_LABEL_RE = re.compile(r"Label:\s+(?:'(?P<label>.*)'|none)\s+uuid:\s+(?P<uuid>\S+)")
_BTRFS_DEVICE_RE = re.compile(
    r"devid\s+(?P<devid>\d+)\s+size\s+(?P<size>\S+)\s+used\s+(?P<used>\S+)\s+path\s+(?P<path>\S+)"
)


def parse_btrfs_show(text: str) -> dict[str, object]:
    """Label, uuid and devices from `btrfs filesystem show` output."""
    label_match = _BTRFS_LABEL_RE.search(text)
    total = re.search(r"Total devices\s+(\d+)\s+FS bytes used\s+(\S+)", text)
    devices = [
        {
            "devid": int(m["devid"]),
            "size_bytes": parse_size_bytes(m["size"]),
            "used_bytes": parse_size_bytes(m["used"]),
            "path": m["path"],
        }
        for m in _BTRFS_DEVICE_RE.finditer(text)
    ]
    return {
        "label": label_match["label"] if label_match else None,
        "uuid": label_match["uuid"] if label_match else None,
        "total_devices": int(total[1]) if total else None,
        "bytes_used": parse_size_bytes(total[2]) if total else None,
        "devices": devices,
    }


def describe_argv(fs_type: str, device: str) -> list[str]:
    _check_fs_type(fs_type)
    return {
        "ext4": ["dumpe2fs", "-h", device],
        "xfs": ["xfs_info", device],
        "btrfs": ["btrfs", "filesystem", "show", device],
    }[fs_type]


_PARSERS = {"ext4": parse_dumpe2fs, "xfs": parse_xfs_info, "btrfs": parse_btrfs_show}


def describe_filesystem(
    fs_type: str, device: str, *, log: CommandLog | None = None
) -> dict[str, object]:
    """What mkfs actually built (journal/log size, features, geometry), plus the raw text."""
    record = run(describe_argv(fs_type, device), log=log, timeout_s=DESCRIBE_TIMEOUT_S)
    return {"fs_type": fs_type, **_PARSERS[fs_type](record.stdout), "raw": record.stdout}
