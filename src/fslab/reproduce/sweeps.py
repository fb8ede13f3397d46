"""What the reporter changed between runs: the experiment's variable, not just its command.

Shell loops over an option are workload.py's (a loop's values are literal);
this module reads the other ways reports show a variable: an edit between two
runs (`sed -i 's/4G/100G/' job.fio`), an option left as a variable whose values
the prose or the figures list (`-bs=$bs` with tables under `bs=4k`, `bs=16k`;
`-numjobs=$thread` "at 1, 2, 4 and 8 threads"), a results table with a row per
value of a job option, dbench client counts ("clients 1 to 128", "32 clients" and
"64 clients"), one tool's commands differing in one option, dd's `count=10/100`, an
mkfs option repeated with another value ("He repeats it with -n parent=1"), a mount
option with and without, both values named, listed in braces or changed by a remount
(the thread's workaround), and kernels or commits compared. Each becomes a SweepFact
with the line it came from.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from fslab.base.units import parse_size_bytes
from fslab.reproduce import fiojobs, shell
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
_CLIENT_RANGE_RES = (
    re.compile(r"\bclients\s+(\d+)\s+to\s+(\d+)\b", re.I),
    re.compile(r"\b(\d+)\s+to\s+(\d+)\s+clients\b", re.I),
)
_CLIENTS_RE = re.compile(r"\b(\d+)\s+clients?\b")
_WITH_WITHOUT_RE = re.compile(
    r"\bmounted\s+with(?:out)?\s+([a-z_]+)\s+and\s+with(?:out)?\s+it\b|"
    r"\bwith\s+and\s+without\s+(?:the\s+)?([a-z_]+)\s+mount\s+option\b",
    re.I,
)
_WITH_BOTH_RE = re.compile(
    r"\bmounted\s+with\s+([a-z_]+)=(\w+)\s+(?:and|or|against|vs\.?)\s+(?:\1)?=(\w+)"
)
_WITHOUT_OPTION_RE = re.compile(r"\bwithout\s+([a-z]+_[a-z_]+)\b", re.I)
# the report's direct-I/O job run again buffered: "buffer IO + XFS", "with buffered I/O",
# "without O_DIRECT"
_BUFFERED_RE = re.compile(
    r"\bbuffer(?:ed)?\s+I/?O\b|\bwithout\s+(?:direct\s+I/?O|O_DIRECT|direct=1)\b|"
    r"\bpage\s+cache\s+I/?O\b",
    re.I,
)
_LKP_IDS_RE = re.compile(r"^\s*([0-9a-f]{10,40})\s+([0-9a-f]{10,40})\s*$")
_LKP_TITLE_RE = re.compile(r"\]\s+([0-9a-f]{10}):\s")
_COMMIT_RE = re.compile(
    r"\b(?:commit|revert\w*|bisect\w*)\b[^.]{0,40}?\b([0-9a-f]{10,40})\b|\bpatch(?:ed|set)?\b|"
    r"\(([0-9a-f]{12,40})\)",
    re.I,
)
_FS_ROW_RE = re.compile(
    r"^\s*(btrfs|xfs|ext[234])(?:\s{2,}|\t|\s*\|\s*)\d[\d.,]*\s*[A-Za-z/%]*", re.I
)
# ext4 features as reports name them in prose, and mke2fs -O's name for each
EXT4_FEATURE_NAMES = {
    "fast commit": "fast_commit",
    "fast_commit": "fast_commit",
    "bigalloc": "bigalloc",
    "inline data": "inline_data",
    "inline_data": "inline_data",
    "metadata checksum": "metadata_csum",
    "metadata_csum": "metadata_csum",
}
_MOUNT_OPTION_LIST = r"[a-z_]+(?:=[\w:.]+)?(?:,[a-z_]+(?:=[\w:.]+)?)*"
_MOUNT_HEADING_RE = re.compile(
    r"^\s*(?:btrfs|xfs|ext4)\s+(?:mounted\s+)?with\s+(default\s+mount\s+options|defaults|"
    + _MOUNT_OPTION_LIST
    + r")\s*:?\s*$",
    re.I,
)
_OPTION_SET_RE = re.compile(r"\b([a-z][a-z_]{2,})=\w+")
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
        *_variable_values(report, fio),
        *_table_rows(report, fio),
        *_tool_sweeps(report, tools),
        *_dd_read_sizes(dd),
        *_dd_alternatives(dd),
        *_mkfs_repeats(report, filesystems),
        *_mkfs_remade(filesystems),
        *_feature_toggle(report, filesystems),
        *_mount_with_without(report),
        *_mount_option_variable(report),
        *_mount_option_braces(report),
        *_mount_value_rows(report),
        *_mount_headings(report),
        *_mounts_differing(filesystems),
        *_remount_change(report, filesystems),
    ]
    if not found and (other := _filesystems_made(filesystems) or _filesystem_rows(report)):
        found.append(other)
    kernel = _kernel_sweep(report, kernels)
    return [*found, *([kernel] if kernel else [])]


def _filesystems_made(filesystems: list[FilesystemFact]) -> SweepFact | None:
    """Each filesystem made in turn on the same device (`mkfs.btrfs /dev/md/pex`, later
    `mkfs.ext4 ... /dev/md/pex`): the filesystem is what the report varies."""
    made = [fs for fs in filesystems if fs.how == "mkfs" and fs.type]
    devices = {fs.device for fs in made}
    types = tuple(dict.fromkeys(fs.type for fs in made))
    if len(types) < 2 or len(devices) > 1:
        return None
    second = next(fs for fs in made if fs.type == types[1])
    return SweepFact("filesystem", types, "the report makes each on the same device", second.source)


def _filesystem_rows(report: ReportText) -> SweepFact | None:
    """A results table with a row per filesystem ("XFS    16.95 MB/s", "Ext3   22.92
    MB/s"): the filesystem is what the report varies (the spec compares the ones fslab
    makes as configurations of their own)."""
    rows: list[tuple[int, str]] = []
    for number, line in report.numbered():
        match = _FS_ROW_RE.match(line)
        if match is None:
            continue
        if rows and number - rows[-1][0] > 2:  # a table's rows sit together
            rows = []
        rows.append((number, match.group(1).lower()))
        names = tuple(dict.fromkeys(name for _, name in rows))
        if len(rows) >= 2 and len(names) >= 2 and len(names) == len(rows):
            following = (
                _FS_ROW_RE.match(report.lines[number]) if number < len(report.lines) else None
            )
            if following is None:
                return SweepFact(
                    "filesystem",
                    names,
                    "the report's results have a row per filesystem",
                    report.line(rows[0][0]),
                )
    return None


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
            values.append(match.group(1))
    return list(dict.fromkeys(values))[:MAX_LOOP_VALUES]


def _tool_sweeps(report: ReportText, tools: list[ToolWorkload]) -> Iterator[SweepFact]:
    """sysbench's `[rndwr|seqwr]` alternatives; dbench's client counts; the same tool run
    again with one option changed."""
    yield from _commands_differing(tools)
    for tool in tools[:1]:
        for axis, values in tool.sweeps:
            yield SweepFact(axis, values, "the command lists the alternatives", tool.source)
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


def _commands_differing(tools: list[ToolWorkload]) -> Iterator[SweepFact]:
    """The report's commands of one tool, each giving the one option they differ in."""
    same = [dict(t.options) for t in tools if tools and t.tool == tools[0].tool]
    if len(same) < 2:
        return
    differing = {
        k
        for o in same[1:]
        for k in set(same[0]) | set(o)
        if o.get(k) != same[0].get(k) and not str(o.get(k) or "").startswith("/")
    }  # a path of the reporter's machine (dbench -D /xfs, -D /ext4) is fslab's to set
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


def _mkfs_repeats(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """`mkfs.xfs ... -n parent=0`, later "repeats it with -n parent=1": a sweep of it."""
    made = [fs for fs in filesystems if fs.how == "mkfs"]
    if named := _flag_values_named(report, made, filesystems):
        yield named
        return
    for fs in made:
        options = list(fs.mkfs_options)
        for flag, setting in pairwise(options):
            key, sep, value = setting.partition("=")
            if not (flag.startswith("-") and sep and re.fullmatch(r"\w+", key)):
                continue
            pattern = re.compile(rf"{re.escape(flag)}\s+{re.escape(key)}=([\w.,=]+)")
            for number, line in report.numbered():
                match = pattern.search(line)
                if number > fs.source.number and match and match.group(1) != value:
                    yield SweepFact(
                        f"mkfs {flag} {key}",
                        (value, match.group(1)),
                        f"the report repeats the run with {match.group(0)}",
                        report.line(number),
                    )
                    return


def _flag_values_named(
    report: ReportText, made: list[FilesystemFact], filesystems: list[FilesystemFact]
) -> SweepFact | None:
    """ "made with mkfs -d raid0 and with -d raid1": values of one of the reporter's mkfs
    flags (a word, not key=value) that a sentence about mkfs names; the reporter's own
    value first, unless the sentence names two others (then those are the comparison)."""
    flags = dict.fromkeys(
        (flag, own)
        for fs in made
        for flag, own in pairwise(fs.mkfs_options)
        if re.fullmatch(r"-[A-Za-z]", flag) and re.fullmatch(r"\w+", own)
    )
    if not flags:
        return None
    commands = {f.source.number for f in filesystems if f.how in ("mkfs", "mount")}
    sentences = [(n, x) for n, x in report.numbered() if "mkfs" in x and n not in commands]
    for flag, own in flags:
        pattern = re.compile(rf"(?<!\S){re.escape(flag)}\s+(\w+)\b")
        for number, line in sentences:
            others = [v for v in dict.fromkeys(pattern.findall(line)) if v != own]
            if others:
                values = tuple(others) if len(others) > 1 else (own, *others)
                return SweepFact(
                    f"mkfs {flag}",
                    values,
                    f"the report names mkfs {flag} {' and '.join(values)}",
                    report.line(number),
                )
    return None


def _feature_toggle(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """An ext4 feature with and without: "Without Fast Commit: 1501.2 files/sec" over
    "With Fast commits: 3055", or the reporter's `-O ^has_journal,bigalloc` against a
    filesystem "made without "bigalloc"". One axis, `mkfs -O FEATURE`, on and off."""
    own = {
        f.lstrip("^"): "off" if f.startswith("^") else "on"
        for fs in filesystems
        if fs.how == "mkfs" and fs.type == "ext4"
        for flag, value in pairwise(fs.mkfs_options)
        if flag == "-O"
        for f in value.split(",")
    }
    named = {**{f: f for f in own}, **EXT4_FEATURE_NAMES}
    if not own and not re.search(r"\bext4\b", report.joined, re.I):
        return
    for phrase, feature in named.items():
        spelled = re.escape(phrase).replace(r"\ ", r"[\s_-]")
        without = re.compile(rf"\bwithout\s+(?:the\s+)?[\"']?{spelled}s?\b", re.I)
        with_ = re.compile(rf"(?<![\w-])with\s+(?:the\s+)?[\"']?{spelled}s?\b", re.I)
        off = next((n for n, line in report.numbered() if without.search(line)), None)
        on = next((n for n, line in report.numbered() if with_.search(line)), None)
        if off is None or (on is None and feature not in own):
            continue
        first = own.get(feature) or ("off" if on is None or off < on else "on")
        values = (first, "on" if first == "off" else "off")
        yield SweepFact(
            f"mkfs -O {feature}",
            values,
            f"the report runs with and without {phrase}",
            report.line(off),
        )
        return


def _mkfs_remade(filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """The reporter's filesystem made again with other options (`mkfs.btrfs -d raid5 ...`,
    then `mkfs.btrfs -d raid6 ...`): a sweep of the whole option lists."""
    made = [fs for fs in filesystems if fs.how == "mkfs"]
    if not made:
        return
    same = [fs for fs in made if fs.type == made[0].type]
    values = tuple(dict.fromkeys(" ".join(fs.mkfs_options) for fs in same))
    if len(values) > 1:
        second = next(fs for fs in same if " ".join(fs.mkfs_options) == values[1])
        yield SweepFact(
            "mkfs_options", values, "the report made its filesystem again otherwise", second.source
        )


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


# `mount ... -o $OPT`: the -o is found after the word mount (no `.*` to backtrack over)
_MOUNT_WORD_RE = re.compile(r"\bmount\s")
_MOUNT_VARIABLE_RE = re.compile(r"\s-o\s*(\S*\$(?:\{(\w+)\}|(\w+))\S*)")


def _mount_option_variable(report: ReportText) -> Iterator[SweepFact]:
    """`mount -o $MOUNT_OPT`, the variable set to one option and then another, or
    `mount -o compress=zstd:$level` inside a loop over levels: a sweep of the option."""
    loops = shell.find_loops(report)
    for number, raw in report.numbered():
        line = without_prompt(raw)
        word = _MOUNT_WORD_RE.search(line)
        match = _MOUNT_VARIABLE_RE.search(line, word.end() - 1) if word else None
        if match is None:
            continue
        written, name = match.group(1).rstrip(";,"), match.group(2) or match.group(3)
        around = [x for x in shell.enclosing(loops, number) if x.variable == name]
        values = list(around[-1].values) if around else shell.all_assignments(report, name)
        values = [v for v in values if v.strip("'\"")]  # MOUNT_OPT="" clears it, no option
        if len(values) < 2:
            continue
        options = [re.sub(rf"\$(?:\{{{name}\}}|{name}\b)", v, written) for v in values]
        yield SweepFact(
            "mount_options",
            tuple(dict.fromkeys(options)),
            f"the report mounts with -o {written} for each value of ${name}",
            report.line(number),
        )
        return


_BRACED_OPTION_RE = re.compile(r"-o\s*([a-z_-]+)=\{([\w:.,\s-]+)\}")


def _mount_option_braces(report: ReportText) -> Iterator[SweepFact]:
    """`Run for each of -o compress-force={none, lzo, zlib, zstd}`: one mount per value."""
    for number, line in report.numbered():
        match = _BRACED_OPTION_RE.search(line)
        if match is None:
            continue
        values = [v.strip() for v in match.group(2).split(",") if v.strip()]
        if len(values) >= 2:
            yield SweepFact(
                "mount_options",
                tuple(f"{match.group(1)}={v}" for v in values),
                f"the report runs -o {match.group(0)[2:].strip()}",
                report.line(number),
            )
            return


def _mount_value_rows(report: ReportText) -> Iterator[SweepFact]:
    """A result per value of a mount option the prose sets ("set logbsize=256k by hand
    on the mount command line"), each row led by the value: "32k  logbsize (default):
    3027.4 files/sec", "256k logbsize (...): 4768.4 files/sec"."""
    names = dict.fromkeys(
        name
        for _, line, _ in report.wrapped()  # "set logbsize=256k by hand" / "on the mount"
        if "mount" in line.lower()
        for name in _OPTION_SET_RE.findall(line)
    )
    for name in names:
        row = re.compile(rf"^\s*([\w.]+)\s+{re.escape(name)}\b[^:\n]*:\s*\d")
        rows = [(n, m.group(1)) for n, line in report.numbered() if (m := row.match(line))]
        values = tuple(dict.fromkeys(f"{name}={value}" for _, value in rows))
        if len(values) > 1:
            yield SweepFact(
                "mount_options",
                values,
                f"the report's results have a row per {name}",
                report.line(rows[0][0]),
            )
            return


def _mounts_differing(filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """The filesystem mounted again with one option's value changed (`-o
    ssd,max_inline=2048`, later `-o ssd,max_inline=3072`): a sweep of that option."""
    mounts = [fs for fs in filesystems if fs.how == "mount" and fs.mount_options]
    for fs_type in dict.fromkeys(fs.type for fs in mounts):
        same = [fs for fs in mounts if fs.type == fs_type]
        sets = [dict(o.partition("=")[::2] for o in fs.mount_options) for fs in same]
        keys = {k for s in sets for k in s}
        changed = [k for k in keys if len({s.get(k) for s in sets}) > 1]
        if len(changed) != 1 or any(changed[0] not in s for s in sets):
            continue
        key = changed[0]
        values = tuple(dict.fromkeys(f"{key}={s[key]}" if s[key] else key for s in sets))
        second = next(
            fs for fs, s in zip(same, sets, strict=True) if f"{key}={s[key]}" != values[0]
        )
        yield SweepFact(
            "mount_options", values, "the report mounts again with another value", second.source
        )
        return


def _mount_headings(report: ReportText) -> Iterator[SweepFact]:
    """Results under a heading per set of mount options: "BTRFS with default mount
    options", "BTRFS with nossd,space_cache=v2", "BTRFS with nodatacow"."""
    found = [
        (n, "defaults" if m.group(1).lower().startswith("default") else m.group(1))
        for n, line in report.numbered()
        if (m := _MOUNT_HEADING_RE.match(line))
    ]
    values = tuple(dict.fromkeys(value for _, value in found))
    if len(values) > 1:
        yield SweepFact(
            "mount_options",
            values,
            "the report's results have a heading per mount option set",
            report.line(found[0][0]),
        )


def _mount_with_without(report: ReportText) -> Iterator[SweepFact]:
    """'mounted with X and without it'; 'mounted with X=0 and X=1'; or 'Without
    journal_async_commit:' over one result and 'with journal_async_commit' by another
    (an option's own name, with its `_`)."""
    for number, line, own in report.wrapped():
        match = _WITH_WITHOUT_RE.search(line)
        if match and match.start() < own:
            option = match.group(1) or match.group(2)
            yield SweepFact(
                "mount_options",
                (f"(no {option})", option),
                f'"{match.group(0)}"',
                Line(number, report.lines[number - 1]),
            )
            return
    for number, line, own in report.wrapped():
        both = _WITH_BOTH_RE.search(line)
        if both and both.start() < own:  # "mounted with mb_optimize_scan=0 and =1"
            key, first, second = both.group(1), both.group(2), both.group(3)
            yield SweepFact(
                "mount_options",
                (f"{key}={first}", f"{key}={second}"),
                f'"{both.group(0)}"',
                report.line(number),
            )
            return
    tried: set[str] = set()
    for number, line, own in report.wrapped():
        without = _WITHOUT_OPTION_RE.search(line)
        if without is None or without.start() >= own or without.group(1) in tried:
            continue
        option = without.group(1)
        tried.add(option)  # each option's "with" is looked for once
        if re.search(rf"\bwith\s+{option}\b", report.joined, re.I):
            yield SweepFact(
                "mount_options",
                (f"(no {option})", option),
                f"results without {option} and with it",
                report.line(number),
            )
            return


# `mount -o remount,stripe=0 /data1`, or a root filesystem's `rootflags="mb_optimize_scan=0"`:
# an option's value changed on the mounted filesystem, a workaround the thread tries
_REMOUNT_RE = re.compile(
    r"\bmount\s+(?:\S+\s+)*?-o\s*['\"]?remount,([\w=:.,]+)|\brootflags=['\"]?([\w=:.,]+)"
)


def _remount_change(report: ReportText, filesystems: list[FilesystemFact]) -> Iterator[SweepFact]:
    """An option set to another value by a remount: the reporter's mount against it. The
    reporter's value is their mount's; a 0/1 switch without one was the other value."""
    tried: set[str] = set()
    for number, raw in report.numbered():
        match = _REMOUNT_RE.search(without_prompt(raw))
        if match is None:
            continue
        for option in (match.group(1) or match.group(2)).split(","):
            if option in tried:  # a remount repeated is read once
                continue
            tried.add(option)
            fact = (
                _reset(report, filesystems, option, number)
                if "=" in option
                else _switched(report, option, number)
            )
            if fact is not None:
                yield fact
                return


def _reset(
    report: ReportText, filesystems: list[FilesystemFact], option: str, number: int
) -> SweepFact | None:
    """`remount,stripe=0` against the reporter's stripe=32745."""
    key, _, value = option.partition("=")
    had = next((o for fs in filesystems for o in fs.mount_options if o.startswith(f"{key}=")), None)
    if had is None and value in ("0", "1"):
        had = f"{key}={1 - int(value)}"
    if had == option:
        return None
    return SweepFact(
        "mount_options",
        (had or f"(no {option})", option),
        f"the report remounts with {option}",
        report.line(number),
    )


def _switched(report: ReportText, option: str, number: int) -> SweepFact | None:
    """A bare option remounted (`remount,delalloc`) whose opposite the report names
    (nodelalloc): the reporter ran with the opposite."""
    opposite = option[2:] if option.startswith("no") else f"no{option}"
    if option in ("ro", "rw") or not re.search(rf"\b{re.escape(opposite)}\b", report.joined):
        return None
    return SweepFact(
        "mount_options",
        (opposite, option),
        f"the report remounts with {option}, against its {opposite}",
        report.line(number),
    )


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
    for number, line in report.numbered():
        match = _COMMIT_RE.search(line)
        if match:
            base = kernels[0].version if kernels else "the kernel"
            change = match.group(1) or match.group(2) or match.group(0)
            return SweepFact(
                "kernel",
                (base, f"{base} with {change}"),
                "a commit or patch against the kernel",
                report.line(number),
            )
    return None
