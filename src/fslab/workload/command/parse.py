"""A command's output to its figure: the number a declared pattern finds.

Samples: tests/data/workloads/command/create_files.txt, captured by
tests/data/workloads/command/capture.sh (a sh loop creating 2000 empty files
in a scratch filesystem and printing its own rate, as a user's script would).

The spec declares a regular expression; the figure is its last match in the
output (a script's summary comes last), the first group if it has one, else
the whole match, read as a decimal number ("1,234.5" and "1e3" are numbers,
thousands separators dropped). No match, or a match that is not a number,
raises ToolError: a run whose figure is missing is a failed point, not a zero.
"""

from __future__ import annotations

import re

from fslab.base.errors import ToolError

_NUMBER_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def parse_figure(text: str, pattern: re.Pattern[str]) -> float:
    """The last match of `pattern` in `text` as a number; ToolError when there is none."""
    matches = list(pattern.finditer(text))
    if not matches:
        tail = " | ".join(line for line in text.strip().splitlines()[-3:] if line)
        raise ToolError(
            f"the command's output has no match for its pattern {pattern.pattern!r}"
            + (f"; it ended: {tail[-300:]}" if tail else "; it printed nothing"),
            text[-2000:],
        )
    last = matches[-1]
    found = last.group(1) if pattern.groups else last.group(0)
    word = (found or "").strip().replace(",", "").replace("_", "")
    if not _NUMBER_RE.match(word):
        raise ToolError(
            f"the command's pattern {pattern.pattern!r} matched {found!r}, not a number",
            text[-2000:],
        )
    return float(word)
