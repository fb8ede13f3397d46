"""Several fio jobs in one job file or command line, run one after another.

Reporters compare variants in one fio run: `[seq-read]`, `[rand-read]`, ... each with
`stonewall`, or `--name a --overwrite 1 --name b --overwrite 0 --stonewall`. fio runs
them in turn and prints each job's figures, so each job is a point of its own: the jobs
become one fio job each here, and jobs that differ from the first in one option become
a sweep of it (sweeps.py). Jobs that overlap in time (no stonewall) measure each other's
interference and stay whole; fslab refuses them, saying why.
"""

from __future__ import annotations

import shlex
from itertools import pairwise

from fslab.base.errors import UsageError
from fslab.reproduce import fiosyntax
from fslab.workload.fio import options as fio_mod

Pair = tuple[str, str | None]
_WAITS = frozenset({"stonewall", "wait_for_previous"})
_SAME_RUN = frozenset({"name", "description", "new_group", *_WAITS})  # not what a job varies


def split_job_file(text: str) -> list[str]:
    """One single-job job file per job when the file's jobs run one after another;
    [text] otherwise (one job, jobs at once, or a file fslab's parser refuses)."""
    try:
        sections = fio_mod.job_file_sections(text)
    except UsageError:
        return [text]
    first_job = next((i for i, s in enumerate(sections) if s.name != "global"), len(sections))
    if any(s.name == "global" for s in sections[first_job:]):
        return [text]  # a [global] between jobs applies to the later ones only: kept whole
    # the section headers name the jobs: a name= line (`name=${DST}.name` in [global])
    # is not where a job starts
    unnamed = [[p for p in s.pairs if fio_mod.canonical_name(p[0]) != "name"] for s in sections]
    pairs = [p for kept in unnamed[:first_job] for p in kept]
    for section, kept in zip(sections[first_job:], unnamed[first_job:], strict=True):
        pairs += [("name", section.name), *kept]
    if copies := _copies_at_once(pairs):
        return [_job_file(copies)]
    return [_job_file(job) for job in _one_after_another(pairs)] or [text]


def split_command_line(words: list[str]) -> list[str]:
    """One command line per job when `--name` starts several that run one after another;
    [] otherwise. `words` are fio's in `--opt=value` form (fiosyntax.long_words)."""
    program = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "fio"), -1)
    pairs, stray = fiosyntax.option_pairs(words[program + 1 :])
    head = words[: program + 1]
    return [
        shlex.join([*head, *(f"--{n}" if v is None else f"--{n}={v}" for n, v in job), *stray])
        for job in _one_after_another(pairs)
    ]


def one_option_apart(jobs: list[fio_mod.FioOptions]) -> tuple[str | None, list[int]]:
    """The option in which the second job differs from the first, if it is the only one
    (None otherwise), and the jobs that differ from the first in nothing else, the first
    and its repeats included. The option is set in both: one left to fio's default, or to
    an unset shell variable, is not a value the reporter chose."""
    same = [i for i, job in enumerate(jobs) if not _differing(jobs[0], job)]
    if len(jobs) < 2:
        return None, same
    differing = _differing(jobs[0], jobs[1])
    if len(differing) != 1:
        return None, same
    (axis,) = differing
    if any(option_value(job, axis) is None for job in jobs[:2]):
        return None, same
    return axis, [i for i, job in enumerate(jobs) if _differing(jobs[0], job) <= {axis}]


def distinct(jobs: list[fio_mod.FioOptions]) -> int:
    """How many different jobs these are, a job run again under another name counted once."""
    return len({_values(job) for job in jobs})


def _values(job: fio_mod.FioOptions) -> tuple[str, ...]:
    return tuple(
        f"{fio_mod.canonical_name(k)}={v}"
        for k, v in sorted(job.items())
        if fio_mod.canonical_name(k) not in _SAME_RUN
    )


def option_value(job: fio_mod.FioOptions, axis: str) -> str | None:
    """A job's value of an option named canonically (`output-format` is `output_format`)."""
    return next((v for k, v in job.items() if fio_mod.canonical_name(k) == axis), None)


def _differing(a: fio_mod.FioOptions, b: fio_mod.FioOptions) -> set[str]:
    names = {fio_mod.canonical_name(k) for k in (*a, *b)} - _SAME_RUN
    canon_a = {fio_mod.canonical_name(k): v for k, v in a.items()}
    canon_b = {fio_mod.canonical_name(k): v for k, v in b.items()}
    return {k for k in names if canon_a.get(k) != canon_b.get(k)}


def _split(pairs: list[Pair]) -> tuple[list[Pair], list[list[Pair]]]:
    """The options every job shares (before the first name=) and each job's own."""
    starts = [i for i, (n, _) in enumerate(pairs) if fio_mod.canonical_name(n) == "name"]
    if not starts:
        return pairs, []
    return pairs[: starts[0]], [pairs[a:b] for a, b in pairwise([*starts, len(pairs)])]


def _one_after_another(pairs: list[Pair]) -> list[list[Pair]]:
    """Each job's options (the shared ones first) when every job after the first waits
    for those before it; [] for one job or jobs that run at once."""
    head, jobs = _split(pairs)
    if len(jobs) < 2 or not (_waits(head) or all(_waits(job) for job in jobs[1:])):
        return []
    return [
        [p for p in (*head, *job) if fio_mod.canonical_name(p[0]) not in _WAITS] for job in jobs
    ]


def _copies_at_once(pairs: list[Pair]) -> list[Pair]:
    """Jobs that run at once with the same options under other names (`[j1]` ... `[j4]`,
    each with its own file) are what fio's numjobs makes: one job with numjobs times as
    many. [] unless there are several such jobs and nothing else."""
    head, jobs = _split(pairs)
    if len(jobs) < 2:
        return []
    options = [dict((*head, *job)) for job in jobs]
    if any(_differing(options[0], o) for o in options[1:]) or _waits(list(options[0].items())):
        return []
    each = option_value(options[0], "numjobs") or "1"
    if not each.isdigit():
        return []
    merged = {k: v for k, v in options[0].items() if fio_mod.canonical_name(k) != "numjobs"}
    return [*merged.items(), ("numjobs", str(int(each) * len(jobs)))]


def _waits(pairs: list[Pair]) -> bool:
    return any(
        fio_mod.canonical_name(n) in _WAITS and str(v).lower() not in ("0", "false")
        for n, v in pairs
    )


def _job_file(job: list[Pair]) -> str:
    name = next(v for n, v in job if fio_mod.canonical_name(n) == "name")
    lines = [f"[{name}]"]
    lines += [n if v is None else f"{n}={v}" for n, v in job if fio_mod.canonical_name(n) != "name"]
    return "\n".join(lines)
