"""Fold `perf script` call-graph text into counted stacks (the "folded" format).

One folded line is ``comm;outermost;...;leaf count``: root first, the way flame
graphs and `difffolded` read it. Folding is the only pass over what can be
millions of samples, so it streams lines, strips each distinct frame line once
(a cache keyed by the raw line, since the same address repeats in almost every
sample) and counts stacks as tuples of interned strings before joining them.

Accepted input is what `perf script` prints with callchains, either the
collector's field set (``-F comm,pid,tid,ip,sym``: a ``comm pid/tid`` header)
or the default one (``comm tid [cpu] time: period event:`` header, frames with
``+0x`` offsets and ``(dso)``), one sample per paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

UNKNOWN_FRAME = "[unknown]"

# A header with "pid/tid" (the collector's format); greedy so a comm containing
# spaces keeps everything up to the last pid/tid token.
_PID_TID_HEADER = re.compile(r"^(.*\S)\s+-?\d+/-?\d+(?:\s|$)")
# The default header: the first bare number after the comm is the tid.
_TID_HEADER = re.compile(r"^(.*?\S)\s+-?\d+(?:\s|$)")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HEADER_CACHE_MAX = 100_000


def normalise_comm(comm: str) -> str:
    """Merge per-instance kernel thread names so stacks add up across them.

    `kworker/u8:3`, `kworker/1:1H` and `kworker/u8:4+loop2` all become
    `kworker/*`; `jbd2/loop3-8` becomes `jbd2/*`. Names without a slash (fio's
    threads are all `fio`, `dd`, `swapper`) are kept as they are.
    """
    slash = comm.find("/")
    if slash > 0:
        return comm[:slash] + "/*"
    return comm.replace(";", ":") if ";" in comm else comm


def parse_header_comm(line: str) -> str:
    """The (raw) comm of a sample header line, in either header format."""
    match = _PID_TID_HEADER.match(line) or _TID_HEADER.match(line)
    if match:
        return match.group(1)
    return line.strip() or "[unknown]"


def _is_hex(text: str) -> bool:
    return bool(text) and all(ch in _HEX_DIGITS for ch in text)


def clean_frame(line: str) -> str:
    """The bare symbol of one callchain line: no address, offset or dso.

    `\\tffffffff81650657 kmem_cache_alloc_noprof+0x27 ([kernel.kallsyms])`
    becomes `kmem_cache_alloc_noprof`; a line with no symbol is `[unknown]`.
    """
    text = line.strip()
    addr, sep, rest = text.partition(" ")
    if not sep:
        if not addr or addr == UNKNOWN_FRAME or _is_hex(addr):
            return UNKNOWN_FRAME
        return addr.replace(";", ":")
    if not _is_hex(addr):
        rest = text  # no ip column: the whole line is the symbol
    rest = rest.strip()
    if rest.endswith(")"):
        cut = rest.rfind(" (")
        # Only a dso in parentheses is cut, never C++ argument lists.
        if cut >= 0 and rest.startswith(("[", "/"), cut + 2):
            rest = rest[:cut].rstrip()
    plus = rest.rfind("+0x")
    if plus > 0 and _is_hex(rest[plus + 3 :]):
        rest = rest[:plus]
    if not rest or rest == UNKNOWN_FRAME:
        return UNKNOWN_FRAME
    return rest.replace(";", ":") if ";" in rest else rest


def iter_samples(lines: Iterable[str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Yield (normalised comm, frames leaf first) for every sample.

    Consecutive `[unknown]` frames (broken frame-pointer unwinds in user code)
    collapse into one: addresses are gone, so their number says nothing.
    """
    frame_cache: dict[str, str] = {}
    header_cache: dict[str, str] = {}
    comm: str | None = None
    frames: list[str] = []
    for line in lines:
        first = line[:1]
        if first == "\t" or first == " ":
            if comm is None:
                continue
            sym = frame_cache.get(line)
            if sym is None:
                sym = frame_cache[line] = clean_frame(line)
            if sym is UNKNOWN_FRAME and frames and frames[-1] is UNKNOWN_FRAME:
                continue
            frames.append(sym)
        elif first == "\n" or first == "\r" or first == "":
            if comm is not None:
                yield comm, tuple(frames)
                comm = None
                frames.clear()
        elif first == "#":
            continue
        else:
            if comm is not None:  # a header straight after a sample
                yield comm, tuple(frames)
                frames.clear()
            comm = header_cache.get(line)
            if comm is None:
                if len(header_cache) > _HEADER_CACHE_MAX:
                    header_cache.clear()  # timestamped headers never repeat
                comm = header_cache[line] = normalise_comm(parse_header_comm(line))
    if comm is not None:
        yield comm, tuple(frames)


def fold_perf_script(lines: Iterable[str]) -> dict[str, int]:
    """Fold `perf script` lines into {"comm;root;...;leaf": samples}."""
    counts: dict[tuple[str, tuple[str, ...]], int] = {}
    get = counts.get
    for key in iter_samples(lines):
        counts[key] = get(key, 0) + 1
    folded: dict[str, int] = {}
    for (comm, frames), count in counts.items():
        stack = comm + ";" + ";".join(reversed(frames)) if frames else comm
        folded[stack] = folded.get(stack, 0) + count
    return folded


def folded_to_text(folded: dict[str, int]) -> str:
    """Folded stacks as text, one `stack count` line each, sorted by stack."""
    return "".join(f"{stack} {count}\n" for stack, count in sorted(folded.items()))


def parse_folded(text: str) -> dict[str, int]:
    """Read folded text back; repeated stacks add up, malformed lines are skipped."""
    folded: dict[str, int] = {}
    for line in text.splitlines():
        stack, sep, count_text = line.rstrip().rpartition(" ")
        if not sep or not stack or not count_text.isdigit():
            continue
        folded[stack] = folded.get(stack, 0) + int(count_text)
    return folded
