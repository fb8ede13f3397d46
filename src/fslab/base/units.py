"""Sizes and durations as users write them ("16GiB", "40MiB", "4k", "30s"), parsed;
base/format.py spells them back."""

from __future__ import annotations

import math
import re

MIB = 1024**2
GIB = 1024**3

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_size_bytes(text: str | int) -> int:
    """Parse a size: plain bytes, or k/M/G/T with optional 'iB'/'B'.

    Like fio and mkfs, a bare suffix ("16k", "4M") means powers of 1024; an
    explicit "kB"/"MB" means powers of 1000.
    """
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"size must not be negative: {text}")
        return text
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (examples: 4096, 16k, 40MiB, 16GiB)")
    number, prefix, binary, byte_suffix = match.groups()
    decimal = bool(byte_suffix) and not binary and prefix != ""
    base = 1000 if decimal else 1024
    value = float(number) * base ** _POWERS[prefix.lower()]
    if not math.isfinite(value):  # thousands of digits: no size anything has
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ValueError(f"not a size: {shown!r} is too large")
    return int(value)


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration_s(text: str | int | float) -> float:
    """Parse a duration in seconds ("30", "30s", "2m", "500ms")."""
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"duration must not be negative: {text}")
        return float(text)
    match = _DURATION_RE.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (examples: 30, 30s, 2m)")
    number, unit = match.groups()
    scale = {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[unit]
    return float(number) * scale
