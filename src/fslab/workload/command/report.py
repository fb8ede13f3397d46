"""A bug report's shell command as a command [workload]: a proposal, never switched on.

A report's command runs whatever its text says, as root: fslab writes it as
`bash -c TEXT` (reports' commands use bash's braces and `time`) with
`allow_commands = false`, so `fslab run` refuses it until the reader has
reviewed it and opted in. No report's command is ever written switched on.
"""

from __future__ import annotations

from fslab.workload.base import Dropped, FromReport, ReportOptions

REVIEW = (
    "written as a proposal with allow_commands = false, which fslab refuses to run: review "
    "every program and path it names (it runs as root, in the scratch filesystem, where "
    "files the reporter had, a tarball or a tree, are not), then switch allow_commands on "
    "yourself"
)


def from_report(options: ReportOptions) -> FromReport:
    text = dict(options).get("command") or ""
    if not text.strip():
        raise ValueError("the report's command is empty")
    return FromReport(
        {"argv": ["bash", "-c", text], "allow_commands": False},
        (Dropped(text, REVIEW, assumed="not run: allow_commands = false"),),
        {"command": "argv"},
    )
