"""Fold `perf script` call-graph text into counted stacks (the "folded" format).

One folded line is ``comm;outermost;...;leaf count``: root first, the way flame
graphs and `difffolded` read it. Folding is the one pass over what can be
millions of samples, so both entry points avoid per-frame regexes: each distinct
frame line is cleaned once (the same address repeats in almost every sample),
and the stream reader counts whole raw samples as bytes before looking inside
any of them, so only distinct samples are parsed.

Accepted input is what `perf script` prints with callchains, either the
collector's field set (``-F comm,pid,tid,ip,sym``: a ``comm pid/tid`` header)
or the default one (``comm tid [cpu] time: period event:`` header, frames with
``+0x`` offsets and ``(dso)``), one sample per paragraph.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import IO

UNKNOWN_FRAME = "[unknown]"
STREAM_CHUNK_BYTES = 16 << 20

# A header with "pid/tid" (the collector's format); greedy so a comm containing
# spaces keeps everything up to the last pid/tid token.
_PID_TID_HEADER = re.compile(r"^(.*\S)\s+-?\d+/-?\d+(?:\s|$)")
# The default header: the first bare number after the comm is the tid.
_TID_HEADER = re.compile(r"^(.*?\S)\s+-?\d+(?:\s|$)")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HEADER_CACHE_MAX = 100_000

Sample = tuple[str, tuple[str, ...]]  # (normalised comm, frames leaf first)


def normalise_comm(comm: str) -> str:
    """Merge per-instance kernel thread names so their stacks add up.

    `kworker/u8:3`, `kworker/1:1H` and `kworker/u8:4+loop2` all become
    `kworker/*`; `jbd2/loop3-8` becomes `jbd2/*`. Names without a slash (fio's
    threads are all `fio`; `dd`, `swapper`) are kept as they are.
    """
    slash = comm.find("/")
    if slash > 0:
        comm = comm[:slash] + "/*"
    return comm.replace(";", ":") if ";" in comm else comm


def parse_header_comm(line: str) -> str:
    """The raw comm of a sample header line, in either header format."""
    match = _PID_TID_HEADER.match(line) or _TID_HEADER.match(line)
    if match:
        return match.group(1).strip()
    return line.strip() or UNKNOWN_FRAME


def _is_hex(text: str) -> bool:
    return bool(text) and all(ch in _HEX_DIGITS for ch in text)


def _strip_dso(text: str) -> str:
    """Drop a trailing ` (dso)`, which may nest: `(/memfd:x (deleted))`.

    Only a group that starts like a dso (`[kernel.kallsyms]`, `/usr/lib/...`)
    is cut, never a C++ argument list.
    """
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                if i > 0 and text[i - 1] == " " and text.startswith(("[", "/"), i + 1):
                    return text[: i - 1].rstrip()
                return text
    return text


def clean_frame(line: str) -> str:
    """The bare symbol of one callchain line: no address, offset or dso.

    `\\tffffffff81650657 kmem_cache_alloc_noprof+0x27 ([kernel.kallsyms])`
    becomes `kmem_cache_alloc_noprof`; a line without a symbol is `[unknown]`
    (always the UNKNOWN_FRAME object, so callers may compare with `is`).
    """
    text = line.strip()
    addr, sep, rest = text.partition(" ")
    if not sep:
        if not addr or addr == UNKNOWN_FRAME or _is_hex(addr):
            return UNKNOWN_FRAME
        return addr.replace(";", ":")
    if not _is_hex(addr):
        rest = text  # no ip column: the whole line is the symbol
    rest = _strip_dso(rest.strip())
    plus = rest.rfind("+0x")
    if plus > 0 and _is_hex(rest[plus + 3 :]):
        rest = rest[:plus]
    if not rest or rest == UNKNOWN_FRAME:
        return UNKNOWN_FRAME
    return rest.replace(";", ":") if ";" in rest else rest


class _SampleParser:
    """Turns sample text into (comm, frames), caching per distinct line."""

    def __init__(self) -> None:
        self.frame_cache: dict[str, str] = {}
        self.header_cache: dict[str, str] = {}

    def comm_of(self, header: str) -> str:
        comm = self.header_cache.get(header)
        if comm is None:
            if len(self.header_cache) > _HEADER_CACHE_MAX:
                self.header_cache.clear()  # timestamped headers never repeat
            comm = self.header_cache[header] = normalise_comm(parse_header_comm(header))
        return comm

    def frames_of(self, frame_lines: Iterable[str]) -> tuple[str, ...]:
        """Frames leaf first; a run of `[unknown]` frames collapses into one.

        Unwinding through code without frame pointers yields a few garbage
        `[unknown]` frames; with addresses stripped their number says nothing.
        """
        cache = self.frame_cache
        frames: list[str] = []
        for line in frame_lines:
            sym = cache.get(line)
            if sym is None:
                if not line.strip():
                    continue
                sym = cache[line] = clean_frame(line)
            if sym is UNKNOWN_FRAME and frames and frames[-1] is UNKNOWN_FRAME:
                continue
            frames.append(sym)
        return tuple(frames)

    def parse_lines(self, lines: Iterable[str], comm: str | None = None) -> Iterator[Sample]:
        """Yield every sample in a stream of lines (any mix of line endings).

        `comm` is given when the first sample's header was already read.
        """
        body: list[str] = []
        for line in lines:
            first = line[:1]
            if first == "\t" or first == " ":
                if comm is not None:
                    body.append(line)
            elif first == "\n" or first == "\r" or first == "":
                if comm is not None:
                    yield comm, self.frames_of(body)
                    comm = None
                    body.clear()
            elif first != "#":
                if comm is not None:  # a header straight after a sample
                    yield comm, self.frames_of(body)
                    body.clear()
                comm = self.comm_of(line)
        if comm is not None:
            yield comm, self.frames_of(body)


def _to_folded(counts: dict[Sample, int]) -> dict[str, int]:
    folded: dict[str, int] = {}
    for (comm, frames), count in counts.items():
        stack = comm + ";" + ";".join(reversed(frames)) if frames else comm
        folded[stack] = folded.get(stack, 0) + count
    return folded


def fold_perf_script(lines: Iterable[str]) -> dict[str, int]:
    """Fold `perf script` lines into {"comm;root;...;leaf": samples}."""
    counts: dict[Sample, int] = {}
    get = counts.get
    for sample in _SampleParser().parse_lines(lines):
        counts[sample] = get(sample, 0) + 1
    return _to_folded(counts)


def _count_blocks(
    stream: IO[bytes], chunk_bytes: int, parser: _SampleParser, odd: list[bytes]
) -> dict[tuple[str, bytes], int]:
    """Count raw samples as (comm, frame bytes), in big chunks (the fast part).

    Blocks that do not look like `header\\n\\tframes` go to `odd` for the
    line parser, so nothing unusual is miscounted.
    """
    counts: dict[tuple[str, bytes], int] = {}
    header_comms: dict[bytes, str] = {}
    rest = b""
    while True:
        chunk = stream.read(chunk_bytes)
        blocks = (rest + chunk).split(b"\n\n") if chunk else [rest]
        rest = blocks.pop() if chunk else b""
        get = counts.get
        for block, n in Counter(blocks).items():
            header, _, body = block.partition(b"\n")
            if not header or header[:1] in b" \t#\n":
                odd.extend([block] * n)
                continue
            comm = header_comms.get(header)
            if comm is None:
                if len(header_comms) > _HEADER_CACHE_MAX:
                    header_comms.clear()
                text = header.decode("utf-8", "replace")
                comm = header_comms[header] = parser.comm_of(text)
            key = (comm, body)
            counts[key] = get(key, 0) + n
        if not chunk:
            return counts


def fold_perf_script_stream(
    stream: IO[bytes], *, chunk_bytes: int = STREAM_CHUNK_BYTES
) -> dict[str, int]:
    """Fold `perf script` output read from a binary stream (file or pipe).

    Same result as `fold_perf_script`, several times faster on big inputs:
    identical raw samples are counted as bytes and parsed once.
    """
    parser = _SampleParser()
    odd: list[bytes] = []
    raw_counts = _count_blocks(stream, chunk_bytes, parser, odd)
    counts: dict[Sample, int] = {}
    for (comm, body), n in raw_counts.items():
        lines = body.decode("utf-8", "replace").split("\n") if body else []
        if all(line[:1] in ("\t", " ", "") for line in lines):
            samples = [(comm, parser.frames_of(lines))]
        else:  # more than one sample without a blank line between them
            samples = list(parser.parse_lines(lines, comm))
        for sample in samples:
            counts[sample] = counts.get(sample, 0) + n
    for block in odd:
        lines = block.decode("utf-8", "replace").split("\n")
        for sample in parser.parse_lines(lines):
            counts[sample] = counts.get(sample, 0) + 1
    return _to_folded(counts)


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
