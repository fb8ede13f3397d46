"""Benchmarks other than fio and dd, as reports run them: fs_mark (and its own summary
table), sysbench fileio, dbench (and mmtests' dbench), compilebench and filebench
command lines, a kernel test robot's parameter block (robot.py), and the report's own
shell: a pasted script, a timed command, a loop typed at a prompt.

Each becomes a ToolWorkload: the tool, its options in the tool's own spelling,
the line it came from. Nothing here decides whether fslab can run it (a spec's
workload kinds are specwrite's question); aim7 and filebench are marked not
runnable on any machine fslab runs on. Nothing is ever run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from itertools import pairwise

from fslab.reproduce import robot, shell
from fslab.reproduce.facts import NOT_RUNNABLE, Line, ToolName, ToolWorkload
from fslab.reproduce.text import ReportText, echoed, without_prompt

MAX_TOOL_WORDS = 512
"""Words of one benchmark command read (fs_mark with 64 `-d` is 140)."""

_TOOL_RE = re.compile(
    r"(?:^|(?<=[\s;`(|\"']))(?:(?:sudo|time|nohup)\s+)*(?:[\w./-]*/)?"
    # an option, sysbench's test, dbench's client count (a whole number: "fs_mark 17.6%"
    # in a sentence is no command), or a variable the script put the options in
    r"(fs_mark|fsmark|sysbench|dbench|filebench|compilebench)\s+"
    r"(?=-|fileio\b|\d+(?:\s|$)|\$\{?[A-Za-z_])"
)
_CANONICAL: dict[str, ToolName] = {
    "fs_mark": "fs_mark",
    "fsmark": "fs_mark",
    "sysbench": "sysbench",
    "dbench": "dbench",
    "filebench": "filebench",
    "compilebench": "compilebench",
}
# Options that take a value, per tool (the rest are bare flags).
_FS_MARK_VALUES = frozenset(
    ("-d", "-D", "-N", "-L", "-n", "-p", "-r", "-s", "-S", "-t", "-w", "-l", "-T")
)
_COMPILEBENCH_VALUES = frozenset(("-D", "-i", "-r", "-s", "-t", "-m"))
_DBENCH_VALUES = frozenset(("-t", "-D", "-c", "-B", "-T", "-e", "-o"))
_SYSBENCH_STEPS = ("prepare", "run", "cleanup")
# a row of MMTests' compare table: its mean, the row's client count (`creat_clo-7`), the
# first kernel's value and its "(   0.00%)" against itself
_MMTESTS_ROW_RE = re.compile(
    r"^(?:(?:Hmean|Amean|BAmean|Gmean)\s+)?(?:[a-z_]+-)?(\d+)\s+\d[\d.]*\s+\(\s*-?0\.00%\)"
)
_MMTESTS_TOOL_RE = re.compile(r"\b(dbench|reaim)\b", re.I)
_MMTESTS_RE = re.compile(r"\bMMTests config\s+([\w.-]*dbench[\w.-]*)", re.I)
_TIMED_RE = re.compile(r"(?:^|;\s*|\bdo\s+)time\s+\S")
# `time sh -c "..."`, `time sudo tar ...` on a line of its own, with no prompt
_TIMED_COMMAND_RE = re.compile(
    r"^time\s+(?:-p\s+)?(?:sh|bash|sudo|cp|tar|rm|mkdir|dd|find|cat|make|git|\./|/)"
)
# GNU time by its path, with its options: `/usr/bin/time -f "%e" sh -c "..."`, `command
# time -v tar ...`; read as the shell's `time`, which fslab's elapsed time stands for
_GNU_TIME_RE = re.compile(
    r"(?:^|(?<=;\s)|(?<=\bdo\s))(?:/usr/bin/|command\s+)time"
    r"(?:\s+(?:-[vpaq]|--(?:verbose|portability|quiet|append)|-[fo]\s+(?:\"[^\"]*\"|'[^']*'|\S+)"
    r"|--(?:format|output)=\S+))*\s+(?=\S)"
)
# `time` followed by four plain words: prose, not a command ("time goes to the AGI buffer")
_TIMED_PROSE_RE = re.compile(r"(?:^|;\s*)time\s+(?:[A-Za-z]+[,.]?\s+){3}[A-Za-z]+")
_SEGMENT_SPLIT_RE = re.compile(r"\s*(?:;|&&)\s*")


def find_tools(report: ReportText) -> list[ToolWorkload]:
    """Every benchmark command, robot parameter block and mmtests config, in report order."""
    commands = list(_commands(report))
    fsmark = (
        []
        if any(t.tool == "fs_mark" for t in commands)
        else robot.lkp_fsmark(report) or _fsmark_table(report)
    )
    found = [*commands, *robot.lkp_block(report), *fsmark, *_mmtests(report)]
    if not found:
        found = list(_mmtests_table(report))
    found.sort(key=lambda t: t.source.number)
    return found


def _mmtests_table(report: ReportText) -> Iterator[ToolWorkload]:
    """An MMTests compare table with no command (`Amean 8  610.95 (0.00%)  363.86 ...`, a
    row per client count) of a benchmark the report names (dbench, reaim): the tool at
    those client counts, with MMTests' defaults for the rest."""
    rows = [(n, m.group(1)) for n, line in report.numbered() if (m := _MMTESTS_ROW_RE.match(line))]
    counts = tuple(dict.fromkeys(count for _, count in rows))
    named = _MMTESTS_TOOL_RE.search(report.joined)
    if len(counts) < 2 or named is None:
        return
    tool: ToolName = "dbench" if named.group(1).lower() == "dbench" else "reaim"
    first = rows[0][0]
    text = "\n".join(report.lines[first - 1 : rows[-1][0]])
    yield ToolWorkload(
        tool,
        (),
        text,
        report.line(first),
        runnable=tool not in NOT_RUNNABLE,
        why=NOT_RUNNABLE.get(tool, ""),
        sweeps=(("clients", counts),),
    )


def find_timed_command(report: ReportText) -> ToolWorkload | None:
    """A script pasted whole (`#!/bin/bash` ...), a timed shell command (`time tar xf
    linux.tar; time sync`), or else a loop typed at a prompt that writes files, when the
    report runs no benchmark: kept as text for the reader, never run."""
    script = _script(report)
    if script is not None:
        return script
    timed = list(_timed_commands(report))
    if timed:  # several timed steps: the one the report's title names (untarring: tar)
        title = report.lines[0].lower() if report.lines else ""
        named = [t for t in timed if (program := _program(t.text)) and program in title]
        return (named or timed)[0]
    return _prompt_loop(report)


def _timed_commands(report: ReportText) -> Iterator[ToolWorkload]:
    """Each timed command of the report, in order."""
    for number, raw in report.numbered():
        typed = without_prompt(raw)
        line = _GNU_TIME_RE.sub("time ", typed)
        if not _TIMED_RE.search(line):
            continue
        defined = _function_defined(report, line)
        if (
            typed == raw.strip()
            and (";" not in line or _TIMED_PROSE_RE.search(line))
            and not _TIMED_COMMAND_RE.match(line)
            and defined is None
        ):
            continue  # "time" in a sentence ("...; time goes to the AGI lock"), not at a prompt
        if defined is not None:  # `time fill_dir $mnt`: the function the report defines
            text = f"{defined}\n{line}"
            yield ToolWorkload("command", (("command", text),), text, report.line(number))
            continue
        block = _continued_block(report, number)
        if block is not None:  # a loop written over `\`-continued lines: the whole loop
            first, text = block
            yield ToolWorkload("command", (("command", text),), text, report.line(first))
            continue
        line = _parenthesised(report, number, line)
        segments = _SEGMENT_SPLIT_RE.split(line)
        lead = 0
        while lead < len(segments) and setup_segment(segments[lead]):
            lead += 1
        if segments[:lead] == ["sync"]:  # a lone sync flushes what came before: timed with it
            lead = 0
        text = "; ".join(segments[lead:]) if lead else line
        yield ToolWorkload("command", (("command", text),), text, report.line(number))


def _parenthesised(report: ReportText, number: int, line: str) -> str:
    """A command whose `(` a mailer's line break left open, joined with the lines that
    close it (`time (for i in {1..10}; do time (rm test$i;` / `sync); done)`)."""
    joined, below = line, number
    while joined.count("(") > joined.count(")") and below < min(len(report.lines), number + 3):
        joined = f"{joined.rstrip()} {report.lines[below].strip()}"
        below += 1
    return joined if joined.count("(") == joined.count(")") else line


def _program(command: str) -> str:
    """The program a timed command runs: `time sh -c "sudo tar -C ..."` runs tar."""
    words = [w.strip("\"'") for w in command.split()]
    words = [w for w in words if w and w not in ("time", "sh", "bash", "-c", "sudo", "nohup")]
    return words[0].rsplit("/", 1)[-1] if words and len(words[0]) > 1 else ""


def _function_defined(report: ReportText, line: str) -> str | None:
    """The shell function a timed line calls (`time fill_dir $mnt`), as the report
    defines it (`fill_dir()` / `{` ... `}`), or None."""
    called = re.match(r"^time\s+([A-Za-z_]\w*)(?:\s|$)", line)
    if called is None:
        return None
    head = re.compile(rf"^\s*(?:function\s+)?{re.escape(called.group(1))}\s*\(\)\s*\{{?\s*$")
    start = next((n for n, raw in report.numbered() if head.match(raw)), None)
    if start is None:
        return None
    end = next(
        (
            n
            for n in range(start + 1, min(len(report.lines), start + 60) + 1)
            if report.lines[n - 1].strip() == "}"
        ),
        None,
    )
    return "\n".join(report.lines[start - 1 : end]) if end is not None else None


# a loop typed at a prompt that makes files where it runs: `# for i in {1..200}; echo x >
# "file_$i"`, `$ for d in a b; do mkdir $d; done`; one over /sys or /proc sets the stage
_PROMPT_LOOP_RE = re.compile(
    r"^for\s+\w+\s+in\s+[^;]+;\s*(?:do\s+)?.*(?:>|\b(?:touch|mkdir|cp|tar)\s)"
)


def _prompt_loop(report: ReportText) -> ToolWorkload | None:
    """A one-line shell loop at a prompt that writes files, when nothing is timed."""
    for number, raw in report.numbered():
        line = without_prompt(raw)
        if line == raw.strip() or not _PROMPT_LOOP_RE.match(line):
            continue
        if re.search(r"(?:^|[\s>\"'])/(?:sys|proc|dev)/", line):
            continue
        return ToolWorkload("command", (("command", line),), line, report.line(number))
    return None


_SHEBANG_RE = re.compile(r"^\s*#!\s*(?:/usr)?/bin/(?:env\s+)?(?:ba)?sh\b")
# shell's own characters, which a line of the mail's prose does not have
_SHELL_CHARS_RE = re.compile(r"[$=|<>{}&\\]")


def _prose(line: str) -> bool:
    """A line of the mail's prose: long, words mostly of letters, no shell syntax."""
    words = line.split()
    lettered = [w for w in words if re.fullmatch(r"[(`\"']?[A-Za-z][a-z'-]*[)`\"',.;:]*", w)]
    return (
        len(line) >= 40
        and len(words) >= 6
        and not words[0].startswith(("-", "/", "#"))
        and len(lettered) >= 0.7 * len(words)
        and not _SHELL_CHARS_RE.search(line)
    )


def _script(report: ReportText) -> ToolWorkload | None:
    """A shell script pasted whole: from its `#!` line to where the mail's prose resumes
    after a blank line, or its margin does."""
    for number, raw in report.numbered():
        if not _SHEBANG_RE.match(raw):
            continue
        last = number
        indent = len(raw) - len(raw.lstrip())
        for later in range(number + 1, len(report.lines) + 1):
            text = report.lines[later - 1]
            line = text.strip()
            if not line:
                continue
            if len(text) - len(text.lstrip()) < indent:
                break  # an indented script ends where the mail's own margin resumes
            blank_before = not report.lines[later - 2].strip()
            if blank_before and _prose(line):
                break
            last = later
        text = "\n".join(report.lines[number - 1 : last]).strip()
        if len(text) > MAX_COMMAND_CHARS:
            return None
        return ToolWorkload("command", (("command", text),), text, report.line(number))
    return None


def _continued_block(report: ReportText, number: int) -> tuple[int, str] | None:
    r"""The `for ... done` loop a line belongs to when it is written over lines ending in
    `\`: (its first line, its text through `done`); None for a line on its own."""

    def continued(n: int) -> bool:
        return 1 <= n <= len(report.lines) and report.lines[n - 1].rstrip().endswith("\\")

    if not (continued(number) or continued(number - 1)):
        return None
    first = number
    while continued(first - 1):
        first -= 1
    last = number
    while continued(last) and last < len(report.lines):
        last += 1
    parts = [
        without_prompt(report.lines[n - 1]).rstrip().removesuffix("\\").strip()
        for n in range(first, last + 1)
    ]
    text = " ".join(p for p in parts if p)
    loop = re.match(r"^for\b.*?\bdone\b", text)
    return (first, loop.group(0)) if loop else None


def setup_segment(segment: str) -> bool:
    """Whether one shell segment before a timed command only sets the stage."""
    return segment == "sync" or "drop_caches" in segment


def _commands(report: ReportText) -> Iterator[ToolWorkload]:
    loops: list[shell.Loop] | None = None
    assigned_at: list[tuple[int, str, str]] = []
    cpu_names: set[str] = set()
    for number, raw in report.numbered():
        line = re.sub(r'"([^"\s]+)"', r"\1", without_prompt(raw).lstrip("#$ "))
        match = _TOOL_RE.search(line)
        if match is None or echoed(raw):
            continue
        tool = _CANONICAL[match.group(1)]
        quote = (
            line[match.start() - 1] if match.start() and line[match.start() - 1] in "\"'`" else ""
        )
        text = _quoted(report, number, line[match.start(1) :], quote) or _joined(
            report, number, line[match.start(1) :]
        )
        if "$" in text:  # `dbench -t 300 -D $MNT $THREADS` after `THREADS=16`: 16 clients
            if loops is None:  # the report's loops and assignments, read once
                loops = shell.find_loops(report)
                assigned_at = shell.assignment_lines(report)
                cpu_names = shell.cpu_count_names(report)
            looped = {x.variable for x in shell.enclosing(loops, number)}
            lists = shell.option_lists(report, number, assigned_at, loops)
            text = " ".join(shell.spliced(text.split(" "), lists))
            counts = {
                k: v
                for k, v in shell.assignments(report, number, assigned_at).items()
                if v.isdigit() and k not in looped
            }
            counts |= {k: "$(nproc)" for k in cpu_names if k not in looped}
            text = " ".join(shell.substituted(w, counts) or w for w in text.split(" "))
        words = _words(text)[1:MAX_TOOL_WORDS]
        if _in_a_sentence(words) or _a_results_row(words):  # "dbench -s reports ..."
            continue
        steps: tuple[str, ...] = ()
        sweeps: tuple[tuple[str, tuple[str, ...]], ...] = ()
        if tool == "fs_mark":
            options, steps, sweeps = _dash_options(words, _FS_MARK_VALUES), (), ()
        elif tool == "dbench":
            options, steps, sweeps = _dbench_options(words), (), ()
        elif tool == "sysbench":
            options, steps, sweeps = _sysbench_options(words)
        else:
            values = _COMPILEBENCH_VALUES if tool == "compilebench" else frozenset({"-f"})
            options, steps, sweeps = _dash_options(words, values), (), ()
        if not options and not steps:  # the tool named in prose ("dbench 32 and 64 clients")
            continue
        yield ToolWorkload(
            tool,
            tuple(options),
            text,
            report.line(number),
            runnable=tool not in NOT_RUNNABLE,
            why=NOT_RUNNABLE.get(tool, ""),
            steps=steps,
            sweeps=sweeps,
        )


def _in_a_sentence(words: list[str]) -> bool:
    """A tool's name and an option in the mail's prose: words no benchmark takes follow."""
    plain = [w for w in words if re.fullmatch(r"[a-z]{2,}[,.]?", w) and w not in _SYSBENCH_WORDS]
    return len(plain) >= 3


_FIGURE_RE = re.compile(r"[+-]?\d+(?:\.\d+)?%")
_UNIT_WORDS = frozenset(("seconds", "secs", "sec", "ms", "mb/s", "mib/s", "kb/s", "iops"))


def _a_results_row(words: list[str]) -> bool:
    """A table row that starts with the tool's name (`fs_mark  223 seconds  197 seconds
    -11.65%`): a figure and its unit, or a percentage, where a command has its options."""
    return any(_FIGURE_RE.fullmatch(w) for w in words) or any(
        re.fullmatch(r"\d+(?:\.\d+)?", a) and b.lower() in _UNIT_WORDS for a, b in pairwise(words)
    )


_SYSBENCH_WORDS = frozenset(("fileio", "prepare", "run", "cleanup", "help"))


def _quoted(report: ReportText, number: int, first: str, quote: str) -> str:
    """A command quoted in a sentence, up to its closing quote a line or two on:
    `running "fs_mark -n 1000000 ... -s 16384` / `-d /mnt/xfs/" shows ...`."""
    if not quote:
        return ""
    parts = [first]
    index = number
    while quote not in parts[-1] and index < min(len(report.lines), number + 3):
        parts.append(report.lines[index].strip())
        index += 1
    text = " ".join(p.strip() for p in parts)
    return text[: text.index(quote)].strip() if quote in text else ""


def _joined(report: ReportText, number: int, first: str) -> str:
    """The command through backslash continuations (also a stray `\\ ` mid-line)."""
    parts = [first]
    index = number
    while parts[-1].rstrip().endswith("\\") and index < len(report.lines):
        parts[-1] = parts[-1].rstrip()[:-1]
        parts.append(report.lines[index].strip())
        index += 1
    text = re.sub(r"\\\s+(?=-)", " ", " ".join(p.strip() for p in parts))
    for marker in (" | ", " > ", " >> ", " && ", ";", " &"):
        if marker in text:
            text = text[: text.find(marker)]
    return text.strip()


MAX_COMMAND_CHARS = 16384  # no benchmark command is longer; shlex reads a char at a time


def _words(text: str) -> list[str]:
    if len(text) > MAX_COMMAND_CHARS:
        return text.split()
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _dash_options(words: list[str], takes_value: frozenset[str]) -> list[tuple[str, str | None]]:
    """`-n 96 -d DIR -d DIR -k` as pairs; a repeated option's values are listed once, as
    `FIRST ... LAST (N directories)` when there are more than two."""
    pairs: dict[str, list[str | None]] = {}
    index = 0
    while index < len(words):
        word = words[index]
        if not word.startswith("-"):
            pairs.setdefault("", []).append(word)
            index += 1
            continue
        name, sep, value = word.partition("=")
        if not sep and len(name) > 2 and name[:2] in takes_value and name[1] != "-":
            name, sep, value = name[:2], "=", name[2:]  # -S0, -s4096: the value attached
        if not sep and name in takes_value and index + 1 < len(words):
            value, index = words[index + 1], index + 1
        pairs.setdefault(name, []).append(value if (sep or name in takes_value) else None)
        index += 1
    result: list[tuple[str, str | None]] = []
    for name, values in pairs.items():
        if len(values) > 2 and all(v is not None for v in values):
            result.append((name, f"{values[0]} ... {values[-1]} ({len(values)} directories)"))
        else:
            result.append((name, " ".join(v for v in values if v is not None) or None))
    return result


def _dbench_options(words: list[str]) -> list[tuple[str, str | None]]:
    """dbench's options, and its last bare number: the client count."""
    options = _dash_options(words, _DBENCH_VALUES)
    positional = dict(options).get("")
    kept = [(n, v) for n, v in options if n]
    last = positional.split()[-1] if positional else ""
    if last.isdigit() or re.fullmatch(r"\$\{?\w+\}?", last):  # `$NUM_JOBS`: the sweep's
        kept.append(("clients", last))
    return kept


def _sysbench_options(
    words: list[str],
) -> tuple[list[tuple[str, str | None]], tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """sysbench's `--key=value` options (without dashes), its steps (prepare, run, cleanup,
    `[prepare|run]`) and the alternatives a value spells out (`[rndwr|seqwr]`)."""
    options: list[tuple[str, str | None]] = []
    steps: list[str] = []
    sweeps: list[tuple[str, tuple[str, ...]]] = []
    for word in words:
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            options.append((name, value if sep else None))
            alternatives = re.fullmatch(r"\[([\w-]+(?:\|[\w-]+)+)\]", value)
            if alternatives:
                sweeps.append((name, tuple(alternatives.group(1).split("|"))))
            continue
        named = re.fullmatch(r"\[?([\w|-]+)\]?", word)
        parts = named.group(1).split("|") if named else []
        if parts and all(p in _SYSBENCH_STEPS for p in parts):
            steps.extend(parts)
        elif word == "fileio":
            options.append(("test", "fileio"))
    return options, tuple(steps), tuple(sweeps)


_FSMARK_HEADER_RE = re.compile(r"^\s*FSUse%\s+Count\s+Size\s+Files/sec\s+App\s+Overhead")
_FSMARK_ROW_RE = re.compile(r"^\s*\d+\s+(\d+)\s+(\d+)\s+[\d.]+\s+\d+")


def _fsmark_table(report: ReportText) -> list[ToolWorkload]:
    """fs_mark's own summary table pasted without its command: its Count and Size columns
    are the -n and -s it ran with (the rest of the command is not in it)."""
    for number, line in report.numbered():
        if not _FSMARK_HEADER_RE.match(line) or number >= len(report.lines):
            continue
        row = _FSMARK_ROW_RE.match(report.lines[number])
        if row:
            options = (("-n", row.group(1)), ("-s", row.group(2)))
            text = f"{line.strip()}\n{report.lines[number].strip()}"
            return [ToolWorkload("fs_mark", options, text, report.line(number))]
    return []


def _mmtests(report: ReportText) -> Iterator[ToolWorkload]:
    for number, line, own in report.wrapped():
        match = _MMTESTS_RE.search(line)
        if match and match.start() < own:
            yield ToolWorkload(
                "dbench",
                (("mmtests_config", match.group(1)),),
                match.group(0),
                Line(number, report.lines[number - 1]),
            )
            return
