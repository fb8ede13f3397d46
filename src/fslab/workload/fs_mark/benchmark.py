"""fs_mark as a benchmark: its declaration (workload/base.py's contract) and its argv.

fs_mark refuses a -d path of 40 bytes or more. fslab's scratch mounts are
/run/fslab/mnt-<pid>-<8 hex>, at most 31 bytes (pid_max is at most 2^22, 7
digits), so the -d directories are short names directly under the mount
(`fm0` ... `fm63`, at most 36 bytes); a longer directory is refused before
anything runs, naming the limit. fs_mark writes a log (-l) into its working
directory unless told where: it goes into the scratch filesystem too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import ClassVar

from fslab.base.vocab import ScalarValue
from fslab.workload.base import (
    Benchmark,
    Command,
    FromReport,
    Metric,
    Output,
    Plan,
    ReportOptions,
    RunShape,
    Sweep,
    WorkloadSpec,
    check_field_values,
    validated_swept,
)
from fslab.workload.fs_mark import parse as fs_mark_parse
from fslab.workload.fs_mark import report as fs_mark_report
from fslab.workload.fs_mark.spec import FsMarkWorkload

MAX_DIR_BYTES = 39  # fs_mark: "directory pathname too long (must be less than 40 bytes)"
LOG_NAME = "fslab-fs_mark.log"
# the fields the report's Setup shows, in fs_mark's order of options
SHOWN = (
    "dirs",
    "subdirs",
    "files_per_subdir",
    "files",
    "size",
    "threads",
    "iterations",
    "sync_method",
)


def _fs_mark(workload: WorkloadSpec) -> FsMarkWorkload:
    assert isinstance(workload, FsMarkWorkload), workload
    return workload


def fs_mark_dirs(directory: str, count: int) -> list[str]:
    """The -d directories under the scratch mount; ValueError when fs_mark would refuse one."""
    dirs = [os.path.join(directory, f"fm{i}") for i in range(count)]
    longest = max(dirs, key=lambda d: len(os.fsencode(d)))
    if len(os.fsencode(longest)) > MAX_DIR_BYTES:
        raise ValueError(
            f"fs_mark refuses a -d path of 40 bytes or more, and {longest!r} is "
            f"{len(os.fsencode(longest))}: the scratch directory {directory!r} is too long "
            "for fs_mark (fslab's own mounts, /run/fslab/mnt-<pid>-<hex>, always fit)"
        )
    return dirs


def fs_mark_argv(w: FsMarkWorkload, directory: str) -> list[str]:
    argv = ["fs_mark"]
    for path in fs_mark_dirs(directory, w.dirs):
        argv += ["-d", path]
    if w.subdirs:
        argv += ["-D", str(w.subdirs)]
    if w.files_per_subdir:
        argv += ["-N", str(w.files_per_subdir)]
    argv += ["-n", str(w.files), "-s", str(w.size), "-t", str(w.threads)]
    argv += ["-L", str(w.iterations), "-S", str(w.sync_method)]
    return [*argv, "-l", os.path.join(directory, LOG_NAME)]


class FsMarkBenchmark(Benchmark):
    kind = "fs_mark"
    Spec = FsMarkWorkload
    summary = "fs_mark: create files of a size with an fsync policy, N threads"
    package = "fsmark"
    binary = "fs_mark"
    axes = ("threads", "files", "size", "sync_method", "dirs")
    metrics = tuple(
        Metric(name, d.unit, d.direction, d.description) for name, d in fs_mark_parse.METRICS
    )
    headline = (fs_mark_parse.HEADLINE,)
    labels: ClassVar[Mapping[str, str]] = {fs_mark_parse.HEADLINE: "files/s"}

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        super().check_axis(axis, values)
        check_field_values(FsMarkWorkload, self.kind, axis, values)

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        return validated_swept(workload, sweep)

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        w = _fs_mark(self.swept(workload, sweep))
        if w.threads % w.dirs:
            where = next((f"sweep.{k}" for k in ("threads", "dirs") if k in sweep), "workload")
            raise ValueError(
                f"{where}: threads ({w.threads}) must be a multiple of dirs ({w.dirs}): "
                "fs_mark gives each -d directory the same number of threads"
            )
        return Plan((Command("run", tuple(fs_mark_argv(w, directory))),))

    def files_bytes(
        self, workload: WorkloadSpec, sweep: Sweep, run: RunShape
    ) -> tuple[int | None, str]:
        w = _fs_mark(self.swept(workload, sweep))
        # the files of every iteration stay (FSUse% grows row by row in the captures)
        total = w.iterations * w.threads * w.files * w.size
        return (
            total,
            f"fs_mark {w.iterations} x {w.threads} thread(s) x {w.files} file(s) x {w.size} B",
        )

    def from_report(self, options: ReportOptions) -> FromReport:
        return fs_mark_report.from_report(options)

    def parse(self, out: Output) -> dict[str, float]:
        return fs_mark_parse.parse(out.stdout)

    def describe(self, workload: WorkloadSpec) -> list[str]:
        w = _fs_mark(workload)
        words = [f"{k}={getattr(w, k)}" for k in SHOWN if k in w.model_fields_set]
        return [" ".join(["fs_mark", *words]) + " (-d MNT/fm<i>, -l MNT/" + LOG_NAME + ")"]
