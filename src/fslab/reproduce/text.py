"""A report as numbered lines, and the few text rules every extractor shares."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from fslab.reproduce.facts import Line

# A shell prompt before a command: "# ", "$ ", "root@host:~# ", "[root@h ~]# ".
# "# fio ...", "[root@host ~]# fio ...", and "#fio ..." (no space, before a command fslab
# reads; "#" before anything else stays a comment)
_PROMPT_RE = re.compile(
    # user@host:dir$, [user@host dir]#, and SUSE's root prompt host:/dir #
    r"^\s*(?:\[?[\w.-]+@[\w.-]+[: ][^#$\]]*\]?\s*|[\w.-]+:[~/][^\s#$]*\s+)?[#$]"
    r"(?:\s+|(?=(?:fio|mkfs[.\w]*|mke2fs|mount|dd|fs_mark|sysbench|dbench|sysctl|truncate|fallocate"
    r"|time)\s))"
    # a numbered step before a command: "1) mkfs.btrfs ...", "4. dd if=..."
    r"|^\s*\d{1,2}[).]\s+(?=(?:sudo\s+)?(?:fio|mkfs[.\w]*|mke2fs|mount|dd|fs_mark|sysbench|dbench"
    r"|sysctl|truncate|fallocate|time|btrfs|xfs_io|for|echo|sync|mkdir|tune2fs|fstrim|touch|chattr)\b)"
)
_QUOTE_RE = re.compile(r"^(?:\s*>)+ ?")

# Terminal escapes pasted with colored output (CSI, OSC, two-character), then any other
# control character but the tab: a report is read as text, and what it says is quoted
# into specs and replies, never control codes.
_ESCAPE_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# A number with an optional SI multiplier as people write figures: 22K, 1.5M, 801k, 4328.
NUMBER = r"(\d+(?:[.,]\d+)?)\s?([kKmMgG])?"
_MULTIPLIER = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


@dataclass(frozen=True)
class ReportText:
    """The report's lines, 1-based, with quoting ('> ') removed."""

    lines: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> ReportText:
        text = _CONTROL_RE.sub(" ", _ESCAPE_RE.sub("", text.replace("\r\n", "\n")))
        raw = text.replace("\r", "\n").split("\n")
        return cls(_without_step_marks([_QUOTE_RE.sub("", line).rstrip() for line in raw]))

    def line(self, number: int) -> Line:
        return Line(number, self.lines[number - 1])

    def numbered(self) -> Iterator[tuple[int, str]]:
        yield from enumerate(self.lines, start=1)

    def wrapped(self) -> Iterator[tuple[int, str, int]]:
        """Each line joined with the next (mail wraps sentences): (number, text, own length).

        A match that starts within the first `own length` characters belongs to the line.
        """
        for number, line in self.numbered():
            following = self.lines[number] if number < len(self.lines) else ""
            yield number, f"{line} {following.strip()}", len(line)

    def offset_to_line(self, offset: int) -> int:
        """The line number holding a character offset of `joined`."""
        return self.joined.count("\n", 0, offset) + 1

    @cached_property
    def joined(self) -> str:
        """The report as one text (made once: readers search it line after line)."""
        return "\n".join(self.lines)


# a harness log's step line: "---- mount -o max_inline=0 /dev/vdb /btrfs ..... :0 ----",
# the command at times wrapped by the mailer before its " ..... :0 ----"
_STEP_END_RE = re.compile(r"\s\.{3,} ?:-?\d{1,3} -{4}$")
_STEP_LINES = 4


def _without_step_marks(lines: list[str]) -> tuple[str, ...]:
    """Lines with a harness's step marks taken off, leaving the commands they print."""
    ends = [_STEP_END_RE.search(line, max(0, len(line) - 64)) for line in lines]
    out = [line[: end.start()] if end else line for line, end in zip(lines, ends, strict=True)]
    for number, line in enumerate(out):
        if line.startswith("---- ") and any(ends[number : number + _STEP_LINES]):
            out[number] = line[5:]
    return tuple(out)


def without_prompt(line: str) -> str:
    """A transcript line without its shell prompt ('# mkfs.ext4 /dev/sda5' -> 'mkfs.ext4 ...')."""
    return _PROMPT_RE.sub("", line, count=1).strip()


# a note that the command after it (or on its line) only prepares the file:
# "# prefill the file with random data", "lay out the file first"
_PREFILL_RE = re.compile(
    r"#.*\b(?:pre-?fill|pre-?allocate|lay\s*out|warm[- ]?up)\b|^\s*(?:>\s*)*(?:\d{1,2}[.)]\s+)?"
    r"#\s*(?:fill|prepare|create)\s+the\s+file",
    re.I,
)


def prefills(report: ReportText, number: int) -> bool:
    """Whether the command at this line is marked as preparing the file the measured run
    uses (a comment on its line or the line above): a setup step, not the workload."""
    above = report.lines[number - 2] if number >= 2 else ""
    return any(_PREFILL_RE.search(text) for text in (report.lines[number - 1], above))


_ECHOED_RE = re.compile(r"^(?:echo|printf)\s+(?:-\w+\s+)*[\"']")


def echoed(line: str) -> bool:
    """A script line that prints a command before running it (`echo "dd bs=1M ..."`):
    the command it shows is not run there."""
    return _ECHOED_RE.match(without_prompt(line)) is not None


def scaled_number(digits: str, multiplier: str | None) -> float:
    """'22', 'K' -> 22000.0; a decimal comma is read as a point."""
    return float(digits.replace(",", ".")) * _MULTIPLIER[(multiplier or "").lower()]
