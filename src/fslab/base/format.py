"""Every number fslab prints, formatted in one place, keyed by unit.

The text and HTML reports, the JSON's display fields, the diagnosis, the reply
and the reproduce notes all print values through these functions, so the same
number never reads two ways: a metric's unit is the one the metric catalog
declares (base/vocab.py and each collector's family), `format_metric` picks the
spelling from it, and analyze/campaign/metrics_catalog.format_value looks the
unit up by the metric's name. No other module keeps a number formatter
(tests/test_format.py fails on one).

The conventions, one per unit:

- counts and operations per second (``IO/s``, ``calls``, ``events``): whole
  numbers, thousands as K from 10,000 and millions as M from 10 million:
  950, 9500, 31.2K, 64.0M; `format_iops` adds the word: "31.2K IOPS".
- other numbers (``1/s``, ``threads``, a catalog unit of ""): three
  significant digits below 100, whole numbers to 10,000, then K: 0.25, 3.14,
  950, 31.2K.
- bytes per second: decimal (SI) units, as fio's and dd's MB/s and as every
  results table has printed them: 602kB/s, 43.8MB/s, 2.34GB/s.
- bytes (sizes): binary (IEC) units, as specs, mkfs and truncate write them:
  512B, 4.0KiB, 16.0GiB.
- durations measured by a metric (``ns``, ``ms``, ``s``): whole microseconds
  below 1 ms, then ms, then s: 45us, 3.62ms, 1.95s. Wall times of fslab's own
  work: `format_duration_s`: 12.3s, 4m05s, 2h03m.
- ratios: "0.85", in prose "x0.85" (a factor between two values); a sweep
  value or a configured factor as given: "64", "0.5" (`format_plain`); a
  fitted model value: `format_fitted`.
- percentages, two spellings: a share or level, "37%" (`format_pct` from
  percent, `format_share` from a fraction; catalog units ``%`` and
  ``fraction``), and a signed change, "+12%" (`format_change_pct`); a share's
  change in percentage points is "+1.2" (`format_points`), never with a %
  sign. Profile shares (catalog unit ``share``) keep one decimal, since most
  are below 1%.
- p values: "0.022", "<0.001".

A missing value (None, NaN) prints "-".
"""

from __future__ import annotations

import math
import re


def _missing(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


# ------------------------------------------------------------------ plain numbers


def format_count(value: float | None) -> str:
    """A count or an operation rate: 950, 31.2K, 64.0M."""
    if value is None or _missing(value):
        return "-"
    if abs(value) >= 10_000_000:
        return f"{value / 1e6:.1f}M"
    return f"{value / 1000:.1f}K" if abs(value) >= 10_000 else f"{value:.0f}"


def format_iops(value: float | None) -> str:
    """Operations per second with the word: "31.2K IOPS"."""
    return f"{format_count(value)} IOPS"


def format_number(value: float | None, digits: int = 3) -> str:
    """Any other number: `digits` significant digits below 100, whole to 10,000, then K."""
    if value is None or _missing(value):
        return "-"
    if abs(value) >= 10_000:
        return f"{value / 1000:.1f}K"
    return f"{value:.{digits}g}" if abs(value) < 100 else f"{value:.0f}"


def format_ratio(value: float | None, digits: int = 2) -> str:
    """A factor between two values: "0.85" (prose writes it "x0.85")."""
    if value is None or _missing(value):
        return "-"
    return f"{value:.{digits}f}"


def format_plain(value: float) -> str:
    """A number as given, in its shortest spelling: a sweep value or a factor (64, 0.5)."""
    return f"{value:g}"


def format_fitted(value: float) -> str:
    """A model's fitted value (N*, a USL coefficient): 0.0123, 950, 12345, 1.2e+07."""
    if not math.isfinite(value):
        return "inf"
    if abs(value) < 1e-12:  # a bound the optimizer reached only up to rounding
        return "0"
    if 100 <= abs(value) < 1e7:
        return f"{value:.0f}"
    return f"{value:.3g}"


def format_p(value: float) -> str:
    """A p value as every table and sentence prints it: "0.022", "<0.001", "-" (untested)."""
    if not math.isfinite(value):
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


# ------------------------------------------------------------------ percentages


def format_pct(pct: float | None, digits: int | None = 0) -> str:
    """A share or level given in percent: "37%", "0.8%" (digits=1); digits=None: as
    given, shortest ("2.5%", "10%": a threshold the user set)."""
    if pct is None or _missing(pct):
        return "-"
    return f"{pct:g}%" if digits is None else f"{pct:.{digits}f}%"


def format_share(fraction: float | None, digits: int = 0) -> str:
    """A share given as a fraction (0.37), spelled as `format_pct`: "37%"."""
    return "-" if fraction is None else format_pct(100 * fraction, digits)


def format_change_pct(pct: float | None, digits: int | None = 0) -> str:
    """A signed change given in percent: "+12%", "-3.5%" (digits=1); digits=None: as
    given ("-12.5%", "+30%")."""
    if pct is None or _missing(pct):
        return "-"
    return f"{pct:+g}%" if digits is None else f"{pct:+.{digits}f}%"


def format_points(points: float | None, digits: int = 1) -> str:
    """A signed change of a share in percentage points: "+1.2" (a column or "points" says so)."""
    if points is None or _missing(points):
        return "-"
    return f"{points:+.{digits}f}"


# ------------------------------------------------------------------ bytes


def format_bytes(n_bytes: float) -> str:
    """A size in binary units: 512B, 16.0GiB."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    raise AssertionError("unreachable")


_BINARY_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_size(n_bytes: float) -> str:
    """A size as a spec writes it: format_bytes without a trailing .0 (16GiB, 27.5MiB)."""
    return re.sub(r"\.0(?=[A-Za-z])", "", format_bytes(n_bytes))


def format_size_exact(n_bytes: int) -> str:
    """A size a spec field holds: format_size when it reads back to the same bytes, else
    the largest unit that divides them (1200MiB, not 1.2GiB: a device size must stay a
    multiple of 512)."""
    short = format_size(n_bytes)
    shown = re.fullmatch(r"([\d.]+)([A-Za-z]+)", short)
    factor = dict(_BINARY_UNITS).get(shown.group(2), 1) if shown else 0
    if shown and float(shown.group(1)) * factor == n_bytes:
        return short
    return next((f"{n_bytes // f}{u}" for u, f in _BINARY_UNITS if n_bytes % f == 0), f"{n_bytes}B")


def format_bytes_per_s(value: float | None) -> str:
    """Bytes per second in decimal units: 602kB/s, 43.8MB/s, 2.34GB/s."""
    if value is None or _missing(value):
        return "-"
    if value >= 1e9:
        return f"{value / 1e9:.2f}GB/s"
    return f"{value / 1e6:.1f}MB/s" if value >= 1e6 else f"{value / 1e3:.0f}kB/s"


# ------------------------------------------------------------------ durations


def format_ns(value: float | None) -> str:
    """A duration in ns: whole microseconds below 1 ms, then ms, then s (500us, 1.20ms)."""
    if value is None or _missing(value):
        return "-"
    if value >= 1e9:
        return f"{value / 1e9:.2f}s"
    if value >= 1e6:
        return f"{value / 1e6:.2f}ms"
    return f"{value / 1e3:.0f}us"


def format_duration_s(seconds: float) -> str:
    """Wall times as people read them: 12.3s, 4m05s, 2h03m."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_tick_ms(value: float) -> str:
    """A plot axis tick in milliseconds, shortest: 50us, 0.5ms, 2s."""
    if value >= 1000:
        return f"{value / 1000:g}s"
    return f"{value:g}ms" if value >= 0.01 else f"{value * 1000:g}us"


# ------------------------------------------------------------------ by unit

_NS_PER = {"ns": 1.0, "ms": 1e6, "s": 1e9}
_COUNTS = frozenset({"IO/s", "calls", "events", "samples", "switches", "runs", "jobs", "pages"})


def format_metric(value: float | None, unit: str, *, word: bool = False) -> str:
    """A metric's value in the spelling of its catalog unit ("IO/s", "B/s", "ns", ...);
    `word`: operations per second say so ("31.2K IOPS"; other spellings carry their unit)."""
    if value is None or _missing(value):
        return "-"
    if unit == "IO/s" and word:
        return format_iops(value)
    if unit in _COUNTS:
        return format_count(value)
    if unit == "B/s":
        return format_bytes_per_s(value)
    if unit == "B":
        return format_bytes(value)
    if unit in _NS_PER:
        return format_ns(value * _NS_PER[unit])
    if unit == "%":
        return format_pct(value)
    if unit == "fraction":
        return format_share(value)
    if unit == "share":
        return format_share(value, 1)
    return format_number(value)
