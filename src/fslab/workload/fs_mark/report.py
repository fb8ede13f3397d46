"""A bug report's fs_mark command line as the [workload] fields: the allowlist.

fs_mark's options that only shape its own files (-n, -s, -t, -D, -N, -L, -S)
become fields; -d and -l name paths of the reporter's machine (fslab makes the
-d directories itself, fm0 ... under the scratch filesystem, and writes the log
there), so their values are dropped and only the number of -d directories is
kept; anything else is left out with the reason. fs_mark runs one thread per -d
directory unless -t says otherwise.
"""

from __future__ import annotations

import re

from fslab.workload.base import Dropped, FromReport, ReportOptions, field_or_dropped
from fslab.workload.fs_mark.spec import MAX_THREADS, FsMarkWorkload

KIND = "fs_mark"
FIELDS = {
    "-n": "files",
    "-s": "size",
    "-t": "threads",
    "-D": "subdirs",
    "-N": "files_per_subdir",
    "-L": "iterations",
    "-S": "sync_method",
}
PATHS = {
    "-d": "names directories of the reporter's machine; fslab makes its own under the "
    "scratch filesystem (fm0, fm1, ...), one per -d given",
    "-l": "names a log file of the reporter's machine; fslab writes fs_mark's log into "
    "the scratch filesystem",
}
ASSUMED = {
    "-d": "fslab's own -d directories under the scratch filesystem (fm0 ...)",
    "-l": "fs_mark's log in the scratch filesystem",
}
NOT_KEPT = {
    "-k": "keeps every iteration's files, which fslab's fit check does not count",
    "-F": "runs until the filesystem is full, with no end fslab can bound",
    "-p": "file name length is not a [workload] field fslab has",
    "-r": "random bytes in file names are not a [workload] field fslab has",
    "-w": "the write size is not a [workload] field fslab has (fs_mark's 16KiB is used)",
    "-T": "a thread time limit is not a [workload] field fslab has",
}
_COUNTED_RE = re.compile(r"\((\d+) directories\)$")
ELIDED = frozenset({"...", "\u2026", "<dirs>", "[...]"})
ELIDED_WHY = (
    "the report elides its directories ('-d ...'): how many there were, and so how many "
    "threads fs_mark ran (one per -d), is not in the command line"
)
ELIDED_ASSUMED = "one directory (fm0) and one thread; set workload.dirs and threads to the report's"


def dir_count(value: str | None) -> int:
    """How many -d the report gave (tools.py lists more than two as `FIRST ... LAST (N
    directories)`)."""
    if not value:
        return 1
    counted = _COUNTED_RE.search(value)
    return int(counted.group(1)) if counted else len(value.split())


def written(name: str, value: str | None) -> str:
    return name if value is None else f"{name} {value}"


def from_report(options: ReportOptions) -> FromReport:
    fields: dict[str, object] = {}
    dropped: list[Dropped] = []
    spelled: dict[str, str] = {}
    dirs = 0
    for name, value in sorted(options, key=lambda o: o[0] == "-N"):  # -N after its -D
        if name in FIELDS and value is not None:
            field = FIELDS[name]
            number = int(value) if value.isdigit() and len(value) < 12 else value
            why = field_or_dropped(
                FsMarkWorkload, KIND, field, number, written(name, value), fields
            )
            if why is None:
                fields[field], spelled[name] = number, field
            else:
                dropped.append(why)
        elif name == "-d" and value is not None and value.strip() in ELIDED:
            dropped.append(Dropped(written(name, value), ELIDED_WHY, assumed=ELIDED_ASSUMED))
            dirs = max(dirs, 1)
        elif name == "-d" and value is not None and _COUNTED_RE.fullmatch(value.strip()):
            dirs = dir_count(value)  # a count without paths (a robot's nr_threads)
        elif name in PATHS:
            dropped.append(Dropped(written(name, value), PATHS[name], assumed=ASSUMED[name]))
            if name == "-d":
                dirs = dir_count(value)
        else:
            reason = NOT_KEPT.get(name, "an option fslab does not know for fs_mark")
            dropped.append(Dropped(written(name or "(argument)", value), reason))
    if dirs > MAX_THREADS:
        dropped.append(Dropped(f"-d x {dirs}", f"fs_mark takes at most {MAX_THREADS} directories"))
        dirs = MAX_THREADS
    if dirs > 1:
        fields["dirs"] = dirs
        spelled["-d"] = "dirs"
    if "threads" not in fields and dirs > 1:
        fields["threads"] = dirs  # fs_mark: one thread per -d directory without -t
    ladder = {"dirs": 1} if dirs > 1 else {}
    return FromReport(
        fields,
        tuple(dropped),
        spelled,
        concurrency="threads",
        ladder_fields=ladder,
        ladder_why=f"the report gives its threads {dirs} -d directories; a ladder of thread "
        "counts needs the directories to divide every count, so all threads share one (fm0)",
        shrink="files",
    )
