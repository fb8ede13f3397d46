"""The workload of a written spec: [workload], [sweep] and [run] from the report's.

A fio job keeps fio's own options, with the report's loops as sweeps, a
ladder of job counts up to the reporter's, and file sizes scaled to this
machine; several jobs that differ in one option become a sweep of it. dd
runs sustained (write + delete for the runtime). Each value the report
gives that fslab cannot run becomes a question with what was assumed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any

import tomlkit
from tomlkit.items import Table

from fslab.base.format import format_size, format_size_exact
from fslab.base.units import MIB, parse_size_bytes
from fslab.reproduce import fiojobs, sweeps
from fslab.reproduce.configwrite import Config
from fslab.reproduce.ddtext import writes_of
from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import DdFact, FioFact, QuestionFact
from fslab.reproduce.scale import (
    DEFAULT_RAMP_S,
    QUICK_CROSS_POINTS,
    QUICK_RAMP_S,
    QUICK_REPEAT,
    QUICK_RUNTIME_S,
    file_budget_bytes,
    fio_size_text,
    leave_free_bytes,
    numjobs_ladder,
    per_job_size,
    quick_numjobs,
    quick_points,
    runtime_s,
)
from fslab.reproduce.setupwrite import replay
from fslab.reproduce.tomlitems import add, toml_value, wrap
from fslab.workload.fio import options as fio_mod
from fslab.workload.fio import trust as fio_trust
from fslab.workload.fio.plan import fio_seconds
from fslab.workload.fio.spec import MAX_NUMJOBS

DD_MAX_BS = 1024**3  # spec.DdWorkload's bounds
DD_MAX_COUNT = 10_000_000


def workload_tables(
    draft: Draft, target_bytes: int, configs: list[Config]
) -> tuple[Table, Table, Table, dict]:
    if draft.facts.fio:
        return _fio(draft, target_bytes)
    return _dd(draft, configs, target_bytes)


def _fio(draft: Draft, target_bytes: int) -> tuple[Table, Table, Table, dict]:
    chosen, swept = _one_fio_job(draft)
    options = dict(chosen.options)
    _host_cpus(draft, chosen, options)
    sweep = tomlkit.table()
    quick: dict[str, Any] = {}
    listed = [(a, v, chosen.source.number) for a, v in [*chosen.sweeps, *swept.items()]]
    for axis, values, said_at in [*listed, *_experiment_sweeps(draft, chosen)]:
        if axis in sweep:
            continue
        if axis in ("size", "filesize"):
            values = _scaled_sizes(draft, values, target_bytes)
        if axis == "numjobs":
            values = _job_counts(draft, chosen, [str(v) for v in values])
            if not values:
                options.pop(axis, None)
                continue
        sweep.add(tomlkit.comment(f"the reporter ran these one by one (line {said_at})"))
        points = [toml_value(v) for v in values]
        sweep[axis] = points
        # --quick shows the report's main variable: an inner loop's axis keeps one value,
        # unless the loops cross in a few points (either may be the report's variable)
        others = [len(quick.get(f"sweep.{a}", sweep[a])) for a in sweep if a != axis]
        crossed = math.prod(others) * len(points) <= QUICK_CROSS_POINTS
        picked = quick_points(points) if len(sweep) == 1 else points if crossed else points[:1]
        if picked != points:
            quick[f"sweep.{axis}"] = picked
        options.pop(axis, None)
    jobs_text = options.get("numjobs") or "1"
    counted = _job_counts(draft, chosen, [jobs_text])
    if not counted:
        options.pop("numjobs")
        jobs_text = "1"
    elif counted[0] != jobs_text:
        jobs_text = options["numjobs"] = counted[0]
    jobs_max = max([int(v) for v in sweep.get("numjobs", [])] or [int(jobs_text)])
    if "numjobs" not in sweep and int(jobs_text) > 1:
        ladder = numjobs_ladder(int(jobs_text))
        sweep.add(
            tomlkit.comment(
                f"1 up to the reporter's {jobs_text} jobs (line "
                f"{chosen.source.number}), to show where throughput falls off"
            )
        )
        sweep["numjobs"] = ladder
        options.pop("numjobs")
        draft.reported_point["numjobs"] = int(jobs_text)
        # --quick shows the report's own variable where it has one, at the reporter's count
        reporters = len(sweep) > 1
        quick["sweep.numjobs"] = [ladder[-1]] if reporters else quick_numjobs(ladder)
    workload = tomlkit.table()
    workload["kind"] = "fio"
    for line in wrap(
        f"the report's fio {chosen.form} (line {chosen.source.number}); "
        f"fio's own options, with these changes: " + ("; ".join(chosen.notes) or "none")
    ):
        workload.add(tomlkit.comment(line))
    table = tomlkit.table()
    swept_size = "size" in sweep or "filesize" in sweep
    comments = {} if swept_size else _scale_files(draft, options, jobs_max, target_bytes)
    by_size = "time_based" not in options  # fio stops when the job's size is written
    if by_size:
        options["time_based"] = "0"
        comments["time_based"] = (
            "the report's job ends when its size is written; fslab's runtime only caps it"
        )
    for key, value in options.items():
        typed = str(value) if key in _FIO_NAMES else toml_value(value)
        add(table, key, True if value is None else typed, comments.get(key, ""))
    workload["options"] = table
    run = tomlkit.table()
    reported_runtime = fio_seconds(options.get("runtime")) or None
    scaled = runtime_s(reported_runtime)
    add(run, "runtime", scaled.value, scaled.comment)
    ramp = fio_seconds(options.get("ramp_time"))
    if ramp:
        add(run, "ramp", f"{ramp:g}s", "the reporter's ramp_time")
    elif by_size:
        add(run, "ramp", "0s", "none: the job's first seconds are in the report's figure")
    else:
        add(
            run,
            "ramp",
            f"{DEFAULT_RAMP_S}s",
            "fslab's warm-up, left out of the figures (the report had none)",
        )
    quick["run.runtime"] = f"{QUICK_RUNTIME_S}s"
    quick["run.ramp"] = f"{0 if by_size and not ramp else QUICK_RAMP_S}s"
    quick["run.repeat"] = QUICK_REPEAT
    return workload, sweep, run, quick


_FIO_NAMES = frozenset({"name", "filename", "filename_format", "description"})
"""fio options that name something: a name of digits (`-filename=1`) stays a string."""


def _experiment_sweeps(draft: Draft, job: FioFact) -> list[tuple[str, tuple[str, ...], int]]:
    """What the reporter varied beyond a loop (an edit between runs, values the figures are
    listed under), where it is a fio option that passes the allowlist."""
    found = []
    for fact in draft.facts.sweeps:
        written = fact.axis in dict(job.written) or fact.axis in sweeps.IMPLIED_FIO_AXES
        if not written or fio_mod.is_owned(fact.axis):
            continue
        if all(fio_trust.judge(fact.axis, v) is None and "$" not in v for v in fact.values):
            found.append((fact.axis, fact.values, fact.source.number))
    return found


def _scaled_sizes(draft: Draft, values: Sequence[str], target_bytes: int) -> list[str]:
    """File sizes the reporter swept, in proportion, the largest fitting this machine."""
    try:
        sizes = [parse_size_bytes(v) for v in values]
    except ValueError:
        return list(values)
    budget = file_budget_bytes(target_bytes, draft.host)
    if not sizes or max(sizes) <= budget:
        return list(values)
    factor = budget / max(sizes)
    scaled = [fio_size_text(max(1, int(size * factor) // 1024**2) * 1024**2) for size in sizes]
    draft.questions.append(
        QuestionFact(
            "fio size sweep",
            f"the report's sizes {', '.join(values)} do not fit this machine",
            f"{', '.join(scaled)}: scaled in proportion, the largest filling the file budget",
        )
    )
    return scaled


def _host_cpus(draft: Draft, job: FioFact, options: dict[str, Any]) -> None:
    """Options the report set to its machine's CPU count take this host's."""
    for name in job.host_cpus:
        options[name] = draft.host_cpus(f"fio --{name}", f"--{name}={options[name]}", job.source)


def _job_counts(draft: Draft, job: FioFact, values: list[str]) -> list[str]:
    """The report's job counts fio can run: [] (asked) if one is not a count, those
    above fio's limit left out (asked), the limit itself if none is left."""
    if not all(v.isdigit() and int(v) >= 1 for v in values):
        _not_a_count(draft, job, "numjobs", ", ".join(values))
        return []
    kept = [v for v in values if int(v) <= MAX_NUMJOBS]
    if len(kept) < len(values):
        over = ", ".join(v for v in values if int(v) > MAX_NUMJOBS)
        draft.questions.append(
            QuestionFact(
                "fio --numjobs",
                f"the report's --numjobs={over} is more than fio runs ({MAX_NUMJOBS}, its "
                "compiled-in limit)",
                ", ".join(kept) if kept else str(MAX_NUMJOBS),
                job.source,
            )
        )
    return kept or [str(MAX_NUMJOBS)]


def _not_a_count(draft: Draft, job: FioFact, name: str, value: str) -> None:
    draft.questions.append(
        QuestionFact(
            f"fio --{name}",
            f"the report's --{name}={value} is not a count of jobs",
            "left out: fslab's ladder of job counts",
            job.source,
        )
    )


def _one_fio_job(draft: Draft) -> tuple[FioFact, dict[str, list[str]]]:
    """The report's fio job; several that differ in one option become a sweep of it."""
    jobs = draft.facts.fio
    first = jobs[0]
    jobs_options = [job.options for job in jobs]
    axis, kept = fiojobs.one_option_apart(jobs_options)
    others = [job for i, job in enumerate(jobs) if i not in kept]
    if others:
        numbers = list(dict.fromkeys(str(j.source.number) for j in others))
        these = (
            f"the one at line {numbers[0]} differs"
            if len(numbers) == 1
            else f"the ones at lines {', '.join(numbers)} differ"
        )
        swept = f", swept over {axis}" if axis else ""
        draft.questions.append(
            QuestionFact(
                "fio workload",
                f"the report shows {fiojobs.distinct(jobs_options)} different fio jobs; {these} "
                f"from line {first.source.number}'s in more than " + (axis or "one option"),
                f"line {first.source.number}'s job{swept}; run the others as their own specs",
                first.source,
            )
        )
    if axis is None:
        return first, {}
    return first, {
        axis: list(dict.fromkeys(str(fiojobs.option_value(jobs[i].options, axis)) for i in kept))
    }


def _scale_files(
    draft: Draft, options: dict[str, Any], jobs: int, target_bytes: int
) -> dict[str, str]:
    key = "filesize" if "filesize" in options else "size"
    text = options.get(key)
    block = _block_bytes(options)
    try:
        reported = parse_size_bytes(str(text)) if text and "%" not in str(text) else None
    except ValueError:
        return {}
    if text and reported is None:
        return {}
    if reported is None and (made := _made_by_setup(draft, str(options.get("filename") or ""))):
        return {"filename": f"the report gives no file size: fio sizes the job by {made}"}
    scaled = per_job_size(reported, jobs, file_budget_bytes(target_bytes, draft.host), block)
    if scaled is None:
        return {}
    options[key] = fio_size_text(int(scaled.value))
    return {key: scaled.comment}


def _made_by_setup(draft: Draft, filename: str) -> str:
    """The setup step that makes the job's file (fio then takes its size), or ""."""
    for fact in draft.facts.setup:
        for table in replay(fact)[0]:
            if filename and table["kind"] == "file" and table["path"] == filename:
                return f"the file line {fact.source.number} makes"
    return ""


def _dd_amount(draft: Draft, run: DdFact) -> tuple[str, int]:
    """The report's dd bs and count as fslab runs them (the first of `count=10/100`, which
    the sweep takes); another value is asked about."""
    bs, count = run.operand("bs", "512"), run.operand("count", "1")
    bs, count = bs.split("/")[0] or bs, count.split("/")[0] or count
    if not run.operand("count") and run.bytes_copied:  # no count=: stopped by hand (^C)
        with contextlib.suppress(ValueError):
            count = str(max(1, run.bytes_copied // parse_size_bytes(bs)))
            draft.questions.append(
                QuestionFact(
                    "dd count",
                    "the report's dd has no count= (it ran until stopped); its output "
                    f"copied {format_size(run.bytes_copied)}",
                    f"count={count}, the blocks it copied",
                    run.source,
                )
            )
    if "count_bytes" in run.operand("iflag", "").split(",") and count.isdigit():
        with contextlib.suppress(ValueError):  # count is bytes: the blocks they make
            count = str(max(1, -(-int(count) // parse_size_bytes(bs))))
    try:
        bs_ok = 0 < parse_size_bytes(bs) <= DD_MAX_BS
    except ValueError:
        bs_ok = False
    if not bs_ok:
        draft.questions.append(
            QuestionFact(
                "dd bs",
                f"the report's dd bs={bs} is not a block size fslab runs (1 byte to 1GiB)",
                "bs=1M",
                run.source,
            )
        )
        bs = "1M"
    if not (count.isdigit() and 0 < int(count) <= DD_MAX_COUNT):
        draft.questions.append(
            QuestionFact(
                "dd count",
                f"the report's dd count={count} is not a count fslab runs (1 to {DD_MAX_COUNT:,})",
                "count=1",
                run.source,
            )
        )
        count = "1"
    return bs, int(count)


# dd's operands (GNU coreutils 9.1)
_DD_OPERANDS = frozenset(
    {"if", "of", "bs", "ibs", "obs", "cbs", "count", "skip", "seek", "iseek", "oseek"}
    | {"conv", "iflag", "oflag", "status"}
)


def _dd_left_out(draft: Draft, run: DdFact) -> None:
    """A question for each operand of the report's dd that dd does not take: a misspelt
    one (`oflags=dsync`) dd itself would refuse, so the reporter's figures did not come
    from that command as written."""
    for name, value in run.operands:
        if name in _DD_OPERANDS:
            continue
        draft.questions.append(
            QuestionFact(
                f"dd {name}",
                f"the report's dd '{name}={value}' is not an operand dd takes (dd answers "
                f'"unrecognized operand"), so the run it quotes was not this command',
                "left out of [workload]",
                run.source,
            )
        )


def _dd_synced(draft: Draft, run: DdFact, workload: Table) -> None:
    """A sync timed after the dd is in the reporter's figure: conv=fsync puts the same
    flush inside fslab's dd (unless the dd already writes through)."""
    flags = {*run.operand("conv").split(","), *run.operand("oflag").split(",")}
    if not run.synced or flags & {"fsync", "fdatasync", "sync", "dsync", "direct"}:
        return
    workload["conv"] = ",".join(f for f in (workload.get("conv", ""), "fsync") if f)
    draft.questions.append(
        QuestionFact(
            "dd conv",
            "the report times a sync after its dd, so its figure includes the flush",
            "conv=fsync: fslab's dd flushes before it reports",
            run.source,
        )
    )


def _dd_nocreat(draft: Draft, run: DdFact, workload: Table) -> None:
    """conv=nocreat writes into a file made before dd; fslab's dd makes its own file each
    run (and removes it), where nocreat would make every run fail."""
    flags = run.operand("conv").split(",")
    if "nocreat" not in flags:
        return
    kept = ",".join(f for f in flags if f and f != "nocreat")
    if kept:
        workload["conv"] = kept
    else:
        del workload["conv"]
    draft.questions.append(
        QuestionFact(
            "dd conv",
            "the report's dd conv=nocreat writes into a file made before it; fslab's dd "
            "writes its own new file each run, which nocreat would refuse",
            f"conv={kept}" if kept else "no conv",
            run.source,
        )
    )


def _dd(draft: Draft, configs: list[Config], target_bytes: int) -> tuple[Table, Table, Table, dict]:
    runs = draft.facts.dd
    first = runs[0]
    if first.read:
        return _dd_read(draft, first, target_bytes)
    workload = _dd_table(first)
    bs, count = _dd_amount(draft, first)
    budget = file_budget_bytes(target_bytes, draft.host)
    fits = budget // parse_size_bytes(bs)
    if count > fits >= 1:  # the one budget fio's files get: half the device and of memory
        draft.questions.append(
            QuestionFact(
                "dd count",
                f"the report's dd writes {format_size(parse_size_bytes(bs) * count)}, more "
                f"than fslab's {format_size(budget)} for files on a {format_size(target_bytes)} "
                "scratch device (half of it, and of memory)",
                f"count={fits} ({format_size(parse_size_bytes(bs) * fits)})",
                first.source,
            )
        )
        count = fits
    workload["bs"] = bs
    workload["count"] = count
    for operand in ("conv", "oflag"):
        if first.operand(operand):
            workload[operand] = first.operand(operand)
    _dd_nocreat(draft, first, workload)
    _dd_synced(draft, first, workload)
    _dd_left_out(draft, first)
    others = {(r.operand("bs"), r.operand("count")) for r in runs[1:]}
    others.discard((first.operand("bs"), first.operand("count")))
    if others:
        draft.questions.append(
            QuestionFact(
                "dd",
                "the report's dd runs write different amounts ("
                + ", ".join(
                    f"line {r.source.number}: bs={r.operand('bs')} count={r.operand('count')}"
                    for r in runs
                )
                + ")",
                f"every configuration runs the first: bs={first.operand('bs')} count={count}",
                first.source,
            )
        )
    add(
        workload,
        "mode",
        "sustained",
        "one dd takes milliseconds here; fslab repeats it "
        "(write + delete) for the runtime, for a stable figure",
    )
    sweep = tomlkit.table()
    listed = next((f for f in draft.facts.sweeps if f.source == first.source), None)
    if listed is not None and listed.axis in ("count", "bs"):
        add(
            sweep,
            listed.axis,
            [int(v) if v.isdigit() else v for v in listed.values],
            f"the report's dd lists each (line {listed.source.number})",
        )
    written = parse_size_bytes(bs) * count
    for lever in draft.facts.levers:
        if lever.lever == "free-space" and any(c.type == "ext4" for c in configs):
            leave = leave_free_bytes(written)
            for line in wrap(
                f'the report\'s analysis names free space ("{lever.text}", line '
                f"{lever.source.number}): each point runs on a fresh filesystem "
                f"and on one pre-filled to leave {format_size(leave)} free "
                f"(4x what one dd writes, at least 64 MiB)"
            ):
                sweep.add(tomlkit.comment(line))
            sweep["fill_leave_free"] = ["", format_size_exact(leave)]
            draft.reported_point["fill_leave_free"] = ""
    run = tomlkit.table()
    add(run, "runtime", "10s", "sustained dd for 10 s per point")
    return workload, sweep, run, {"run.runtime": "3s", "run.repeat": QUICK_REPEAT}


def _dd_table(run: DdFact, said: str = "") -> Table:
    """[workload] for dd, its first comment the report's dd as written."""
    workload = tomlkit.table()
    workload["kind"] = "dd"
    operands = " ".join("=".join(o) for o in run.operands)
    workload.add(tomlkit.comment(f"the report's dd (line {run.source.number}): {operands}{said}"))
    return workload


def _dd_read(draft: Draft, first: DdFact, target_bytes: int) -> tuple[Table, Table, Table, dict]:
    """A dd read of a file: fslab writes the file (as large as the report's, scaled to fit)
    and reads it whole from a cold cache at each block size the report read it with."""
    name = first.operand("if")
    writes = writes_of(draft.facts.dd, name)
    reported, said = first.bytes_copied, f"the bytes line {first.source.number}'s dd read"
    if writes:
        with contextlib.suppress(ValueError):
            made = writes[0]
            reported = parse_size_bytes(made.operand("bs", "512")) * int(made.operand("count"))
            amount = f"{made.operand('bs')} x {made.operand('count')}"
            said = f"the file line {made.source.number} wrote ({amount})"
    budget = file_budget_bytes(target_bytes, draft.host)
    size = min(reported or budget, budget) // MIB * MIB or MIB
    workload = _dd_table(first, f"; fslab writes {name} itself")
    workload["read"] = True
    bs, _ = _dd_amount(draft, first)
    swept = next((f for f in draft.facts.sweeps if f.axis == "bs"), None)
    if swept is None:
        workload["bs"] = bs
    why = (
        f"{said}; scaled to {format_size(size)} (half the device and of memory): fslab drops "
        "its cached pages before every read instead of outgrowing memory"
        if reported and reported > size
        else said
    )
    add(workload, "size", format_size_exact(size), why if reported else "half the device")
    if first.operand("iflag"):
        workload["iflag"] = first.operand("iflag")
    add(workload, "mode", "sustained", "read again (cold) for the runtime, for a stable figure")
    sweep = tomlkit.table()
    quick: dict[str, Any] = {"run.runtime": "3s", "run.repeat": QUICK_REPEAT}
    if swept is not None:
        sweep.add(
            tomlkit.comment(f"the reporter ran these one by one (line {swept.source.number})")
        )
        sweep["bs"] = list(swept.values)
        if (picked := quick_points(list(swept.values))) != list(swept.values):
            quick["sweep.bs"] = picked
    run = tomlkit.table()
    add(run, "runtime", "10s", "sustained dd for 10 s per point")
    return workload, sweep, run, quick


def _block_bytes(options: dict[str, Any]) -> int:
    text = str(options.get("bs") or options.get("blocksize") or "4k").split(",")[0].split("-")[-1]
    try:
        size = parse_size_bytes(text)
    except ValueError:
        return 4096
    return size if size > 0 else 4096  # bs=0 is fio's error to report, not a size to divide by
