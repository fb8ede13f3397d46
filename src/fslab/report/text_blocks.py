"""The building blocks of fslab's plain text: tables, wrapping, shell commands, numbers.

Kernel developers read reports in a mail client: fixed width, no markup,
commands they can paste. So tables are padded text (`Table`, whose rows of
strings the HTML report puts in cells as they are), commands are
shell-quoted and wrapped with backslashes, and paragraphs are wrapped to the
page. The text report (80 columns) and the reply (72) both write with them.
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fslab.base.vocab import ScalarValue, point_label

WIDTH = 80


@dataclass
class Table:
    """Rows of already formatted cells; text pads them, HTML puts them in <td>."""

    headers: list[str]
    rows: list[list[str]]
    align: str  # one "l" or "r" per column
    notes: list[str] = field(default_factory=list)
    cut: int = 0  # the column shortened when the table is wider than the page

    def is_group(self, row: Sequence[str]) -> bool:
        """A row with only its first cell set: a heading for the rows below it."""
        return len(row) > 1 and all(cell == "" for cell in row[1:])

    def lines(self, width: int = WIDTH, indent: str = "") -> list[str]:
        """Padded columns two spaces apart; the first column is cut to fit `width`."""
        cols = len(self.headers)
        body = [r for r in self.rows if not self.is_group(r)]
        widths = [max(len(r[i]) for r in [self.headers, *body]) for i in range(cols)]
        overflow = len(indent) + sum(widths) + 2 * (cols - 1) - width
        if overflow > 0:
            widths[self.cut] = max(4, widths[self.cut] - overflow)
        out = []
        for row in [self.headers, *self.rows]:
            if self.is_group(row):
                out.append((indent + row[0])[:width])
                continue
            cells = []
            for i, cell in enumerate(row):
                cell = cell if len(cell) <= widths[i] else cell[: widths[i] - 2] + ".."
                padded = cell.rjust(widths[i]) if self.align[i] == "r" else cell.ljust(widths[i])
                cells.append(padded)
            out.append((indent + "  ".join(cells)).rstrip())
        return out


def wrap(text: str, width: int = WIDTH, indent: str = "", hang: str | None = None) -> list[str]:
    """Wrap one paragraph; long words are broken rather than overflowing."""
    lines = textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent if hang is None else hang,
        break_long_words=True,
        break_on_hyphens=False,
    )
    return lines or [indent.rstrip()]


def rewrap(lines: Iterable[str], width: int = WIDTH, indent: str = "") -> list[str]:
    """Indent lines written by others, re-wrapping any that would pass `width`."""
    out = []
    for line in lines:
        full = indent + line
        if len(full) <= width:
            out.append(full.rstrip())
            continue
        lead = " " * (len(full) - len(full.lstrip()))
        out += wrap(full.strip(), width, lead, lead + "    ")
    return out


def heading(title: str) -> list[str]:
    return ["", title, "-" * min(len(title), WIDTH)]


def shell_lines(argv: Sequence[str], width: int = WIDTH, prompt: str = "# ") -> list[str]:
    """A command shell-quoted, wrapped with backslashes so each line fits `width`."""
    words: list[str] = []
    for arg in argv:
        words += _quoted_pieces(arg, width - 8)
    lines: list[str] = []
    current = prompt
    for i, word in enumerate(words):
        glued = word.startswith("\0")  # a piece of a word too long for one line
        word = word.lstrip("\0")
        last = i == len(words) - 1
        room = width if last else width - 2
        sep = "" if glued or current == prompt else " "
        if len(current) + len(sep) + len(word) <= room or current.strip() in ("", "#"):
            current += sep + word
            continue
        lines.append(current + ("\\" if glued else " \\"))
        current = ("" if glued else "    ") + word
    lines.append(current)
    return lines


def _quoted_pieces(arg: str, limit: int) -> list[str]:
    """shlex-quoted arg; one too long for a line becomes pieces joined without a space."""
    quoted = shlex.quote(arg)
    if len(quoted) <= limit:
        return [quoted]
    size = max(8, limit // 2)
    pieces = [shlex.quote(arg[i : i + size]) for i in range(0, len(arg), size)]
    return [pieces[0], *("\0" + p for p in pieces[1:])]


def new_stderr_lines(error: str, tail: Sequence[str], keep: int = 3) -> list[str]:
    """The last stderr lines that the one-line error does not already quote."""
    flat = " ".join(error.split())
    return [line for line in tail if " ".join(line.split())[:40] not in flat][-keep:]


def sweep_text(sweep: Mapping[str, ScalarValue]) -> str:
    return point_label(sweep)


def note_lines(notes: Iterable[str], indent: str = "") -> list[str]:
    """A section's notes, each in parentheses, wrapped."""
    out = []
    for note in notes:
        out += wrap(f"({note})", WIDTH, indent, indent + " ")
    return out
