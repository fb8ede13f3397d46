"""Kernel test robot reports: the `parameters:` block of each benchmark lkp-tests runs,
read as the options lkp-tests gives the benchmark (fio-basic's as fio options), and
the network export (`fs2: nfsv4`) a robot ran it through."""

from __future__ import annotations

import re
from collections.abc import Iterator

from fslab.base.units import parse_size_bytes
from fslab.reproduce import shell
from fslab.reproduce.facts import NOT_RUNNABLE, FioFact, QuestionFact, ToolName, ToolWorkload
from fslab.reproduce.scale import fio_size_text
from fslab.reproduce.text import ReportText
from fslab.workload.fio import trust as fio_trust

# "testcase: fsmark" in older mails, "in testcase: stress-ng" in newer ones
_LKP_TESTCASE_RE = re.compile(r"^\s*(?:in\s+)?testcase:\s*([\w-]+)\s*$")
_LKP_METRIC_RE = re.compile(
    r"\b(aim7|reaim|postmark|fsmark|dbench|sysbench|stress-ng|filebench|fxmark)\.[\w-]+"
)
_SUBJECT_LINES = 6  # the robot's subject: the retold title, or a Subject: line under it
_LKP_PARAM_RE = re.compile(r"^\s*([a-z_]+):\s*(\S+)\s*$")  # indented or not, as mails wrap


# the parameters of a robot's block for a benchmark fslab reads but does not run
_LKP_BLOCK_KEYS: dict[str, tuple[ToolName, tuple[str, ...]]] = {
    "aim7": ("aim7", ("test", "load")),
    "reaim": ("reaim", ("runtime", "nr_task", "test")),
    "postmark": ("postmark", ("number", "trans", "subdirs")),
    "stress-ng": ("stress-ng", ("test", "nr_threads", "testtime")),
    "filebench": ("filebench", ("test",)),
    "fxmark": ("fxmark", ("test", "fstype", "directio", "media")),
}
# a robot's older names for a testcase
_TESTCASE_ALIASES = {"fileio": "sysbench-fileio"}


def testcase(report: ReportText) -> tuple[str, int] | None:
    """The robot's `testcase:` line: the benchmark and the line's number."""
    return next(
        (
            (m.group(1), number)
            for number, line in report.numbered()
            if (m := _LKP_TESTCASE_RE.match(line))
        ),
        None,
    )


def _testcase(report: ReportText) -> str | None:
    """The robot's benchmark: its `testcase:` line, else its subject's metric."""
    if found := testcase(report):
        return _TESTCASE_ALIASES.get(found[0], found[0])
    for line in report.lines[:_SUBJECT_LINES]:
        if metric := _LKP_METRIC_RE.search(line):
            return metric.group(1)
    return None


def lkp_block(report: ReportText) -> Iterator[ToolWorkload]:
    """A kernel test robot's `parameters:` block for dbench, sysbench-fileio, aim7, reaim,
    postmark or stress-ng (fio-basic is workload.py's; fsmark's is lkp_fsmark's)."""
    testcase = _testcase(report)
    if testcase == "dbench":
        yield from _lkp_dbench(report)
        return
    if testcase == "sysbench-fileio":
        yield from _lkp_sysbench(report)
        return
    if testcase not in _LKP_BLOCK_KEYS:
        return
    tool, keys = _LKP_BLOCK_KEYS[testcase]
    params = {k: v for k, v in lkp_params(report).items() if k in keys}
    if not params:
        return
    first = min(n for _, n in params.values())
    text = "\n".join(f"{key}: {value}" for key, (value, _) in params.items())
    yield ToolWorkload(
        tool,
        tuple((key, value) for key, (value, _) in params.items()),
        text,
        report.line(first),
        runnable=tool not in NOT_RUNNABLE,
        why=NOT_RUNNABLE.get(tool, ""),
    )


_LKP_MACHINE_RE = re.compile(r"^(?:on\s+)?test machine:\s*(\d+)\s+threads\b")


def lkp_params(report: ReportText) -> dict[str, tuple[str, int]]:
    """A robot's `parameters:` block: each key's first value and its line."""
    params: dict[str, tuple[str, int]] = {}
    for number, line in report.numbered():
        if (m := _LKP_PARAM_RE.match(line)) and m.group(1) not in params:
            params[m.group(1)] = (m.group(2), number)
    return params


def lkp_count(report: ReportText, share: str) -> str | None:
    """`nr_threads: 100%` as a count of the test machine's CPUs; `32t` as 32."""
    percent = re.fullmatch(r"(\d+)%", share)
    if percent is None:
        count = share.removesuffix("t")
        return count if count.isdigit() else None
    cpus = next(
        (int(m.group(1)) for _, line in report.numbered() if (m := _LKP_MACHINE_RE.match(line))),
        None,
    )
    return str(max(1, int(percent.group(1)) * cpus // 100)) if cpus else None


def _lkp_dbench(report: ReportText) -> Iterator[ToolWorkload]:
    """A robot's dbench block: `nr_threads: 100%` is that many clients per CPU of the test
    machine (lkp-tests' dbench runs one client per thread, its own loadfile and 600s)."""
    params = lkp_params(report)
    if "nr_threads" not in params:
        return
    share, first = params["nr_threads"]
    clients = lkp_count(report, share)
    options = (("clients", clients),) if clients else ()
    yield ToolWorkload("dbench", options, f"nr_threads: {share}", report.line(first))


# lkp-tests' sysbench-fileio parameters, as sysbench's own options
_LKP_SYSBENCH = {
    "rwmode": "file-test-mode",
    "iomode": "file-io-mode",
    "filenum": "file-num",
    "size": "file-total-size",
    "nr_threads": "threads",
    "period": "time",
}


def _lkp_sysbench(report: ReportText) -> Iterator[ToolWorkload]:
    """A robot's sysbench-fileio block: the options lkp-tests runs sysbench fileio with
    (prepare, then run for `period`)."""
    params = lkp_params(report)
    found = {k: v for k, v in params.items() if k in _LKP_SYSBENCH}
    if "rwmode" not in found:
        return
    options: list[tuple[str, str | None]] = [("test", "fileio")]
    for key, (value, _) in found.items():
        if key == "nr_threads":
            value = lkp_count(report, value) or ""
        value = re.sub(r"(?<=\d)[fs]$", "", value)  # 1024f files, 600s
        if value:
            options.append((_LKP_SYSBENCH[key], value))
    first = min(n for _, n in found.values())
    text = "\n".join(f"{key}: {value}" for key, (value, _) in found.items())
    yield ToolWorkload(
        "sysbench", tuple(options), text, report.line(first), steps=("prepare", "run")
    )


# lkp-tests' fsmark sync_method names, as fs_mark's -S numbers
_LKP_SYNC_METHODS = {
    "NoSync": "0",
    "fsyncBeforeClose": "1",
    "syncFsync": "2",
    "PostReverseFsync": "3",
    "syncPostReverseFsync": "4",
    "PostFsync": "5",
    "syncPostFsync": "6",
}
_LKP_FSMARK_KEYS = (
    "nr_threads",
    "filesize",
    "test_size",
    "sync_method",
    "iterations",
    "nr_directories",
    "nr_files_per_directory",
)


def lkp_fsmark(report: ReportText) -> list[ToolWorkload]:
    """A robot's `testcase: fsmark` parameter block without its fs_mark command line (recent
    robot mails link the reproduce files): the fs_mark options lkp-tests derives from it,
    one -d per thread and test_size / filesize files spread over the threads."""
    if _testcase(report) != "fsmark":
        return []
    params = {k: v for k, v in lkp_params(report).items() if k in _LKP_FSMARK_KEYS}
    value = {key: text for key, (text, _) in params.items()}
    try:
        size = parse_size_bytes(value["filesize"])
        total = parse_size_bytes(value["test_size"])
    except (KeyError, ValueError):
        return []
    threads = int(lkp_count(report, value.get("nr_threads", "1")) or 1)
    options: list[tuple[str, str | None]] = [("-d", f"({max(threads, 1)} directories)")]
    options += [("-n", str(max(1, total // size // max(threads, 1)))), ("-s", str(size))]
    if (loops := re.sub(r"x$", "", value.get("iterations", ""))).isdigit():
        options.append(("-L", loops))
    if value.get("sync_method") in _LKP_SYNC_METHODS:
        options.append(("-S", _LKP_SYNC_METHODS[value["sync_method"]]))
    if (dirs := re.sub(r"d$", "", value.get("nr_directories", ""))).isdigit():
        options.append(("-D", dirs))
    if (per_dir := re.sub(r"fpd$", "", value.get("nr_files_per_directory", ""))).isdigit():
        options.append(("-N", per_dir))
    first = min(number for _, number in params.values())
    text = "\n".join(f"{key}: {text}" for key, text in value.items())
    return [ToolWorkload("fs_mark", tuple(options), text, report.line(first))]


_LKP_EXPORT_RE = re.compile(r"^\s+fs[12]:\s*(nfs\w*|cifs|smb\w*)\s*$")


def lkp_export(report: ReportText) -> QuestionFact | None:
    """A robot's `fs2: nfsv4` (or cifs): the benchmark ran over a network mount of the
    filesystem, which fslab does not build; it runs on the filesystem itself."""
    for number, line in report.numbered():
        match = _LKP_EXPORT_RE.match(line)
        if match:
            return QuestionFact(
                "network filesystem",
                f"the robot ran the benchmark through {match.group(1)}, exported from the "
                "filesystem under test; fslab does not build network mounts",
                "the benchmark runs on the local filesystem (the export's cost is not measured)",
                report.line(number),
            )
    return None


# --- fio-basic: the parameters as fio options -------------------------------------------


_LKP_KEYS = ("runtime", "rw", "bs", "ioengine", "nr_task", "test_size", "fs", "disk", "direct")


def lkp_fio(report: ReportText, questions: list[QuestionFact]) -> Iterator[FioFact]:
    """A kernel test robot's `testcase: fio-basic` with `key: value` parameters."""
    found = testcase(report)
    if found is None or not found[0].startswith("fio"):
        return
    params = {k: v for k, v in lkp_params(report).items() if k in _LKP_KEYS}
    if not {"rw", "bs"} <= params.keys():
        return
    first = min(number for _, number in params.values())
    options: dict[str, str | None] = {"name": "fio-basic"}
    notes = [
        "lkp-tests fio-basic parameters read as fio options (nr_task -> numjobs, "
        "test_size split over the tasks -> size, runtime -> runtime with time_based)"
    ]
    for key in ("rw", "bs", "ioengine"):
        if key in params and _lkp_value_passes(key, *params[key], report, questions):
            options[key] = params[key][0]
    if params.get("direct", ("",))[0] == "direct":
        options["direct"] = "1"
    # `nr_task: 50%` is half the test machine's CPUs, as lkp-tests counts them
    tasks = int(lkp_count(report, params["nr_task"][0]) or 1) if "nr_task" in params else 1
    options["numjobs"] = str(tasks)  # 0 is asked about with the spec's job counts
    if "test_size" in params:
        try:
            total = parse_size_bytes(params["test_size"][0])
            options["size"] = fio_size_text(total // max(tasks, 1))
        except ValueError:
            questions.append(
                QuestionFact(
                    item="test_size",
                    question=f"test_size {params['test_size'][0]} is not a size",
                    assumed="fio's default size",
                    source=report.line(params["test_size"][1]),
                )
            )
    if "runtime" in params and _lkp_value_passes("runtime", *params["runtime"], report, questions):
        options["runtime"] = params["runtime"][0].removesuffix("s")
        options["time_based"] = None
    text = "\n".join(f"{key}: {value}" for key, (value, _) in params.items())
    yield FioFact(
        options=options,
        form="lkp parameters",
        text=text,
        source=report.line(first),
        notes=tuple(notes),
    )


def _lkp_value_passes(
    key: str, value: str, number: int, report: ReportText, questions: list[QuestionFact]
) -> bool:
    """An lkp parameter passes as a fio option as any report's option does: fio_trust's
    allowlist, and no shell syntax; otherwise it is left out and asked about."""
    found = fio_trust.judge(key, value)
    if found is None and not shell.leftover_expansion(value):
        return True
    why = found.reason if found is not None else "it needs the shell to compute"
    questions.append(
        QuestionFact(
            f"lkp {key}", f"the report's {key}: {value}: {why}", "left out", report.line(number)
        )
    )
    return False
