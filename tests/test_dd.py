"""dd argv and GNU dd summary parsing, on outputs captured from real dd runs."""

from __future__ import annotations

import json
import math

import pytest

from fslab.base.errors import FslabError, ToolError, UsageError
from fslab.workload.dd.argv import build_dd_argv
from fslab.workload.dd.parse import DdResult, parse_dd_output

# Verbatim from the report in docs/cases/ext4-cached-write-falloff.md (coreutils of 2014).
SEED_DD_STDERR = """\
10+0 records in
10+0 records out
10485760 bytes (10 MB) copied, 17.4307 s, 602 kB/s
"""


def stderr_of(data_dir, name: str) -> str:
    return (data_dir / f"{name}.stderr.txt").read_text()


def last_line_seconds(text: str) -> float:
    """Independent reading of the summary: '..., 0.0130484 s, 804 MB/s' on the last line."""
    return float(text.strip().splitlines()[-1].split(", ")[-2].removesuffix(" s"))


def test_cached_write(data_dir):
    text = stderr_of(data_dir, "dd_cached")
    result = parse_dd_output(text)
    assert result.bytes_copied == 10 * 1024 * 1024
    assert result.seconds == last_line_seconds(text) > 0
    assert result.bw_bytes_s == pytest.approx(10485760 / result.seconds)


def test_fsync_write(data_dir):
    text = stderr_of(data_dir, "dd_fsync")
    result = parse_dd_output(text)
    assert result.bytes_copied == 10485760
    assert result.seconds == last_line_seconds(text)


def test_progress_lines_are_not_the_summary(data_dir):
    text = stderr_of(data_dir, "dd_progress")
    assert text.count("copied") > 2  # progress lines look like the summary
    result = parse_dd_output(text)
    assert result.bytes_copied == 25000 * 4096
    assert result.seconds == last_line_seconds(text) > 1


def test_progress_lines_with_carriage_returns(data_dir):
    # On a terminal dd rewrites its progress line with \r; fslab.base.proc.run's text mode
    # turns those into \n, the parser accepts both.
    lines = stderr_of(data_dir, "dd_progress").split("\n")
    first_records = next(i for i, line in enumerate(lines) if "records in" in line)
    raw = "\r".join(lines[:first_records]) + "\n" + "\n".join(lines[first_records:])
    assert parse_dd_output(raw) == parse_dd_output(stderr_of(data_dir, "dd_progress"))


def test_seed_report_format():
    result = parse_dd_output(SEED_DD_STDERR)
    assert result == DdResult(bytes_copied=10485760, seconds=17.4307)
    assert result.bw_bytes_s == pytest.approx(601569, rel=1e-4)  # dd said 602 kB/s


def test_decimal_comma_and_exponent():
    assert parse_dd_output(SEED_DD_STDERR.replace("17.4307", "17,4307")).seconds == 17.4307
    assert parse_dd_output(SEED_DD_STDERR.replace("17.4307", "6.3e-05")).seconds == 6.3e-05


def test_enospc_is_an_error_even_with_a_summary(data_dir):
    text = stderr_of(data_dir, "dd_fail_enospc")
    assert "copied" in text
    with pytest.raises(ToolError, match="No space left on device") as info:
        parse_dd_output(text)
    assert info.value.stderr == text


def test_bad_operand_is_an_error(data_dir):
    with pytest.raises(ToolError, match="invalid number: 'ten'"):
        parse_dd_output(stderr_of(data_dir, "dd_fail_operand"))


def test_no_summary():
    with pytest.raises(FslabError, match=r"no dd summary line.*printed nothing"):
        parse_dd_output("")
    with pytest.raises(FslabError, match="no dd summary line"):
        parse_dd_output("10+0 records in\n10+0 records out\n")


def test_warnings_are_not_errors():
    text = "dd: warning: partial read (512 bytes); suggest iflag=fullblock\n" + SEED_DD_STDERR
    assert parse_dd_output(text).bytes_copied == 10485760


def test_rate():
    assert DdResult(bytes_copied=1000, seconds=2.0).bw_bytes_s == 500.0
    assert math.isnan(DdResult(bytes_copied=0, seconds=0.0).bw_bytes_s)


def test_build_argv():
    assert build_dd_argv(output_path="/mnt/test", bs="1M", count=10) == [
        "dd",
        "if=/dev/zero",
        "of=/mnt/test",
        "bs=1M",
        "count=10",
    ]
    assert build_dd_argv(
        output_path="/mnt/t", bs="4k", count=3, conv=["fsync", "notrunc"], oflag=["direct"]
    )[-2:] == ["conv=fsync,notrunc", "oflag=direct"]


def test_build_argv_matches_the_captured_commands(data_dir):
    manifest = json.loads((data_dir / "fio_dd_manifest.json").read_text())
    argv = manifest["dd_fsync"]["argv"]
    output_path = argv[2].removeprefix("of=")
    assert build_dd_argv(output_path=output_path, bs="1M", count=10, conv=["fsync"]) == argv


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bs": "1 M", "count": 1}, "bs"),
        ({"bs": "1M", "count": 0}, "count"),
        ({"bs": "1M", "count": True}, "count"),
        ({"bs": "1M", "count": 1, "conv": ["fsync,excl"]}, "conv"),
        ({"bs": "1M", "count": 1, "oflag": ["direct sync"]}, "oflag"),
    ],
)
def test_build_argv_refuses_bad_operands(kwargs, match):
    with pytest.raises(UsageError, match=match):
        build_dd_argv(output_path="/mnt/t", **kwargs)
