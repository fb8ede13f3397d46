"""base/format.py spells every value; no other module formats a metric value."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.format import (
    format_bytes,
    format_bytes_per_s,
    format_change_pct,
    format_count,
    format_duration_s,
    format_fitted,
    format_iops,
    format_metric,
    format_ns,
    format_number,
    format_p,
    format_pct,
    format_plain,
    format_points,
    format_ratio,
    format_share,
    format_size,
    format_size_exact,
    format_tick_ms,
)
from fslab.base.units import parse_size_bytes

SRC = Path(__file__).resolve().parents[1] / "src" / "fslab"
FORMATTER = SRC / "base" / "format.py"


# ------------------------------------------------------------------ the formatter


@pytest.mark.parametrize(
    ("value", "text"),
    [(950.4, "950"), (9_999, "9999"), (31_234, "31.2K"), (64_000_000, "64.0M"), (None, "-")],
)
def test_counts_and_operation_rates(value: float | None, text: str) -> None:
    assert format_count(value) == text
    assert format_metric(value, "IO/s") == text


def test_iops_carry_their_word() -> None:
    assert format_iops(31_234) == "31.2K IOPS"
    assert format_metric(2000, "IO/s", word=True) == "2000 IOPS"
    assert format_value("fio.write.iops", 31_234, word=True) == "31.2K IOPS"


def test_bytes_per_second_are_decimal_and_sizes_binary() -> None:
    assert format_bytes_per_s(602_000) == "602kB/s"
    assert format_bytes_per_s(43.8e6) == "43.8MB/s"
    assert format_bytes_per_s(2_344_400_000) == "2.34GB/s"
    assert format_bytes_per_s(250 * 2**20) == "262.1MB/s"  # a 250MiB/s throttle
    assert format_bytes(512) == "512B"
    assert format_bytes(16 * 2**30) == "16.0GiB"
    assert format_size(16 * 2**30) == "16GiB"
    assert format_size(27.5 * 2**20) == "27.5MiB"


@pytest.mark.parametrize(
    ("ns", "text"), [(45_000, "45us"), (3_620_000, "3.62ms"), (1_954_550_000, "1.95s")]
)
def test_durations(ns: float, text: str) -> None:
    assert format_ns(ns) == text
    assert format_metric(ns, "ns") == text
    assert format_metric(ns / 1e6, "ms") == text
    assert format_metric(ns / 1e9, "s") == text


def test_wall_times() -> None:
    assert format_duration_s(12.34) == "12.3s"
    assert format_duration_s(245) == "4m05s"
    assert format_duration_s(7380) == "2h03m"


def test_percentages_have_two_spellings() -> None:
    assert format_pct(37.4) == "37%"
    assert format_pct(0.84, 1) == "0.8%"
    assert format_pct(2.5, None) == "2.5%"
    assert format_share(0.374) == "37%"
    assert format_share(0.1234, 2) == "12.34%"
    assert format_change_pct(12.4) == "+12%"
    assert format_change_pct(-3.46, 1) == "-3.5%"
    assert format_change_pct(-12.5, None) == "-12.5%"
    assert format_points(1.234) == "+1.2"
    for spell in (format_pct, format_share, format_change_pct, format_points):
        assert spell(None) == "-"
        assert spell(math.nan) == "-"


def test_share_matches_python_percent_spec() -> None:
    """format_share(x) is what f"{x:.0%}" printed: the same multiplication, the same rounding."""
    for x in (0.125, 0.005, 0.995, 1 / 3, 0.0451, 2.0, -0.015):
        assert format_share(x) == f"{x:.0%}"
        assert format_share(x, 1) == f"{x:.1%}"
        assert format_change_pct(100 * x) == f"{x:+.0%}"


def test_other_numbers() -> None:
    assert format_number(3.14159) == "3.14"
    assert format_number(950.4) == "950"
    assert format_number(12_345) == "12.3K"
    assert format_ratio(0.853) == "0.85"
    assert format_plain(64.0) == "64"
    assert format_fitted(math.inf) == "inf"
    assert format_fitted(1e-15) == "0"
    assert format_fitted(12_345.6) == "12346"
    assert format_p(0.0004) == "<0.001"
    assert format_p(0.0221) == "0.022"
    assert format_tick_ms(0.5) == "0.5ms"
    assert format_tick_ms(2000) == "2s"


def test_the_catalog_unit_picks_the_spelling() -> None:
    assert format_value("fio.write.iops", 27_100) == "27.1K"
    assert format_value("dd.bw_bytes_s", 43_800_000) == "43.8MB/s"
    assert format_value("blk.sda_bytes_per_s", 43_800_000) == "43.8MB/s"
    assert format_value("fio.sync.lat_ns_p99", 3_620_000) == "3.62ms"
    assert format_value("dd.seconds", 0.0123) == "12.30ms"
    assert format_value("fio.cpu.sys_pct", 23.4) == "23%"
    assert format_value("wq.events.utilisation", 0.85) == "85%"
    assert format_value("profile.inclusive.ext4_sync_file", 0.1234) == "12.3%"
    assert format_value("not.in.the.catalog", 12_345) == "12.3K"
    assert format_value(None, 1.0) == "-"
    assert format_value("fio.write.iops", None) == "-"


# ------------------------------------------------------------------ nobody else formats

# A number's spec ends in one of these presentation types: {x:.2f}, {x:+.1%}, {n:,d}.
_NUMERIC_SPEC = re.compile(r"[-+ ]?[#0]?\d*[,_]?(\.\d+)?[eEfFgGnd%]$")
# Text right after a formatted number that makes it a metric value spelled by hand.
_UNIT_AFTER = re.compile(r"^ ?(%|IOPS\b|[kKMGT]i?B/s|K\b|us\b|ms\b)")

# Justified exceptions: (module under src/fslab, a snippet of the offending line, why).
# None needed today: fio's percentile keys ({q * 100:.6f}), SVG coordinates, timeouts in
# error messages ("{timeout_s:.0f} s") and scores are not metric values and pass the scan.
ALLOWED: tuple[tuple[str, str, str], ...] = ()


def _spec(node: ast.FormattedValue) -> str:
    if not isinstance(node.format_spec, ast.JoinedStr):
        return ""
    return "".join(
        v.value if isinstance(v, ast.Constant) else "{}" for v in node.format_spec.values
    )


def _numeric(node: ast.AST) -> bool:
    return isinstance(node, ast.FormattedValue) and bool(_NUMERIC_SPEC.search(_spec(node)))


def _bare_number(expr: ast.expr) -> bool:
    """An f-string that is only formatted numbers and a short unit: a number formatter."""
    if isinstance(expr, ast.IfExp):
        return _bare_number(expr.body) or _bare_number(expr.orelse)
    if not isinstance(expr, ast.JoinedStr):
        return False
    text = "".join(v.value for v in expr.values if isinstance(v, ast.Constant))
    formatted = [v for v in expr.values if isinstance(v, ast.FormattedValue)]
    return bool(formatted) and all(_numeric(v) for v in formatted) and len(text.strip()) <= 6


def offences(source: str) -> list[tuple[int, str]]:
    """What in a module formats a value by hand: (line, what)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for i, part in enumerate(parts):
                if not isinstance(part, ast.FormattedValue):
                    continue
                spec = _spec(part)
                after = parts[i + 1] if i + 1 < len(parts) else None
                before = parts[i - 1] if i > 0 else None
                if spec.endswith("%"):
                    found.append((part.lineno, f"a percent spec :{spec}"))
                elif not _numeric(part):
                    continue
                elif isinstance(after, ast.Constant) and _UNIT_AFTER.match(str(after.value)):
                    found.append((part.lineno, f":{spec} followed by {str(after.value)[:6]!r}"))
                elif isinstance(before, ast.Constant) and re.search(r"(^|[ (])x$", before.value):
                    found.append((part.lineno, f"a ratio x{{:{spec}}} by hand"))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "format":
            spec_arg = node.args[1] if len(node.args) > 1 else None
            if isinstance(spec_arg, ast.Constant) and _NUMERIC_SPEC.search(str(spec_arg.value)):
                found.append((node.lineno, f"format(..., {spec_arg.value!r})"))
        elif isinstance(node, ast.FunctionDef | ast.Lambda):
            returns = (
                [node.body]
                if isinstance(node, ast.Lambda)
                else [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value]
            )
            if any(_bare_number(r) for r in returns):
                name = getattr(node, "name", "lambda")
                found.append((node.lineno, f"a number formatter {name}()"))
    return found


def _allowed(relative: str, line: str) -> bool:
    return any(relative == path and snippet in line for path, snippet, _ in ALLOWED)


def test_no_module_but_the_formatter_formats_a_value() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        if path == FORMATTER:
            continue
        relative = path.relative_to(SRC).as_posix()
        source = path.read_text()
        lines = source.splitlines()
        for lineno, what in offences(source):
            if not _allowed(relative, lines[lineno - 1]):
                bad.append(f"{relative}:{lineno}: {what}")
    assert not bad, "format these through fslab.base.format:\n" + "\n".join(bad)


def test_the_allowlist_is_still_needed() -> None:
    for path, snippet, why in ALLOWED:
        assert why
        assert snippet in (SRC / path).read_text(), f"{path}: {snippet} is gone; drop it"


@pytest.mark.parametrize(
    "stray",
    [
        'f"{share:.0%} of the change"',
        'f"{change:+.1f}% against"',
        'f"{value / 2**20:.1f} MiB/s"',
        'f"{rate:.0f} IOPS"',
        'f"metrics x{factor:.2f}"',
        'format(share, ".1%")',
        "lambda v: f'{v:.3g}'",
    ],
)
def test_the_scan_catches_a_stray_formatter(stray: str) -> None:
    assert offences(f"text = {stray}\n")
    assert offences(f"def _fmt(v):\n    return {stray}\n")


def test_the_scan_leaves_words_and_counts_alone() -> None:
    clean = (
        'f"{n} runs of {name}, within {timeout_s:.0f} s"\n'
        'f"score {c.score:.2f}, p {format_p(p)}, {format_share(x)} busy"\n'
    )
    assert offences(clean) == []


def test_a_size_a_spec_holds_reads_back_to_the_same_bytes():
    for n_bytes in (16 << 30, 1200 << 20, (27 << 20) + (1 << 19), 4473924266, 512):
        assert parse_size_bytes(format_size_exact(n_bytes)) == n_bytes
    assert format_size_exact(1200 << 20) == "1200MiB" and format_size_exact(16 << 30) == "16GiB"
