"""dd in a report's transcript: each run's operands, what dd printed below it, and
whether it wrote a file or read one (`dd if=FILE of=/dev/null`). Nothing is run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from fslab.base.errors import FslabError
from fslab.reproduce import shell
from fslab.reproduce.facts import DdFact, OtherToolFact
from fslab.reproduce.text import ReportText, echoed, without_prompt
from fslab.workload.dd import parse as dd_mod

_CACHED_RE = re.compile(r"#.*\b(?:cached|cache hit|warm)\b", re.I)  # "# 2nd run, data is cached"
_OPERANDS_RE = re.compile(r"^\s*[a-z]+=[^\s;&|]+(?:\s+[a-z]+=[^\s;&|]+)*\s*$")
# an operand's value ends at the shell's `)` (`time ( ...; dd ... oflag=dsync)`), unless
# it is shell arithmetic, `count=$((1024*1024))`
_VALUE = r"(?:\$\(\([^()]*\)\)|[^\s;&|)])+"
_DD_RE = re.compile(r"(?:^|(?<=[\s`'\"(]))dd\s+((?:[a-z]+=" + _VALUE + r"\s*)+)")
# operands that open a line continued from a backslash
_CONTINUED_RE = re.compile(r"^\s*((?:[a-z]+=" + _VALUE + r"\s*)+)")


# `dd ... ; time sync`, `dd ... && sync` on its line, or `time sync` on the next
_SYNC_AFTER_RE = re.compile(r"^(?:;|&&)\s*(?:time\s+)?sync\b")
_SYNC_LINE_RE = re.compile(r"^\s*(?:\S*[$#]\s*)?time\s+sync\s*$")


def dd_runs(report: ReportText, other: list[OtherToolFact]) -> Iterator[DdFact]:
    for number, line in report.numbered():
        match = _DD_RE.search(without_prompt(line))
        if not match or echoed(line):
            continue
        words = match.group(1).split()
        following = report.lines[number] if number < len(report.lines) else ""
        rest = without_prompt(line)[match.end() :].strip()
        if not rest and _OPERANDS_RE.match(following):
            words += following.split()  # a mail wrapped the operands: `oflag=direct` / `bs=1M`
        elif rest == "\\" and (more := _CONTINUED_RE.match(following)):
            words += more.group(1).split()  # `of=/mnt/test \` / `bs=1M count=360 ...)`
        operands = tuple(_literal(*word.split("=", 1)) for word in words if "=" in word)
        values = dict(operands)
        target = values.get("of", "")
        source = values.get("if", "")
        if source and not source.startswith("/dev/") and target in ("", "/dev/null"):
            cached = bool(_CACHED_RE.search(line))
            yield replace(_with_output(report, number, operands), read=True, cached=cached)
            continue
        if not target or target.startswith("/dev/"):
            other.append(
                OtherToolFact(
                    tool="dd",
                    why=f"dd of={target or '(stdout)'} writes no file on a filesystem",
                    source=report.line(number),
                )
            )
            continue
        synced = bool(_SYNC_AFTER_RE.match(rest)) or bool(_SYNC_LINE_RE.match(following))
        yield replace(_with_output(report, number, operands), synced=synced)


def _literal(name: str, value: str) -> tuple[str, str]:
    """An operand with its shell arithmetic worked out (`count=$((1024*1024*1024))`)."""
    return name, shell.arithmetic(value) or value


def _with_output(report: ReportText, number: int, operands: tuple) -> DdFact:
    """The dd run, with its summary when the next lines of the transcript show it."""
    following = report.lines[number : number + 6]
    block: list[str] = []
    for offset, text in enumerate(following):
        block.append(text)
        if re.search(r"\bcopied, ", text):
            try:
                result = dd_mod.parse_dd_output("\n".join(block))
            except FslabError:
                break
            rate = text.rsplit(",", 1)[-1].strip()
            return DdFact(
                operands=operands,
                source=report.line(number),
                bytes_copied=result.bytes_copied,
                seconds=result.seconds,
                rate_text=rate,
                output_line=report.line(number + offset + 1),
            )
    return DdFact(operands=operands, source=report.line(number))


def writes_of(runs: list[DdFact], name: str) -> list[DdFact]:
    """The report's dd runs that wrote the file `name` (a read's layout)."""
    return [r for r in runs if not r.read and r.operand("of") == name]
