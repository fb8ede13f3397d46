"""Folding real `perf script` captures (tests/data/perf_script_*.txt).

The fio capture is in the collector's field set (`comm pid/tid` headers, bare
symbols); the dd capture is perf script's default output (timestamps, `+0x`
offsets, dso names), so both parser paths run on real text.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from fslab.stacks.fold import (
    UNKNOWN_FRAME,
    clean_frame,
    fold_perf_script,
    fold_perf_script_stream,
    folded_to_text,
    normalise_comm,
    parse_folded,
)

CAPTURES = ["perf_script_fio_fsync.txt", "perf_script_dd_1m.txt"]
ADDRESS = re.compile(r"\b[0-9a-f]{8,16}\b")


def _read(data_dir: Path, name: str) -> str:
    return (data_dir / name).read_text()


def _header_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln and not ln[0].isspace()]


@pytest.fixture(params=CAPTURES)
def capture(request, data_dir) -> tuple[str, dict[str, int]]:
    text = _read(data_dir, request.param)
    return text, fold_perf_script(io.StringIO(text))


def test_counts_sum_to_number_of_samples(capture) -> None:
    text, folded = capture
    assert sum(folded.values()) == len(_header_lines(text)) > 1000


def test_no_addresses_offsets_or_dsos_left(capture) -> None:
    _, folded = capture
    for stack in folded:
        for frame in stack.split(";"):
            assert "+0x" not in frame, frame
            assert "kernel.kallsyms" not in frame, frame
            assert not ADDRESS.fullmatch(frame), frame


def test_thread_names_with_instance_numbers_are_merged(capture) -> None:
    text, folded = capture
    comms = {stack.split(";", 1)[0] for stack in folded}
    assert re.search(r"^kworker/\S+", text, re.M), "capture should have raw kworker names"
    assert "kworker/*" in comms
    for comm in comms:
        assert "/" not in comm or comm.endswith("/*"), comm


def test_jbd2_thread_merged_in_fsync_capture(data_dir) -> None:
    text = _read(data_dir, "perf_script_fio_fsync.txt")
    folded = fold_perf_script(io.StringIO(text))
    assert re.search(r"^jbd2/loop\d+-\d+ ", text, re.M)
    assert any(stack.startswith("jbd2/*;") for stack in folded)
    assert any(stack.startswith("fio;") for stack in folded)


@pytest.mark.parametrize(("name", "comm"), [(CAPTURES[0], "fio"), (CAPTURES[1], "dd")])
def test_syscall_entry_is_root_side_of_ext4(data_dir, name: str, comm: str) -> None:
    folded = fold_perf_script(io.StringIO(_read(data_dir, name)))
    checked = 0
    for stack in folded:
        frames = stack.split(";")
        ext4 = [i for i, f in enumerate(frames) if f.startswith("ext4_")]
        if frames[0] != comm or not ext4 or "entry_SYSCALL_64_after_hwframe" not in frames:
            continue
        assert frames.index("entry_SYSCALL_64_after_hwframe") < ext4[0], stack
        checked += 1
    assert checked > 0, f"no {comm} stack reaches ext4 through a syscall"


def test_unknown_runs_collapse(capture) -> None:
    _, folded = capture
    assert any(UNKNOWN_FRAME in stack for stack in folded)
    assert not any(f"{UNKNOWN_FRAME};{UNKNOWN_FRAME}" in stack for stack in folded)


@pytest.mark.parametrize("chunk_bytes", [4096, 1 << 20])
def test_stream_folding_matches_line_folding(capture, chunk_bytes: int) -> None:
    text, folded = capture
    stream = io.BytesIO(text.encode())
    assert fold_perf_script_stream(stream, chunk_bytes=chunk_bytes) == folded


def test_samples_not_separated_by_blank_lines(capture) -> None:
    """Headers alone delimit samples too: both folders agree on that."""
    text, folded = capture
    squeezed = text.replace("\n\n", "\n", 200)
    assert fold_perf_script(io.StringIO(squeezed)) == folded
    assert fold_perf_script_stream(io.BytesIO(squeezed.encode())) == folded


def test_lines_without_newlines_fold_the_same(capture) -> None:
    text, folded = capture
    assert fold_perf_script(text.splitlines()) == folded


def test_folded_text_round_trip(capture) -> None:
    _, folded = capture
    text = folded_to_text(folded)
    assert text.splitlines() == sorted(text.splitlines())
    assert parse_folded(text) == folded


def test_parse_folded_adds_repeats_and_skips_junk() -> None:
    text = "a;b 3\na;b 2\nnot a count line\n\nc;d;e 1\n"
    assert parse_folded(text) == {"a;b": 5, "c;d;e": 1}


def test_clean_frame_on_captured_lines(data_dir) -> None:
    """Each distinct frame line of the dd capture loses address, offset and dso."""
    text = _read(data_dir, "perf_script_dd_1m.txt")
    # a dso is `[name]` or a path; symbols may hold parentheses and spaces (C++)
    frame_re = re.compile(r"^\s+[0-9a-f]+ (.+?)(\+0x[0-9a-f]+)? \((\[[^\]]*\]|/.*)\)$")
    lines = {ln for ln in text.splitlines() if ln.startswith("\t")}
    assert len(lines) > 100
    for line in lines:
        match = frame_re.match(line)
        assert match, line
        assert clean_frame(line) == match.group(1)


def test_clean_frame_without_dso_on_captured_lines(data_dir) -> None:
    text = _read(data_dir, "perf_script_fio_fsync.txt")
    lines = {ln for ln in text.splitlines() if ln.startswith("\t")}
    for line in lines:
        expected = line.strip().split(" ", 1)[1]
        assert clean_frame(line) == expected.replace(";", ":")


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("kworker/u8:3", "kworker/*"),
        ("kworker/1:1H", "kworker/*"),
        ("kworker/u8:4+lo", "kworker/*"),
        ("jbd2/loop3-8", "jbd2/*"),
        ("ksoftirqd/0", "ksoftirqd/*"),
        ("fio", "fio"),
        ("dd", "dd"),
        ("swapper", "swapper"),
    ],
)
def test_normalise_comm(raw: str, normalised: str) -> None:
    assert normalise_comm(raw) == normalised
