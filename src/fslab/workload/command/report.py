"""A bug report's shell command as a command [workload]: a proposal, never switched on.

A report's command runs whatever its text says, as root: fslab writes it as
`bash -c TEXT` (reports' commands use bash's braces and `time`) with
`allow_commands = false`, so `fslab run` refuses it until the reader has
reviewed it and opted in. No report's command is ever written switched on.
"""

from __future__ import annotations

import re

from fslab.workload.base import Dropped, FromReport, ReportOptions

REVIEW = (
    "written as a proposal with allow_commands = false, which fslab refuses to run: review "
    "every program and path it names (it runs as root, in the scratch filesystem, where "
    "files the reporter had, a tarball or a tree, are not), then switch allow_commands on "
    "yourself"
)


# what in a command acts outside the scratch filesystem: a device, mounting, formatting
_OUTSIDE_RE = re.compile(
    r"/dev/(?!null\b|zero\b|urandom\b|random\b|shm\b)\w+|\b(?:u?mount|mkfs[.\w]*|mke2fs|"
    r"wipefs|dd\s+[^;|]*\bof=/dev/|losetup|mdadm|lvcreate|parted|fdisk|modprobe|rmmod|insmod)\b"
)

# `for i in {1..9}; echo x > f$i` as a reporter typed it: a loop without its do ... done
_NO_DO_RE = re.compile(r"^\s*for\s+\w+\s+in\b(?!.*\bdo\b)")


def from_report(options: ReportOptions) -> FromReport:
    text = dict(options).get("command") or ""
    if not text.strip():
        raise ValueError("the report's command is empty")
    outside = sorted({m.group(0).split()[0] for m in _OUTSIDE_RE.finditer(text)})
    why = REVIEW
    if _NO_DO_RE.match(text):
        why += "; its loop has no do/done as written, which bash refuses: add them first"
    if outside:
        why += (
            f"; it names {', '.join(outside)}: devices and mounts of the reporter's "
            "machine, which fslab makes itself per configuration; take them out first"
        )
    shown = text if len(text) <= 240 and "\n" not in text else _head(text)
    return FromReport(
        {"argv": ["bash", "-c", text], "allow_commands": False},
        (Dropped(shown, why, assumed="not run: allow_commands = false"),),
        {"command": "argv"},
    )


def _head(text: str) -> str:
    """A long script named by its first lines, for the question (the spec holds it all)."""
    lines = text.splitlines()
    shown = [line.strip() for line in lines if line.strip()][:2]
    return f"{' / '.join(shown)[:200]} ... ({len(lines)} lines)"
