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

# fio options that never take the next word as their value: the job options fio declares
# FIO_OPT_STR_SET (getopt's optional_argument: `--thread 8` is thread, then a stray 8) and
# the program's own no-argument switches. Every other option, bools included, takes the
# next word (`--overwrite 1`, `--sync dsync`), as getopt_long_only does.
FLAGS = frozenset(
    (
        *"""thread time_based group_reporting norandommap stonewall wait_for_previous
    new_group exitall exitall_on_error refill_buffers zero_buffers verify_only bs_unaligned
    blocksize_unaligned""".split(),  # noqa: SIM905
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
    return re.search(r"(?:^|[\s/])fio\s+-[A-Za-z]", text) is not None
