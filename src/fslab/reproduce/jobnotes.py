"""A reporter's notes inside a pasted fio job file, and the values a chart shows.

People annotate the option they changed between runs right on its line
(`numjobs=16 --> changed this for different thread options`); fio would take the
note for part of the value. The values they ran are then often only on a chart's
axis, a line of numbers above its label (`1  2  4  8  12  16` / `Threads`).
"""

from __future__ import annotations

import re

from fslab.reproduce.text import ReportText

_NOTE_RE = re.compile(r"^(\s*[A-Za-z][\w.-]*\s*=\s*\S+)\s+(?:-+>|<-+|=+>|<=+)\s*(.*)$")
_CHANGED_RE = re.compile(r"\b(?:chang\w*|vari\w*|differ\w*|swept|sweep\w*)\b", re.I)
_AXIS_RE = re.compile(r"^\s*\d+(?:\s+\d+){2,}\s*$")
# the label under a chart's axis, for the options it counts
_AXIS_LABELS = {
    "numjobs": re.compile(r"^\s*(?:threads?|jobs?|numjobs|processes|tasks)\s*$", re.I),
}


def cut_note(line: str) -> tuple[str, str]:
    """A job file line without the reporter's `-->` note, and the note ("" if none)."""
    match = _NOTE_RE.match(line)
    return (match.group(1), match.group(2)) if match else (line, "")


def says_changed(note: str) -> bool:
    """Whether a note says the reporter changed this option between runs."""
    return bool(_CHANGED_RE.search(note))


def axis_values(report: ReportText, option: str) -> list[str]:
    """The values on a chart's axis labelled for `option` (ascending, each once): the
    first such axis in the report; [] if it has none."""
    label = _AXIS_LABELS.get(option)
    if label is None:
        return []
    for number, line in report.numbered():
        if not _AXIS_RE.match(line):
            continue
        below = next((x for x in report.lines[number : number + 2] if x.strip()), "")
        values = line.split()
        if label.match(below) and [int(v) for v in values] == sorted({int(v) for v in values}):
            return values
    return []
