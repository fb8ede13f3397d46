"""Figures the reporter measured: fio output, prose numbers, perf percentages, small tables.

Each becomes the expected result of the reproduction, in fslab's metric units
(IO/s, B/s, a share 0..1, a percent change), with the report's own text kept.
A direction-less "iops" is resolved later against the workload (metric
"fio.?.iops" until then).
"""

from __future__ import annotations

import re
from dataclasses import replace

from fslab.base.units import parse_size_bytes
from fslab.reproduce.facts import FigureFact, Line
from fslab.reproduce.machine import gives_device_limit
from fslab.reproduce.text import NUMBER, ReportText, scaled_number
from fslab.spec.reported import Qualifier

_BW_UNIT = r"(B/s|[kKMG]i?B/s|[kKMG]Bps|kb/s)"
_FIO_NEW_RE = re.compile(
    r"\b(read|write|trim)\s*:\s*IOPS=" + NUMBER + r",\s*BW=(\d+(?:\.\d+)?)\s?" + _BW_UNIT, re.I
)
_FIO_OLD_RE = re.compile(
    r"\b(read|write)\s*:\s*io=\S+,\s*bw=(\d+(?:\.\d+)?)\s?" + _BW_UNIT + r",\s*iops=" + NUMBER,
    re.I,
)
_FIO_GROUP_RE = re.compile(r"\b(READ|WRITE):\s*bw=(\d+(?:\.\d+)?)\s?" + _BW_UNIT)
_FROM_TO_RE = re.compile(
    r"\bfrom\s+" + NUMBER + r"\s+to\s+(less than|under|below|about|around|over)?\s*" + NUMBER, re.I
)
_IOPS_RE = re.compile(
    r"(?:\bIOPS\s*[=:]\s*" + NUMBER + r"|(?<![\w.])" + NUMBER + r"\s?IOPS\b)", re.I
)
# fio's running status line, `Jobs: 32 (f=32): [w(32)][100.0%][r=0KiB/s,w=290MiB/s]
# [r=0,w=74.2k IOPS][eta 00m:00s]` (older fio: `[0/75.4K/0 iops] [eta 00m:00s]`), wrapped
# or not: a moment of the run, not its result
_FIO_STATUS_RE = re.compile(
    r"\biops\]\s*\[eta\b|\[eta\s+\d+[hms]?:|^\s*Jobs:\s*\d+\s*\(f=|\[[\d.]+[kKM]?(?:/[\d.]+[kKM]?){2}\s*iops\]",
    re.I,
)
# fio's per-sample statistics, `bw (  KiB/s): min=..., max=151408, per=...` and `iops :
# min=..., avg=...`: the spread of one job's samples, not the run's figure
_FIO_SAMPLES_RE = re.compile(r"^\s*(?:bw\s*\([^)]*\)|iops)\s*:\s*min\s*=", re.I)
_BW_RE = re.compile(r"(?<![\w.=])(\d+(?:[.,]\d+)?)\s?" + _BW_UNIT + r"(?!\w)")
# Patterns that start with a number start at a number's first digit, (?<!\d): starting
# at every digit of a long run of digits backtracked quadratically (fuzzed reports).
_CHANGE_RE = re.compile(
    r"(?<!\d)(\d+(?:\.\d+)?)%\s+(regression|improvement|drop|slower|faster|gain)"
    r"(?:\s+(?:of|in)\s+([\w.]+))?",
    re.I,
)
_PERF_TOP_RE = re.compile(r"^\s*(\d+\.\d+)%\s+(\S+)\s+\[[^\]]+\]\s+\[[k.]\]\s+(\S+)")
_PERF_BRANCH_RE = re.compile(r"--(\d+\.\d+)%--\s*(\S+)")
_PERF_FRAME_RE = re.compile(r"^[\s|]*([A-Za-z_][\w.]*)\s*$")  # pipes and blanks, then a name
_TABLE_ROW_RE = re.compile(
    r"^\s*([A-Za-z][\w()/ -]*?):?\s+((?:\d+(?:\.\d+)?[kKM]?\s?(?:[kKMG]i?B/s|ns|us|ms)?\s+)+"
    r"\d+(?:\.\d+)?[kKM]?\s?(?:[kKMG]i?B/s|ns|us|ms)?)\s*$"
)
_CELL_RE = re.compile(r"(\d+(?:\.\d+)?)\s?(?:([kKMG]i?B/s|ns|us|ms)|([kKM]))?")
_HEADER_LABELS = {"read", "write", "rw", "randread", "randwrite", "numjobs", "threads", "jobs"}
_QUALIFIERS: dict[str, Qualifier] = {
    "less than": "less than",
    "under": "less than",
    "below": "less than",
    "about": "about",
    "around": "about",
    "over": "more than",
}


def find_figures(report: ReportText) -> list[FigureFact]:
    figures: list[FigureFact] = []
    table_lines = _table_line_numbers(report)
    for number, line in report.numbered():
        source = report.line(number)
        if number in table_lines or _FIO_STATUS_RE.search(line) or _FIO_SAMPLES_RE.match(line):
            continue
        found = [_with_heading(f, report, number) for f in _fio_output(line, source)]
        found = found or _perf_lines(report, number, source)
        if not found:
            found = _prose(line, source)
        figures.extend(found)
    figures.extend(_tables(report, table_lines))
    return sorted(figures, key=lambda f: f.source.number)


def bw_bytes_s(digits: str, unit: str) -> float:
    """'602', 'kB/s' -> 602000.0 (kB, MB: powers of 1000; KiB, MiB: of 1024; KBps as KB/s)."""
    size_unit = unit.replace("ps", "/s").removesuffix("/s").replace("kb", "kB")
    return float(parse_size_bytes(f"{digits.replace(',', '.')}{size_unit}"))


def _with_heading(figure: FigureFact, report: ReportText, number: int) -> FigureFact:
    """fio output under a heading ('Unpatched', 'after the patch:') ran under that heading."""
    if figure.context:
        return figure
    for text in reversed(report.lines[max(0, number - 4) : number - 1]):
        stripped = text.strip().rstrip(":")
        if stripped and not _FIO_OLD_RE.search(text) and not _FIO_NEW_RE.search(text):
            if len(stripped) <= 40:
                return replace(figure, context=stripped)
            break
    return figure


def _context(line: str, at: int) -> str:
    """What a figure was measured on, as the line says before it ('v6.2 (patched)')."""
    return line[:at].strip().rstrip(":").strip()


def _fio_output(line: str, source: Line) -> list[FigureFact]:
    match = _FIO_NEW_RE.search(line)
    if match:
        iops = (match.group(2), match.group(3), f"IOPS={match.group(2)}{match.group(3) or ''}")
        bw = (match.group(4), match.group(5), f"BW={match.group(4)}{match.group(5)}")
        return _iops_and_bw(match, iops, bw, line, source)
    match = _FIO_OLD_RE.search(line)
    if match:
        iops = (match.group(4), match.group(5), f"iops={match.group(4)}")
        bw = (match.group(2), match.group(3), f"bw={match.group(2)} {match.group(3)}")
        return _iops_and_bw(match, iops, bw, line, source)
    match = _FIO_GROUP_RE.search(line)
    if match:
        direction = match.group(1).lower()
        return [
            FigureFact(
                f"fio.{direction}.bw_bytes_s",
                bw_bytes_s(match.group(2), match.group(3)),
                "B/s",
                f"bw={match.group(2)}{match.group(3)}",
                source,
            )
        ]
    return []


def _iops_and_bw(
    match: re.Match[str],
    iops: tuple[str, str | None, str],
    bw: tuple[str, str, str],
    line: str,
    source: Line,
) -> list[FigureFact]:
    """fio's `write: IOPS=..., BW=...` as two figures; (digits, multiplier or unit, text)."""
    direction, context = match.group(1).lower(), _context(line, match.start())
    return [
        FigureFact(
            f"fio.{direction}.iops",
            scaled_number(iops[0], iops[1]),
            "IO/s",
            iops[2],
            source,
            context=context,
        ),
        FigureFact(
            f"fio.{direction}.bw_bytes_s",
            bw_bytes_s(bw[0], bw[1]),
            "B/s",
            bw[2],
            source,
            context=context,
        ),
    ]


def _perf_lines(report: ReportText, number: int, source: Line) -> list[FigureFact]:
    line = report.lines[number - 1]
    top = _PERF_TOP_RE.match(line)
    if top:
        symbol = top.group(3)
        chain = _call_chain(report, number)
        context = f"{top.group(2)}: " + " <- ".join([symbol, *chain][:6])
        return [
            FigureFact(
                f"profile.self.{symbol}",
                float(top.group(1)) / 100,
                "share",
                f"{top.group(1)}% {symbol}",
                source,
                context=context,
            )
        ]
    branch = _PERF_BRANCH_RE.search(line)
    if branch and branch.group(2) != "[...]":
        return [
            FigureFact(
                "",
                float(branch.group(1)) / 100,
                "share",
                f"{branch.group(1)}% {branch.group(2)}",
                source,
                context=f"share of the samples above reached through {branch.group(2)}",
            )
        ]
    return []


def _call_chain(report: ReportText, number: int) -> list[str]:
    """The callers perf prints under a symbol (the heaviest branch), in order."""
    chain: list[str] = []
    for text in report.lines[number : number + 40]:
        branch = _PERF_BRANCH_RE.search(text)
        frame = branch.group(2) if branch else None
        if frame is None:
            match = _PERF_FRAME_RE.match(text.replace("---", " "))
            frame = match.group(1) if (match and "|" in text) or (match and "---" in text) else None
        if frame in (None, "[...]"):
            if chain and not text.strip().startswith("|") and text.strip():
                break
            continue
        if frame not in chain and frame != "0x0":
            chain.append(frame)
    return chain[1:] if chain and chain[0] == report.lines[number - 1].split()[-1] else chain


def _prose(line: str, source: Line) -> list[FigureFact]:
    figures: list[FigureFact] = []
    if gives_device_limit(line):
        return figures  # read by machine.py
    span = _FROM_TO_RE.search(line) if re.search(r"iops|MB/s|kB/s|throughput", line, re.I) else None
    if span and _looks_like_versions(span):
        span = None
    if span:
        qualifier = _QUALIFIERS.get((span.group(3) or "").lower(), "")
        pairs: tuple[tuple[str, str, str, Qualifier], ...] = (
            (span.group(1), span.group(2), "before", ""),
            (span.group(4), span.group(5), "after", qualifier),
        )
        for digits, multiplier, label, qual in pairs:
            text = f"{qual_word(span.group(3)) if qual else ''}{digits}{multiplier or ''}"
            figures.append(
                FigureFact(
                    "fio.?.iops",
                    scaled_number(digits, multiplier),
                    "IO/s",
                    text,
                    source,
                    qualifier=qual,
                    context=label,
                )
            )
        return figures
    for match in _IOPS_RE.finditer(line):
        digits, multiplier = match.group(1) or match.group(3), match.group(2) or match.group(4)
        figures.append(
            FigureFact(
                "fio.?.iops",
                scaled_number(digits, multiplier),
                "IO/s",
                match.group(0).strip(),
                source,
            )
        )
    for match in _BW_RE.finditer(line):
        figures.append(
            FigureFact(
                "?.bw_bytes_s",
                bw_bytes_s(match.group(1), match.group(2)),
                "B/s",
                match.group(0).strip(),
                source,
            )
        )
    for match in _CHANGE_RE.finditer(line):
        sign = -1.0 if match.group(2).lower() in ("regression", "drop", "slower") else 1.0
        metric = (match.group(3) or "").replace("_iops", ".iops").replace("_bw", ".bw")
        figures.append(
            FigureFact(
                metric if metric.startswith("fio.") else "",
                sign * float(match.group(1)),
                "%",
                match.group(0),
                source,
                context="change",
            )
        )
    return figures


def _looks_like_versions(span: re.Match[str]) -> bool:
    """'from 4.14 to 5.10' is a kernel upgrade, not two figures."""
    return not (span.group(2) or span.group(5)) and all(
        re.fullmatch(r"\d\.\d{1,2}", d) for d in (span.group(1), span.group(4))
    )


# --- small tables ---------------------------------------------------------------------------


_TABLE_ROW_MAX = 300
"""A table row is a label and a few figures; the row pattern backtracks over long blank
runs, so a longer line is not tried."""


def _table_line_numbers(report: ReportText) -> set[int]:
    rows = {
        n
        for n, line in report.numbered()
        if len(line) <= _TABLE_ROW_MAX and _TABLE_ROW_RE.match(line)
    }
    return {n for n in rows if n - 1 in rows or n + 1 in rows}


def _tables(report: ReportText, numbers: set[int]) -> list[FigureFact]:
    figures: list[FigureFact] = []
    blocks: list[list[int]] = []
    for number in sorted(numbers):
        if blocks and blocks[-1][-1] == number - 1:
            blocks[-1].append(number)
        else:
            blocks.append([number])
    for block in blocks:
        rows = [_TABLE_ROW_RE.match(report.lines[n - 1]) for n in block]
        first = rows[0]
        if first and first.group(1).strip().lower() in _HEADER_LABELS:
            columns = first.group(2).split()
            rows, block = rows[1:], block[1:]
        else:
            columns = _header_columns(
                report, block[0], len(rows[0].group(2).split()) if rows[0] else 0
            )
        section_unit = _section_unit(report, block[0])
        for number, row in zip(block, rows, strict=True):
            if row is None:
                continue
            label = row.group(1).strip().rstrip(":")
            cells = _CELL_RE.findall(row.group(2))
            for index, (digits, unit, multiplier) in enumerate(cells):
                figure = _cell_figure(label, digits, multiplier, unit, section_unit)
                if figure is None:
                    continue
                metric, value, unit_name = figure
                column = columns[index] if index < len(columns) else f"column {index + 1}"
                figures.append(
                    FigureFact(
                        metric,
                        value,
                        unit_name,
                        f"{digits}{multiplier}{unit}",
                        report.line(number),
                        context=f"{label} / {column}",
                    )
                )
    return figures


def qual_word(word: str | None) -> str:
    return f"{word} " if word else ""


def _header_columns(report: ReportText, first_row: int, count: int) -> list[str]:
    for text in reversed(report.lines[max(0, first_row - 3) : first_row - 1]):
        cells = [c for c in re.split(r"\s{2,}", text.strip()) if c]
        if len(cells) == count:
            return cells
    return []


def _section_unit(report: ReportText, first_row: int) -> str:
    for text in reversed(report.lines[max(0, first_row - 4) : first_row - 1]):
        if re.search(r"\biops\b", text, re.I):
            return "iops"
        unit = re.search(r"\((KBps|KB/s|MB/s|MBps|KiB/s|MiB/s)\)", text)
        if unit:
            return unit.group(1)
    return ""


def _cell_figure(
    label: str, digits: str, multiplier: str, unit: str, section_unit: str
) -> tuple[str, float, str] | None:
    if unit.endswith("/s") or (not unit and section_unit and section_unit != "iops"):
        return "?.bw_bytes_s", bw_bytes_s(digits, unit or section_unit), "B/s"
    if unit:
        return None  # a latency: kept in the report's text, not an expected figure
    if label.lower() == "iops" or section_unit == "iops":
        return "fio.?.iops", scaled_number(digits, multiplier), "IO/s"
    return None
