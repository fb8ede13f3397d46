"""A bug report's dbench command line as the [workload] fields: the allowlist.

The client count and the sync flags (-s, -S, -F) become fields and -t the
runtime. -D names a directory of the reporter's machine (fslab runs dbench in
the scratch filesystem) and -c a loadfile, whose operations name the paths
dbench creates and deletes: only a loadfile dbench ships is kept. A backend
(-B: nfs, iscsi, smb, a socket) reaches outside the filesystem, and other
options fslab does not know are left out, each with the reason. An MMTests
config names dbench without its command line: dbench's defaults stand in.
"""

from __future__ import annotations

import os
import re

from fslab.workload.base import Dropped, FromReport, ReportOptions, field_or_dropped
from fslab.workload.dbench.spec import LOADFILE_DIR, DbenchWorkload

KIND = "dbench"
FLAGS = {"-s": "sync", "-S": "sync_dirs", "-F": "fsync"}
REASONS = {
    "-D": "names a directory of the reporter's machine; fslab runs dbench in the scratch "
    "filesystem",
    "-B": "selects a backend that may reach the network, a device or another program",
    "-T": "a network option (dbench's socket backends)",
    "-e": "a backend option fslab does not check",
    "-o": "a backend option fslab does not check",
}


def loadfile(value: str) -> str | None:
    """The loadfile dbench ships that the report names (a bare name is one of them)."""
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", value):
        value = f"{LOADFILE_DIR}/{value}"
    if os.path.dirname(value) == LOADFILE_DIR and os.path.normpath(value) == value:
        return value
    return None


def from_report(options: ReportOptions) -> FromReport:
    fields: dict[str, object] = {}
    dropped: list[Dropped] = []
    spelled: dict[str, str] = {}
    runtime: float | None = None
    for name, value in options:
        shown = name if value is None else f"{name} {value}"
        if name == "clients" and value is not None:
            number = int(value) if value.isdigit() and len(value) < 12 else value
            why = field_or_dropped(DbenchWorkload, KIND, "clients", number, f"{value} (clients)")
            if why is None:
                fields["clients"], spelled["clients"] = number, "clients"
            else:
                dropped.append(why)
        elif name in FLAGS and value is None:
            fields[FLAGS[name]], spelled[name] = True, FLAGS[name]
        elif name == "-t" and value is not None and value.isdigit():
            runtime = float(value) or None
        elif name == "-c" and value is not None and loadfile(value):
            fields["loadfile"], spelled["-c"] = loadfile(value), "loadfile"
        elif name == "-c":
            dropped.append(
                Dropped(
                    shown,
                    "names a loadfile that dbench does not ship (a loadfile names the paths "
                    "dbench creates and deletes)",
                    assumed=f"{LOADFILE_DIR}/client.txt, the loadfile dbench ships",
                )
            )
        elif name == "mmtests_config":
            dropped.append(
                Dropped(
                    f"MMTests config {value}",
                    "the report names the config, not its dbench command line",
                    assumed="dbench's defaults: client.txt, no sync flags (async)",
                )
            )
        else:
            reason = REASONS.get(name, "an option fslab does not know for dbench")
            where = "dbench runs in the scratch filesystem (-D MNT)" if name == "-D" else ""
            dropped.append(Dropped(shown, reason, assumed=where))
    return FromReport(fields, tuple(dropped), spelled, concurrency="clients", runtime_s=runtime)
