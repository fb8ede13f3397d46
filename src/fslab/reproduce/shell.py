"""Shell text around a report's commands: loops, variables and substitutions.

Reporters paste commands as they ran them: `for jobs in 1 16 64; do fio
--numjobs=${jobs} ...; done`, `--numjobs=$(nproc)`, `SIZE=4G`. fslab never
runs that shell. A loop's variable becomes a sweep of the values the loop
names, a variable assigned in the report takes its value, a substitution that
counts CPUs takes this host's count, and anything else is left out with a
question. Only literal values are read: a value that needs a command to
compute is never computed.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fslab.reproduce.text import ReportText, without_prompt

MAX_LOOP_VALUES = 64
"""A loop of more values is not a sweep fslab writes (1..1000 repeats a run)."""

FIO_KEYWORDS = ("jobnum", "jobname", "filenum", "clientuid", "ncpus", "pagesize", "mb_memory")
"""fio's own $-keywords: fio expands them in its options; they are not the shell's."""

_VAR_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SUBST_RE = re.compile(r"\$\(\(.*?\)\)|\$\([^()]*(?:\([^()]*\)[^()]*)*\)|`[^`]*`")
_CPU_COUNT_RE = re.compile(
    r"^(?:\$\(|`)\s*(?:nproc(?:\s+--all)?|getconf\s+_NPROCESSORS_ONLN|"
    r"grep\s+-c\s+['\"]?\^?processor['\"]?\s+/proc/cpuinfo)\s*(?:\)|`)$"
)
_CPU_ASSIGN_RE = re.compile(
    r"^\s*(?:(?:export|local|readonly)\s+)?([A-Za-z_]\w*)=(\"?(?:\$\([^()]*\)|`[^`]*`)\"?)"
    r"\s*(?:#.*)?$"
)
_FOR_IN_RE = re.compile(
    r"\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\s+([^;]*?)\s*(?:;|\n|$)\s*(?:do\b)?"
)
_FOR_ARITH_RE = re.compile(
    r"\bfor\s*\(\(\s*([A-Za-z_]\w*)\s*=\s*(\d+)\s*;\s*\1\s*(<=|<)\s*(\d+)\s*;\s*"
    r"(?:\1\s*(\+\+|\+=\s*(\d+)|\*=\s*(\d+))|\+\+\s*\1)\s*\)\)"
)
_SEQ_RE = re.compile(r"^(?:\$\(|`)\s*seq\s+(-?\d+)(?:\s+(-?\d+))?(?:\s+(-?\d+))?\s*(?:\)|`)$")
_BRACE_RANGE_RE = re.compile(r"^\{(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?\}$")
_BRACE_LIST_RE = re.compile(r"^\{([^{},]+(?:,[^{},]+)+)\}$")
_LOOP_WORD_RE = re.compile(r"\$\([^)]*\)|`[^`]*`|\S+")
# a double-quoted value may name other variables ("--numjobs=${nj} --size=5g"), which
# stay as written for the command that uses it; never a command substitution
_ASSIGN_RE = re.compile(
    r"^\s*(?:(?:export|local|declare|readonly)\s+)?([A-Za-z_][A-Za-z0-9_]*)="
    r"(?:([^\s;$`'\"()]+)|\"((?:[^\"$`\\]|\$\{?[A-Za-z_]\w*\}?(?![\w(]))*)\"|'([^']*)')"
    r"\s*(?:#.*)?$"  # a trailing comment: MKFS_OPTIONS="--nodesize 16384"  # default
)


@dataclass(frozen=True)
class Loop:
    """A shell loop of the report: its variable, its values, the lines it spans."""

    variable: str
    values: tuple[str, ...]
    first: int  # line numbers, 1-based, inclusive
    last: int


@dataclass(frozen=True)
class Expansion:
    """A `$...` or backtick part of a value, and what it is."""

    text: str
    kind: str  # "variable" | "fio keyword" | "cpu count" | "arithmetic" | "command"
    name: str = ""  # the variable's name


def find_loops(report: ReportText) -> list[Loop]:
    """The report's `for` loops with literal values, each up to its `done`; loops nested
    on one line (`for b in 0 1; do for o in 0 1; do fio ...;done;done`) outer first."""
    loops: list[Loop] = []
    for number, raw in report.numbered():
        line = without_prompt(raw)
        for variable, values in _loop_heads(line):
            if values and len(values) <= MAX_LOOP_VALUES:
                loops.append(Loop(variable, tuple(values), number, _loop_end(report, number)))
    return loops


def _loop_heads(line: str) -> list[tuple[str, list[str]]]:
    """Each loop head on a line, in order."""
    heads: list[tuple[int, str, list[str]]] = []
    for arith in _FOR_ARITH_RE.finditer(line):
        heads.append((arith.start(), arith.group(1), _arith_values(arith)))
    for head in _FOR_IN_RE.finditer(line):
        if (found := _loop_head(head)) is not None:
            heads.append((head.start(), *found))
    return [(variable, values) for _, variable, values in sorted(heads, key=lambda h: h[0])]


def _loop_head(head: re.Match[str]) -> tuple[str, list[str]] | None:
    values: list[str] = []
    for word in _LOOP_WORD_RE.findall(head.group(2)):
        expanded = _word_values(word)
        if expanded is None:
            return None
        values.extend(expanded)
    return head.group(1), values


def _arith_values(match: re.Match[str]) -> list[str]:
    start, op, end = int(match.group(2)), match.group(3), int(match.group(4))
    step, factor = int(match.group(6) or 1), int(match.group(7) or 1)
    values: list[str] = []
    value = start
    while (value <= end if op == "<=" else value < end) and len(values) <= MAX_LOOP_VALUES:
        values.append(str(value))
        if factor > 1:
            value *= factor
        elif step > 0:
            value += step
        else:
            break
    return values


def _word_values(word: str) -> list[str] | None:
    """A loop word's literal values; None if it needs the shell to compute."""
    seq = _SEQ_RE.match(word)
    if seq:
        numbers = [int(g) for g in seq.groups() if g is not None]
        first, step, last = (
            (1, 1, numbers[0])
            if len(numbers) == 1
            else (numbers[0], 1, numbers[1])
            if len(numbers) == 2
            else (numbers[0], numbers[1], numbers[2])
        )
        return _range(first, last, step)
    brace = _BRACE_RANGE_RE.match(word)
    if brace:
        step = int(brace.group(3) or 1)
        return _range(int(brace.group(1)), int(brace.group(2)), step)
    listed = _BRACE_LIST_RE.match(word)
    if listed:
        return listed.group(1).split(",")
    if "$" in word or "`" in word or "*" in word or "?" in word:
        return None
    return [word.strip("'\"")]


def _range(first: int, last: int, step: int) -> list[str] | None:
    if step == 0 or (last - first) * step < 0:
        return []
    count = (last - first) // step + 1
    if count > MAX_LOOP_VALUES:
        return None
    return [str(first + i * step) for i in range(count)]


def _loop_end(report: ReportText, start: int) -> int:
    """The line of the loop's `done` (its own line for a one-line loop)."""
    depth = 0
    for number in range(start, len(report.lines) + 1):
        line = without_prompt(report.lines[number - 1])
        depth += len(re.findall(r"(?:^|[;\s])do\b", line))
        depth -= len(re.findall(r"\bdone\b", line))
        if depth <= 0 and number > start:
            return number
        if depth <= 0 and re.search(r"\bdone\b", line):
            return number
    return start


def assignments(
    report: ReportText, before: int, lines: list[tuple[int, str, str]] | None = None
) -> dict[str, str]:
    """`NAME=value` lines before a command: literal values only (from `lines`, the
    report's assignment_lines, when a caller asks for many commands)."""
    found: dict[str, str] = {}
    for number, name, value in assignment_lines(report) if lines is None else lines:
        if number >= before:
            break
        found[name] = value
    return found


def assignment_lines(report: ReportText) -> list[tuple[int, str, str]]:
    """Every `NAME=value` line of the report: (line, name, literal value)."""
    found: list[tuple[int, str, str]] = []
    for number, raw in report.numbered():
        match = _ASSIGN_RE.match(without_prompt(raw))
        if match:
            value = next(g for g in match.groups()[1:] if g is not None)
            found.append((number, match.group(1), value))
    return found


def is_cpu_count(value: str) -> bool:
    """`$(nproc)`, `$(nproc --all)`, `` `getconf _NPROCESSORS_ONLN` ``: the reporter's CPUs."""
    return _CPU_COUNT_RE.match(value.strip("\"'")) is not None


def cpu_count_names(report: ReportText) -> set[str]:
    """Variables the report sets to its machine's CPU count (`THREADS=$(nproc --all)`)."""
    names = set()
    for _, raw in report.numbered():
        match = _CPU_ASSIGN_RE.match(without_prompt(raw))
        if match and is_cpu_count(match.group(2)):
            names.add(match.group(1))
    return names


def option_lists(
    report: ReportText, before: int, lines: list[tuple[int, str, str]], loops: Sequence[Loop]
) -> dict[str, str]:
    """Variables the report builds a command's options in, as they stand at line `before`:
    `OPTS="-S 0 -L 10 -n $FILES"`, then `OPTS="$OPTS -d $MNT/d$i"` appended in a loop
    (once per value of a loop with literal values, else once)."""
    built: dict[str, str] = {}
    for number, name, value in lines:
        if number >= before:
            break
        own = re.match(rf"^\$(?:\{{{name}\}}|{name}\b)\s*(.*)$", value)
        if own is None:
            if value.lstrip().startswith("-"):
                built[name] = value.strip()
            continue
        if name not in built:
            continue
        added = own.group(1)
        loop = next(iter(enclosing(loops, number)[-1:]), None)
        if loop is not None and "$" in added:
            added = " ".join(substituted(added, {loop.variable: v}) or "" for v in loop.values)
        built[name] = f"{built[name]} {added}".strip()
    return built


def spliced(words: list[str], assigned: dict[str, str]) -> list[str]:
    """A command's words with each word that is only a variable the report assigns a list
    of options to (`fio --bs=4k ${param}`) replaced by those options' words."""
    out: list[str] = []
    for word in words:
        match = _VAR_RE.fullmatch(word)
        value = assigned.get(match.group(1) or match.group(2), "") if match else ""
        out.extend(value.split() if value.startswith("-") else [word])
    return out


def all_assignments(report: ReportText, name: str) -> list[str]:
    """Every literal value the report assigns to `name`, in order, each once."""
    values: list[str] = []
    for _, raw in report.numbered():
        match = _ASSIGN_RE.match(without_prompt(raw))
        if match and match.group(1) == name:
            value = next(g for g in match.groups()[1:] if g is not None)
            if "$" not in value and value not in values:
                values.append(value)
    return values


def substituted(value: str | None, assigned: dict[str, str]) -> str | None:
    """A value with the variables the report assigns replaced by their literal values; any
    other expansion is left as written (this is what the reporter wrote, never run)."""
    if value is None or "$" not in value:
        return value

    def literal(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return assigned.get(name, match.group(0))

    return _VAR_RE.sub(literal, value)


def expansions(value: str) -> list[Expansion]:
    """Every shell expansion in a value, in order."""
    found: list[Expansion] = []
    rest = value
    for match in _SUBST_RE.finditer(value):
        text = match.group(0)
        kind = (
            "cpu count"
            if _CPU_COUNT_RE.match(text)
            else "arithmetic"
            if arithmetic(text) is not None
            else "command"
        )
        found.append(Expansion(text, kind))
        rest = rest.replace(text, " ")
    for match in _VAR_RE.finditer(rest):
        name = match.group(1) or match.group(2)
        kind = "fio keyword" if name.lower() in FIO_KEYWORDS else "variable"
        found.append(Expansion(match.group(0), kind, name))
    return found


_ARITHMETIC_RE = re.compile(r"^\$\(\(([0-9+\-*/%() \t]{1,64})\)\)$")
_INTEGER_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.floordiv,
    ast.Mod: operator.mod,
}


def arithmetic(text: str) -> str | None:
    """`$((8192))`, `$((4*1024))`: shell arithmetic on literal integers, worked out here
    (never run); None for anything else (variables, commands, a division by zero)."""
    match = _ARITHMETIC_RE.match(text)
    if match is None:
        return None
    try:
        tree = ast.parse(match.group(1).strip(), mode="eval").body
        return str(_integer(tree))
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def _integer(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_integer(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _INTEGER_OPS:
        left, right = _integer(node.left), _integer(node.right)
        if max(abs(left), abs(right)) > 1 << 62:
            raise ValueError("too large")
        return int(_INTEGER_OPS[type(node.op)](left, right))
    raise ValueError("not integer arithmetic")


def leftover_expansion(value: str) -> bool:
    """Whether a value still holds shell syntax once fio's own keywords are set aside."""
    for keyword in FIO_KEYWORDS:
        value = re.sub(rf"\$\{{?{keyword}\}}?", "", value, flags=re.IGNORECASE)
    return "$" in value or "`" in value


def enclosing(loops: Sequence[Loop], number: int) -> list[Loop]:
    """The loops a line is inside, innermost last."""
    return [loop for loop in loops if loop.first <= number <= loop.last]


def unquoted(text: str) -> str:
    """`text` with each quoted word's inside blanked, the same length: a backtick or `;`
    inside `--name "`uname -r`-${RW}"` is the word's, not the end of the command."""
    return re.sub(
        r"\"[^\"]*\"|'[^']*'",
        lambda m: m.group(0)[0] + "_" * (len(m.group(0)) - 2) + m.group(0)[0],
        text,
    )


_COMMENT_RE = re.compile(r"\s#")  # the shell's comment: a `#` that starts a word


def without_comment(text: str) -> str:
    """The command before its comment (`chattr +C file.dat # turns off COW`); a `#`
    inside quotes is the word's."""
    comment = _COMMENT_RE.search(unquoted(text))
    return text[: comment.start()].rstrip() if comment else text


def cut_at_shell_end(text: str) -> str:
    """The command alone: up to a closing backtick or parenthesis, a redirect, a pipe."""
    plain = unquoted(text)
    cut = len(text)
    for marker in ("`", " && "):  # a pipe and `;` are the separator's below
        at = plain.find(marker)
        if at >= 0:
            cut = min(cut, at)
    if separator := re.search(r"\s\|(?!\|)|;", plain):  # `... |grep IOPS;done;done`
        cut = min(cut, separator.start())
    if redirect := re.search(r"\s(?:\d?>>?|&>)", plain):  # > f, >> f, 2>&1, &> f
        cut = min(cut, redirect.start())
    if comment := _COMMENT_RE.search(plain):  # `-filename=file.dat  # Will show 2K IOPs`
        cut = min(cut, comment.start())
    if plain.count(")") > plain.count("("):
        cut = min(cut, plain.rfind(")"))
    return text[:cut].strip()
