"""fio's command-line syntax as people type it, read into the one form fslab imports.

fio takes `--opt=value`, `--opt value`, `-opt=value` and `-opt value` alike
(getopt_long_only), and reporters use all four: `fio -name write-bandwidth
-rw=write -bs=1024Ki -iodepth 1`. This module turns every spelling into
`--opt=value` words (and bare `--flag`s) before fslab's own fio parser reads
them; it never decides what an option may do (fio_trust does that).
"""

from __future__ import annotations

import re

from fslab.workload.fio import options as fio_mod

# fio options that take no value (FIO_OPT_STR_SET, and booleans written bare): a word
# after one of them is not its value.
FLAGS = frozenset(
    (
        *"""thread time_based group_reporting norandommap randrepeat allrandrepeat
    unified_rw_reporting stonewall wait_for_previous new_group exitall exitall_on_error
    create_serialize create_fsync create_on_open create_only allow_file_create
    allow_mounted_write end_fsync fsync_on_close pre_read invalidate overwrite
    refill_buffers scramble_buffers zero_buffers sync direct buffered atomic file_append
    fill_device fill_fs do_verify verify_only verify_dump verify_fatal gtod_reduce
    disable_lat disable_clat disable_slat disable_bw_measurement clat_percentiles
    lat_percentiles slat_percentiles per_job_logs log_offset log_compression_store
    unique_filename disk_util stats lockmem_on_open experimental_verify""".split(),  # noqa: SIM905
        "eta_newline",
        "minimal",
        "append-terse",
        "parse-only",
        "showcmd",
    )
)

_OPTION_RE = re.compile(r"^--?([A-Za-z][A-Za-z0-9_.-]*)(?:=(.*))?$", re.S)


def option_pairs(words: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """fio's options in any spelling as (name, value) pairs, and the words that are not
    options (a job file named, a stray word), in order."""
    pairs: list[tuple[str, str | None]] = []
    stray: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        match = _OPTION_RE.match(word)
        if match is None:
            stray.append(word)
            index += 1
            continue
        name, value = match.group(1), match.group(2)
        following = words[index + 1] if index + 1 < len(words) else None
        if (
            value is None
            and following is not None
            and not following.startswith("-")
            and fio_mod.canonical_name(name) not in FLAGS
            and not following.endswith((".fio", ".job", ".ini"))
        ):
            value = following
            index += 1
        pairs.append((name, value))
        index += 1
    return pairs, stray


def long_words(words: list[str]) -> list[str]:
    """The options as `--opt=value` words (and bare `--flag`s), strays kept in place."""
    pairs, stray = option_pairs(words)
    return [f"--{n}" if v is None else f"--{n}={v}" for n, v in pairs] + stray


def single_dash(text: str) -> bool:
    """Whether a fio command spells its options with one dash (`fio -name x -rw=write`)."""
    return re.search(r"(?:^|\s)fio\s+-[A-Za-z]", text) is not None
