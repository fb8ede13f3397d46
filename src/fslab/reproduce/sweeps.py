"""What the reporter changed between runs: the experiment's variable, not just its command.

Shell loops over an option are workload.py's (a loop's values are literal);
this module reads the other ways reports show a variable of the workload: an edit
between two runs (`sed -i 's/4G/100G/' job.fio`), an option left as a variable whose
values the prose or the figures list (`-bs=$bs` with tables under `bs=4k`, `bs=16k`;
`-numjobs=$thread` "at 1, 2, 4 and 8 threads"), a results table with a row per value
of a job option, dbench client counts ("clients 1 to 128", "32 clients" and "64
clients"), one tool's commands differing in one option, dd's `count=10/100`, and
kernels or commits compared. How the filesystem was made or mounted, or the filesystem
itself, is configsweeps.py's. Each becomes a SweepFact with the line it came from.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from fslab.base.units import parse_size_bytes
from fslab.reproduce import configsweeps, fiojobs
from fslab.reproduce.facts import (
    DdFact,
    FilesystemFact,
    FioFact,
    KernelFact,
    Line,
    SweepFact,
    ToolWorkload,
)
from fslab.reproduce.shell import MAX_LOOP_VALUES
from fslab.reproduce.text import ReportText, without_prompt
from fslab.workload.fio.benchmark import FSLAB_SET

_SED_RE = re.compile(r"\bsed\s+-i\s+['\"]?s([/|#])([^/|#]+)\1([^/|#]*)\1g?['\"]?\s+(\S+)")
_VARIABLE_RE = re.compile(r"^\$\{?([A-Za-z_]\w*)\}?$")
_LIST_RE = re.compile(
    r"\b(\d+(?:\s*,\s*\d+)+,?\s+(?:and|or)\s+\d+)\s+(threads|jobs|processes|tasks|clients)\b",
    re.I,
)
# "testing with 4k/8k/12k/16k blocksizes", "at 4k, 16k and 64k block sizes"
_SIZE_LIST_RE = re.compile(
    r"\b(\d+[kKmM](?:\s*[/,]\s*\d+[kKmM])*(?:\s*[/,]\s*|,?\s+(?:and|or)\s+)\d+[kKmM])"
    r"\s+(?:block\s*sizes?|blocksizes?|bs)\b",
    re.I,
)
_CLIENT_RANGE_RES = (
    re.compile(r"\bclients\s+(\d+)\s+to\s+(\d+)\b", re.I),
    re.compile(r"\b(\d+)\s+to\s+(\d+)\s+clients\b", re.I),
)
_CLIENTS_RE = re.compile(r"\b(\d+)\s+clients?\b")
# the report's direct-I/O job run again buffered: "buffer IO + XFS", "with buffered I/O",
# "without O_DIRECT"
_BUFFERED_RE = re.compile(
    r"\bbuffer(?:ed)?\s+I/?O\b|\bwithout\s+(?:direct\s+I/?O|O_DIRECT|direct=1)\b|"
    r"\bpage\s+cache\s+I/?O\b",
    re.I,
)
# the report's writing job run again over the file its first run left: "run the same test
# again, this time the file already exists", "rerun ... onto the already written file"
_WRITTEN_AGAIN_RE = re.compile(
    r"\b(?:again|second\s+run|re-?run)\b[^.]{0,80}?\bfile\b[^.]{0,40}?\balready\s+"
    r"(?:exists|written|there|holds\s+data)\b|\balready[- ]written\s+file\b",
    re.I,
)
_LKP_IDS_RE = re.compile(r"^\s*([0-9a-f]{10,40})\s+([0-9a-f]{10,40})\s*$")
_LKP_TITLE_RE = re.compile(r"\]\s+([0-9a-f]{10}):\s")
_COMMIT_RE = re.compile(
    r"\b(?:commit|revert\w*|bisect\w*)\b[^.]{0,40}?\b([0-9a-f]{10,40})\b|\bpatch(?:ed|set)?\b|"
    r"\(([0-9a-f]{12,40})\)",
    re.I,
)
# a change to a program, not to the kernel: a GitHub pull request ("GitHub pull request
# containers/fuse-overlayfs#60"), a link to one outside Linux's tree
_USERSPACE_CHANGE_RE = re.compile(
    r"\bGitHub\s+pull\s+request\b|github\.com/[\w.-]+/(?!linux\b)[\w.-]+/(?:pull|commit)/",
    re.I,
)
# "gocryptfs commit 024511d9c7", "the patched mkfs.btrfs": a program's commit or patch
_PROGRAM_PATCHED_RE = re.compile(
    r"\b(?:btrfs-progs|xfsprogs|e2fsprogs|util-linux|gocryptfs|encfs|fuse-overlayfs|fio"
    r"|sysbench|dbench|mkfs\.\w+|btrfstune)\s+(?:commit|patch)\b|\bpatched\s+(?:mkfs|btrfs-progs"
    r"|xfsprogs|e2fsprogs|fio|sysbench|dbench)\b",
    re.I,
)
# fio options a sweep may add to a job that did not write them: the first value is fio's
# default, what the job ran with
IMPLIED_FIO_AXES = frozenset({"overwrite"})
_NAMED_AXES = {"thread": "numjobs", "threads": "numjobs", "jobs": "numjobs"}


def find_sweeps(
    report: ReportText,
    fio: list[FioFact],
    tools: list[ToolWorkload],
    filesystems: list[FilesystemFact],
    kernels: list[KernelFact],
    dd: Sequence[DdFact] = (),
) -> list[SweepFact]:
    """The variables the report changed, the workload's own first, kernels last."""
    found = [
        *_fio_sweeps(fio),
        *_sed_edits(report, fio),
        *_direct_then_buffered(report, fio),
        *_written_again(report, fio),
        *_variable_values(report, fio),
        *_table_rows(report, fio),
        *_tool_sweeps(report, tools),
        *_dd_read_sizes(dd),
        *_dd_alternatives(dd),
        *configsweeps.config_sweeps(report, filesystems),
    ]
    if not found and (other := configsweeps.filesystem_variable(report, filesystems)):
        found.append(other)
    kernel = _kernel_sweep(report, kernels)
    return [*found, *([kernel] if kernel else [])]


def _fio_sweeps(fio: list[FioFact]) -> Iterator[SweepFact]:
    """A loop or `# 2 4` comment workload.py read, and several jobs differing in one option."""
    for job in fio[:1]:
        for axis, values in job.sweeps:
            yield SweepFact(axis, values, "the report's loop or listed values", job.source)
    swept, kept = fiojobs.one_option_apart([job.options for job in fio])
    if swept is not None and _sweepable(swept):
        values = tuple(
            dict.fromkeys(str(fiojobs.option_value(fio[i].options, swept)) for i in kept)
        )
        yield SweepFact(swept, values, "the report's fio jobs differ only in it", fio[0].source)


def _sweepable(axis: str) -> bool:
    """Whether fio's benchmark takes this option as an axis: jobs that differ in their
    filename (a file against the raw device) differ in what fslab sets itself."""
    return axis not in FSLAB_SET


def _direct_then_buffered(report: ReportText, fio: list[FioFact]) -> Iterator[SweepFact]:
    """A direct-I/O job the report also ran buffered (its words say so; the command is
    often not repeated): a sweep of direct, 1 then 0."""
    if not fio or str(fio[0].options.get("direct")) not in ("1", "True", "true"):
        return
    if any(axis == "direct" for axis, _ in fio[0].sweeps) or len(fio) > 1:
        return
    for number, line in report.numbered():
        match = _BUFFERED_RE.search(line)
        if match and number != fio[0].source.number:
            why = f'the report runs it buffered too: "{match.group(0)}"'
            yield SweepFact("direct", ("1", "0"), why, report.line(number))
            return


def _written_again(report: ReportText, fio: list[FioFact]) -> Iterator[SweepFact]:
    """A writing job the report ran again onto the file its first run wrote: fio's
    overwrite, 0 (a new file each run, as fslab's fresh filesystem gives) then 1 (fio
    writes the file out first)."""
    if len(fio) != 1 or "write" not in str(fio[0].options.get("rw", "")):
        return
    if "overwrite" in fio[0].options or any(a == "overwrite" for a, _ in fio[0].sweeps):
        return
    for number, line in report.numbered():
        if (match := _WRITTEN_AGAIN_RE.search(line)) and number > fio[0].source.number:
            why = f'the report runs it again onto the written file: "{match.group(0)}"'
            yield SweepFact("overwrite", ("0", "1"), why, report.line(number))
            return


def _sed_edits(report: ReportText, fio: list[FioFact]) -> Iterator[SweepFact]:
    """`sed -i 's/4G/100G/' job.fio` between two runs: a sweep of the option it edits."""
    if not fio:
        return
    written = dict(fio[0].written)
    for number, raw in report.numbered():
        match = _SED_RE.search(without_prompt(raw))
        if match is None:
            continue
        old, new = match.group(2), match.group(3)
        option = next((k for k, v in written.items() if v is not None and old in v), None)
        if option is not None:
            before = str(written[option])
            yield SweepFact(
                option,
                (before, before.replace(old, new)),
                f"the report edits the job between runs ({match.group(0).strip()})",
                report.line(number),
            )


def _variable_values(report: ReportText, fio: list[FioFact]) -> Iterator[SweepFact]:
    """An option given as a variable the report never sets (`-bs=$bs`), with the values
    its figures are listed under (`bs=4k`, `bs=16k`) or its prose lists ("at 1, 2, 4 and
    8 threads")."""
    if not fio:
        return
    job = fio[0]
    swept = {axis for axis, _ in job.sweeps}
    for name, value in job.written:
        variable = _VARIABLE_RE.match(value or "")
        if variable is None or name in swept:
            continue
        values = _listed_after(report, name, job.source.number)
        if len(values) >= 2:
            yield SweepFact(name, tuple(values), f"figures are given per {name}=", job.source)
            continue
        for number, line, own in report.wrapped():
            sizes = _SIZE_LIST_RE.search(line) if name in ("bs", "blocksize") else None
            if sizes is not None and sizes.start() < own:
                yield SweepFact(
                    name,
                    tuple(re.findall(r"\d+[kKmM]", sizes.group(1))),
                    f'the report lists "{sizes.group(0)}"',
                    Line(number, report.lines[number - 1]),
                )
                break
            listed = _LIST_RE.search(line)
            if listed is None or listed.start() >= own:
                continue
            unit = listed.group(2).lower()
            if _NAMED_AXES.get(variable.group(1).lower()) == name or (
                name == "numjobs" and unit in ("threads", "jobs", "processes", "tasks")
            ):
                numbers = re.findall(r"\d+", listed.group(1))
                yield SweepFact(
                    name,
                    tuple(numbers),
                    f'the report lists "{listed.group(0)}"',
                    Line(number, report.lines[number - 1]),
                )
                break


_TABLE_HEAD_RE = re.compile(r"^\s*([A-Za-z_]+)\s{2,}\S")
_TABLE_ROW_RE = re.compile(r"^\s*(\d+(?:\.\d+)?[kKmMgGtT]?i?B?)\s+\S*\d")


def _table_rows(report: ReportText, fio: list[FioFact]) -> Iterator[SweepFact]:
    """A results table whose first column is one of the job's options, a row per value
    (`Size  XFS  EXT4` over `512M ...`, `4G ...`): the report ran the job at each."""
    if not fio:
        return
    written = {name for name, _ in fio[0].written}
    for number, line in report.numbered():
        head = _TABLE_HEAD_RE.match(line)
        if head is None:
            continue
        axis = _NAMED_AXES.get(head.group(1).lower(), head.group(1).lower())
        if axis not in written:
            continue
        values = _rows_under(report, number)
        if len(values) >= 2:
            yield SweepFact(
                axis, tuple(values), f"the report's table has a row per {axis}", report.line(number)
            )
            return


def _rows_under(report: ReportText, number: int) -> list[str]:
    """The first cells of a table's rows under its header line (one line of sub-headings,
    `BW  Latency`, may sit between)."""
    following = report.lines[number : number + MAX_LOOP_VALUES + 1]
    if following and not _TABLE_ROW_RE.match(following[0]):
        following = following[1:]
    values: list[str] = []
    for row in following[:MAX_LOOP_VALUES]:
        cell = _TABLE_ROW_RE.match(row)
        if cell is None:
            break
        values.append(cell.group(1))
    return values


def _listed_after(report: ReportText, name: str, after: int) -> list[str]:
    pattern = re.compile(rf"^\s*{re.escape(name)}=(\S+?)[,\s]*(?:\s|$)")
    values: list[str] = []
    for number, line in report.numbered():
        match = pattern.match(line)
        if number > after and match and "$" not in match.group(1):
            values.append(match.group(1).rstrip(".:;"))  # `bs=4k:` over its table
    return list(dict.fromkeys(values))[:MAX_LOOP_VALUES]


def _tool_sweeps(report: ReportText, tools: list[ToolWorkload]) -> Iterator[SweepFact]:
    """sysbench's `[rndwr|seqwr]` alternatives; dbench's client counts; the same tool run
    again with one option changed."""
    yield from _commands_differing(tools)
    for tool in tools[:1]:
        for axis, values in tool.sweeps:
            yield SweepFact(axis, values, "the report ran each of these", tool.source)
        yield from _variables_listed(report, tool)
        if tool.tool != "dbench":
            continue
        for number, line in report.numbered():  # a results table with a row per client count
            head = _TABLE_HEAD_RE.match(line)
            if not (head and head.group(1).lower() in ("clients", "procs", "nprocs")):
                continue
            if len(rows := _rows_under(report, number)) >= 2:
                why = "the report's table has a row per client count"
                yield SweepFact("clients", tuple(rows), why, report.line(number))
                return
        for number, line, own in report.wrapped():
            for regex in _CLIENT_RANGE_RES:
                match = regex.search(line)
                if match and match.start() < own:
                    low, high = int(match.group(1)), int(match.group(2))
                    doubled = _doublings(low, high)
                    if len(doubled) >= 2:
                        yield SweepFact(
                            "clients",
                            tuple(doubled),
                            f'"{match.group(0)}"',
                            Line(number, report.lines[number - 1]),
                        )
                        return
        counts = [
            (n, m.group(1)) for n, line in report.numbered() for m in _CLIENTS_RE.finditer(line)
        ]
        distinct = list(dict.fromkeys(c for _, c in counts))
        if len(distinct) >= 2:
            yield SweepFact(
                "clients",
                tuple(sorted(distinct, key=int)),
                "figures at each client count",
                report.line(counts[0][0]),
            )


def _variables_listed(report: ReportText, tool: ToolWorkload) -> Iterator[SweepFact]:
    """An option left as a variable whose values the prose lists: `-S $sync_mode` and
    "$sync_mode takes the values 0, 1, 2, 3, 4, 5 and 6"."""
    for name, value in tool.options:
        variable = _VARIABLE_RE.match(value or "")
        if variable is None:
            continue
        listed = re.compile(
            rf"\$?\{{?{re.escape(variable.group(1))}\}}?\s+(?:takes|took|ran|runs|is|was|goes|"
            rf"went|=|in|over)\s+(?:through\s+)?(?:the\s+)?(?:values?\s+)?(\d+(?:\s*,\s*\d+)*"
            rf"(?:,?\s+(?:and|or)\s+\d+)?)"
        )
        for number, line, own in report.wrapped():
            match = listed.search(line)
            if match and match.start() < own:
                numbers = tuple(dict.fromkeys(re.findall(r"\d+", match.group(1))))
                if len(numbers) >= 2:
                    yield SweepFact(name, numbers, f'"{match.group(0)}"', report.line(number))
                    return


def options_differing(mine: dict[str, str | None], theirs: dict[str, str | None]) -> list[str]:
    """The options two commands of one tool set apart: a path of the reporter's machine
    (dbench -D /xfs, -D /ext4) is fslab's to set, but how many (fs_mark's -d) counts."""
    differ = []
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if str(a or b or "").startswith("/"):
            if len(str(a or "").split()) != len(str(b or "").split()):
                differ.append(key)
        elif a != b:
            differ.append(key)
    return differ


def _commands_differing(tools: list[ToolWorkload]) -> Iterator[SweepFact]:
    """The report's commands of one tool, each giving the one option they differ in."""
    of_tool = [t for t in tools if tools and t.tool == tools[0].tool]
    same = [dict(t.options) for t in of_tool]
    if len(same) < 2:
        return
    counts = {
        tuple(sorted(Counter(n for n, v in t.options for _ in (v or "-").split()).items()))
        for t in of_tool
    }
    if len(counts) > 1:  # `-d a -d b` against one -d: fs_mark's threads changed too
        return
    differing = set().union(*(options_differing(same[0], o) for o in same[1:]))
    if len(differing) != 1:
        return
    axis = differing.pop()
    if all(axis in o for o in same):
        values = tuple(dict.fromkeys(str(o[axis]) for o in same))
        yield SweepFact(
            axis,
            values,
            f"the report's {tools[0].tool} commands differ only in it",
            tools[0].source,
        )


def _doublings(low: int, high: int) -> list[str]:
    values: list[str] = []
    value = max(low, 1)
    while value <= high and len(values) < MAX_LOOP_VALUES:
        values.append(str(value))
        value *= 2
    return values


def _dd_alternatives(dd: Sequence[DdFact]) -> Iterator[SweepFact]:
    """`count=10/100` (or `bs=4k/1M`): one dd line written for each of its values."""
    for name in ("count", "bs"):
        values = [v for v in (dd[0].operand(name).split("/") if dd else []) if v]
        if len(values) >= 2 and all(re.fullmatch(r"\d+[kKMG]?", v) for v in values):
            yield SweepFact(name, tuple(values), f"dd's {name}= lists each value", dd[0].source)
            return


def _dd_read_sizes(dd: Sequence[DdFact]) -> Iterator[SweepFact]:
    """The measured file read again with other block sizes: a sweep of bs, smallest first."""
    reads = [r for r in dd if r.read]
    if not reads:
        return
    same = [r for r in reads if r.operand("if") == reads[0].operand("if")]
    sizes = list(dict.fromkeys(r.operand("bs", "512") for r in same))
    if len(sizes) > 1:
        with contextlib.suppress(ValueError):  # a size dd reads differently stays in order
            sizes.sort(key=parse_size_bytes)
        why = f"the report reads {reads[0].operand('if')} with each"
        yield SweepFact("bs", tuple(sizes), why, same[1].source)


def _kernel_sweep(report: ReportText, kernels: list[KernelFact]) -> SweepFact | None:
    """Kernels or commits compared: the robot's two commit columns, two kernel versions,
    or a commit (a patch) against the kernel without it."""
    for number, line in report.numbered():
        ids = _LKP_IDS_RE.match(line)
        if ids:
            values = (ids.group(1)[:10], ids.group(2)[:10])
            return SweepFact("kernel", values, "the robot's commit columns", report.line(number))
    title = _LKP_TITLE_RE.search(report.lines[0]) if report.lines else None
    if title:
        return SweepFact(
            "kernel",
            ("parent", title.group(1)),
            "the robot's commit and its parent",
            report.line(1),
        )
    if len(kernels) >= 2:
        return SweepFact(
            "kernel",
            tuple(k.version for k in kernels),
            "the report compares kernels",
            kernels[0].source,
        )
    if _USERSPACE_CHANGE_RE.search(report.joined):
        return None  # the commit or patch is a program's (a GitHub pull request), not Linux's
    for number, line in report.numbered():
        match = _COMMIT_RE.search(line)
        if match and not _PROGRAM_PATCHED_RE.search(line):
            base = kernels[0].version if kernels else "the kernel"
            change = match.group(1) or match.group(2) or match.group(0)
            return SweepFact(
                "kernel",
                (base, f"{base} with {change}"),
                "a commit or patch against the kernel",
                report.line(number),
            )
    return None
