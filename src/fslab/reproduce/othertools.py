"""Benchmarks a report runs that fslab names and does not run, each with why: iozone
and pgbench (no fslab workload), and will-it-scale, whose tests are C programs built from
its own tree (`./cc_processes -t 24`). Read as text; nothing is built or run."""

from __future__ import annotations

import re
from collections.abc import Iterator

from fslab.reproduce.facts import OtherToolFact
from fslab.reproduce.text import ReportText, without_prompt

_RUNS = "(it runs fio, dd, fs_mark, sysbench fileio and dbench)"
_OTHER_TOOLS = {
    "iozone": f"iozone is not a workload fslab runs {_RUNS}",
    "pgbench": f"pgbench drives a PostgreSQL server, not a workload fslab runs {_RUNS}",
}
# fs_mark, sysbench, dbench, aim7 and filebench are read as workloads by tools.py
_OTHER_TOOL_RE = re.compile(r"(?:^|(?<=[\s`'\"(./]))(" + "|".join(_OTHER_TOOLS) + r")\s+-")


# will-it-scale's test binaries, `./cc_processes -t 24`, `gmake && ./vfsmix2_processes`
_WILL_IT_SCALE_RE = re.compile(r"(?:^|[\s;&`(])(?:\./|[\w./-]*/)?(\w+_(?:processes|threads))\b")
_WILL_IT_SCALE_WHY = (
    "will-it-scale's tests are C programs built from its own tree (here {test}), not a "
    "packaged benchmark; fslab neither builds nor runs them"
)


def named_tools(report: ReportText) -> Iterator[OtherToolFact]:
    """Each such benchmark the report runs, at the line that runs it."""
    named = "will-it-scale" in report.joined.lower()
    for number, line in report.numbered():
        match = _OTHER_TOOL_RE.search(line)
        if match:
            yield OtherToolFact(match.group(1), _OTHER_TOOLS[match.group(1)], report.line(number))
        elif named and (test := _WILL_IT_SCALE_RE.search(without_prompt(line))):
            why = _WILL_IT_SCALE_WHY.format(test=test.group(1))
            yield OtherToolFact("will-it-scale", why, report.line(number))
            named = False  # the first test run names it


_SAID_RE = re.compile(r"\b(" + "|".join(_OTHER_TOOLS) + r")\b", re.I)


def said_tool(report: ReportText) -> OtherToolFact | None:
    """Such a benchmark named in prose as the one the report measured with ("measures it
    only with iozone"), for a report that shows no command at all."""
    for number, line in report.numbered():
        if match := _SAID_RE.search(line):
            name = match.group(1).lower()
            return OtherToolFact(name, _OTHER_TOOLS[name], report.line(number))
    return None
