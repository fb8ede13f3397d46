"""A benchmark other than fio and dd in a written spec, and the report's setup steps.

A report's fs_mark, sysbench fileio or dbench command becomes the benchmark's
own [workload] fields through its `from_report` (workload/<tool>/report.py):
the option spellings and the allowlist are the tool's knowledge and live with
it, beside the argv it builds; what is scaled to this machine (a ladder of
threads or clients up to the reporter's count, files that fit the RAM image,
the runtime) is decided here, for every tool alike, with the rules of
reproduce/scale.py. Each option left out becomes a question naming the line.
A report's shell command becomes a `command` workload written with
`allow_commands = false`: a proposal `fslab run` refuses until the reader opts
in. A tool no machine fslab runs on has (aim7, filebench) is refused with its
closest runnable stand-in, commented, never put in its place. Setup steps have
no place in a spec yet: they are listed as a commented `# setup:` block with a
question, and never run.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import tomlkit
from pydantic import ValidationError
from tomlkit.items import Table

from fslab.base.errors import UsageError
from fslab.base.format import format_size
from fslab.base.units import parse_size_bytes
from fslab.reproduce import shell, sweeps
from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import QuestionFact, ToolWorkload
from fslab.reproduce.scale import (
    MIB,
    QUICK_REPEAT,
    QUICK_RUNTIME_S,
    file_budget_bytes,
    numjobs_ladder,
    quick_numjobs,
    runtime_s,
)
from fslab.reproduce.setupwrite import replay_all
from fslab.reproduce.tomlitems import add, wrap
from fslab.spec.model import Spec
from fslab.workload import registry
from fslab.workload.base import Benchmark, FromReport, ReportOptions, RunShape

# The fio job closest to each tool, offered (commented) when the tool cannot run here.
STAND_INS: dict[str, str] = {
    "fs_mark": 'kind = "fio", options = { name = "fs_mark-like", rw = "write", nrfiles = 1000, '
    'filesize = "4k", openfiles = 16, create_on_open = 1, fsync_on_close = 1 }',
    "sysbench": 'kind = "fio", options = { name = "sysbench-fileio-like", rw = "randrw", '
    'rwmixread = 60, bs = "16k", nrfiles = 128, size = "1g", fsync = 100, numjobs = 4 }',
    "dbench": 'kind = "fio", options = { name = "dbench-like", rw = "randrw", bs = "4k", '
    'nrfiles = 100, filesize = "64k", fsync = 1, numjobs = 8 }',
    "aim7": 'kind = "fio", options = { name = "aim7-disk-like", rw = "randrw", bs = "4k", '
    'size = "1m", nrfiles = 10, numjobs = 64, create_on_open = 1 }',
    "filebench": 'kind = "fio", options = { name = "filebench-like", rw = "randrw", '
    'nrfiles = 1000, filesize = "16k", numjobs = 16 }',
}
STAND_INS["reaim"] = STAND_INS["aim7"]  # reaim runs the AIM7 workloads
STAND_INS["fxmark"] = STAND_INS["dbench"]  # its file-server tests drive dbench's clients
STAND_INS["compilebench"] = (  # a kernel tree's many small files, made and unlinked
    'kind = "fio", options = { name = "compilebench-like", rw = "write", nrfiles = 2000, '
    'filesize = "4k-64k", openfiles = 64, create_on_open = 1, unlink = 1 }'
)
STAND_INS["postmark"] = (
    'kind = "fio", options = { name = "postmark-like", rw = "randrw", nrfiles = 4000, '
    'filesize = "500-10k", bs = "512", unlink = 1 }'
)


@cache
def kind_loadable(kind: str) -> bool:
    """Whether fslab's spec model has a workload of this kind (the discriminator accepts
    it; its other fields are the writer's to get right)."""
    probe = {"name": "probe", "filesystems": [{"label": "p", "type": "ext4"}]}
    try:
        Spec.model_validate({**probe, "workload": {"kind": kind}})
    except ValidationError as exc:
        return not any(
            e["type"] in ("union_tag_invalid", "union_tag_not_found") for e in exc.errors()
        )
    return True


def tool_runs(tool: ToolWorkload) -> bool:
    """Whether a spec can hold this tool: it runs here, the spec model has its kind and
    its benchmark reads a report's command (from_report)."""
    if not (tool.runnable and kind_loadable(tool.tool)):
        return False
    return type(registry.benchmark_for(tool.tool)).from_report is not Benchmark.from_report


QUICK_FILES_BYTES = 1024 * MIB
"""--quick's most file bytes a point lays out (sysbench's prepare, fs_mark's files): a
point that writes 8 GiB before its run takes a minute of a --quick run's few."""


def tool_tables(
    draft: Draft, target_bytes: int, source_name: str
) -> tuple[Table, Table, Table, dict[str, Any]]:
    """[workload], [sweep], [run] and the --quick settings for the report's benchmark."""
    tool = draft.facts.tools[0]
    bench = registry.benchmark_for(tool.tool)
    swept = _swept_options(draft, tool, bench)
    options = _host_cpus(draft, tool, _first_values(tool.options, swept))
    try:
        imported = bench.from_report(options)
    except ValueError as exc:
        raise UsageError(f"{source_name}: line {tool.source.number}: {exc}") from None
    assert imported is not None
    fields = dict(imported.fields)
    workload = tomlkit.table()
    workload["kind"] = tool.tool
    comments = _dropped(draft, tool, imported)
    shown = tool.text if len(tool.text) <= 240 else tool.text[:236] + " ..."
    for line in wrap(f"the report's {tool.tool} (line {tool.source.number}): {shown}"):
        workload.add(tomlkit.comment(line))
    for line in comments:
        workload.add(tomlkit.comment(line))
    sweep, quick = _sweeps(draft, tool, bench, imported, options, swept, fields)
    _ask_about_other_commands(draft, tool, set(swept))
    fit = _fit(draft, bench, imported, fields, sweep, target_bytes)
    spelled = {f: o for o, f in imported.spelled.items()}
    for key, value in fields.items():
        why = fit if key == imported.shrink and fit else ""
        if key in imported.ladder_fields and imported.concurrency in sweep:
            why = imported.ladder_why
        add(workload, key, value, why or _as_written(spelled.get(key, ""), tool.options))
    run = tomlkit.table()
    if tool.tool == "command":
        add(run, "runtime", "30s", "the point's timeout is figured from it")
        return workload, sweep, run, {"run.repeat": QUICK_REPEAT}
    scaled = runtime_s(imported.runtime_s)
    add(run, "runtime", scaled.value, scaled.comment)
    quick["run.runtime"] = f"{QUICK_RUNTIME_S}s"
    quick["run.repeat"] = QUICK_REPEAT
    if (smaller := _shrunk(bench, imported, fields, sweep, QUICK_FILES_BYTES)) is not None:
        quick[f"workload.{imported.shrink}"] = smaller[0]  # a file set each point lays out
    return workload, sweep, run, quick


def _ask_about_other_commands(draft: Draft, tool: ToolWorkload, swept: set[str]) -> None:
    """The report's other commands of the tool that differ from the measured one in more
    than the swept option (the second sysbench leaves --file-num and --file-block-size at
    their defaults): asked about, not dropped without a word."""
    first = dict(tool.options)
    for other in draft.facts.tools[1:]:
        if other.tool != tool.tool or other.source.number == tool.source.number:
            continue
        differ = sorted(
            k or "operands"
            for k in sweeps.options_differing(first, dict(other.options))
            if k not in swept
        )
        if differ:
            draft.questions.append(
                QuestionFact(
                    f"{tool.tool} workload",
                    f"the report's {tool.tool} at line {other.source.number} differs from "
                    f"line {tool.source.number}'s in {', '.join(differ)}",
                    f"line {tool.source.number}'s is measured; run the other as its own spec",
                    other.source,
                )
            )
            return


def _swept_options(
    draft: Draft, tool: ToolWorkload, bench: Benchmark
) -> dict[str, tuple[str, ...]]:
    """The report's sweeps of the tool's own options (or of its axes: dbench's clients)."""
    names = {name for name, _ in tool.options}
    swept: dict[str, tuple[str, ...]] = {}
    for s in draft.facts.sweeps:  # the first reading of an axis is the report's own
        if s.axis in names or s.axis in bench.axes or s.axis == "clients":
            swept.setdefault(s.axis, s.values)
    return swept


def _first_values(options: ReportOptions, swept: dict[str, tuple[str, ...]]) -> ReportOptions:
    """The command with each swept option at its first value (`[rndwr|seqwr]` is rndwr)."""
    return [(n, swept[n][0] if swept.get(n) else v) for n, v in options]


def _host_cpus(draft: Draft, tool: ToolWorkload, options: ReportOptions) -> ReportOptions:
    """An option the report set to its machine's CPU count (`-t $(nproc)`) takes this
    host's, asked about."""
    return [
        (n, draft.host_cpus(f"{tool.tool} {n}", f"{tool.tool} {n}", tool.source))
        if v is not None and shell.is_cpu_count(v)
        else (n, v)
        for n, v in options
    ]


def _with(options: ReportOptions, name: str, value: str) -> ReportOptions:
    if any(n == name for n, _ in options):
        return [(n, value if n == name else v) for n, v in options]
    return [*options, (name, value)]


def _dropped(draft: Draft, tool: ToolWorkload, imported: FromReport) -> list[str]:
    """A question for each option left out that the reader must decide; notes for the rest."""
    notes = []
    for dropped in imported.dropped:
        if not dropped.ask:
            notes.append(f"dropped {dropped.option}: {dropped.reason}")
            continue
        draft.questions.append(
            QuestionFact(
                f"{tool.tool} {dropped.option}"[:80],
                f"the report's {tool.tool} {dropped.option!r}: {dropped.reason}",
                dropped.assumed or f"left out of [workload] (line {tool.source.number})",
                tool.source,
            )
        )
    return [x for note in notes for x in wrap(note)]


def _sweeps(
    draft: Draft,
    tool: ToolWorkload,
    bench: Benchmark,
    imported: FromReport,
    options: ReportOptions,
    swept: dict[str, tuple[str, ...]],
    fields: dict[str, Any],
) -> tuple[Table, dict[str, Any]]:
    """The reporter's variable on the benchmark's axis, and a ladder of threads or clients
    up to the reporter's count when the report did not vary it."""
    sweep = tomlkit.table()
    quick: dict[str, Any] = {}
    spelled = dict(imported.spelled)
    for axis, texts in swept.items():
        field = spelled.get(axis) or (axis if axis in bench.axes else "")
        if not field or field not in bench.axes or field in sweep:
            continue
        values = [_converted(bench, options, axis, field, t) for t in texts]
        try:
            if None in values:
                raise ValueError(f"{', '.join(texts)} are not all values of {field}")
            bench.check_axis(field, values)
        except ValueError as exc:
            draft.questions.append(
                QuestionFact(
                    f"sweep {axis}",
                    f"the report varies {axis} ({', '.join(texts)}), which fslab cannot "
                    f"sweep as given: {exc}",
                    "not swept",
                    tool.source,
                )
            )
            continue
        fact = next(s for s in draft.facts.sweeps if s.axis == axis)
        for line in wrap(f"the reporter's variable: {fact.why} (line {fact.source.number})"):
            sweep.add(tomlkit.comment(line))
        sweep[field] = values
        fields.pop(field, None)
        if field == imported.concurrency and len(values) > 3:
            quick[f"sweep.{field}"] = quick_numjobs(sorted(values))
    count = imported.concurrency
    reported = fields.get(count)
    if count and count not in sweep and isinstance(reported, int) and reported > 1:
        ladder = numjobs_ladder(reported)
        for line in wrap(
            f"1 up to the reporter's {reported} {count} (line {tool.source.number}), to show "
            "where throughput falls off"
        ):
            sweep.add(tomlkit.comment(line))
        sweep[count] = ladder
        fields.pop(count)
        draft.reported_point[count] = reported
        quick[f"sweep.{count}"] = quick_numjobs(ladder)
    if count in sweep:
        fields.update(imported.ladder_fields)
    return sweep, quick


def _converted(bench: Benchmark, options: ReportOptions, axis: str, field: str, text: str) -> Any:
    """One swept value as the benchmark's field takes it (the report's spelling read by
    from_report, as the command's own value would be)."""
    try:
        imported = bench.from_report(_with(options, axis, text))
    except ValueError:
        return None
    return None if imported is None else imported.fields.get(field)


def _fit(
    draft: Draft,
    bench: Benchmark,
    imported: FromReport,
    fields: dict[str, Any],
    sweep: Table,
    target_bytes: int,
) -> str:
    """Shrink the field the benchmark names so the files of the sweep's largest point fit
    half the device and half of memory; the comment that says so ("" when they fit)."""
    budget = file_budget_bytes(target_bytes, draft.host)
    shrunk = _shrunk(bench, imported, fields, sweep, budget)
    if shrunk is None:
        return ""
    value, total, how = shrunk
    fields[imported.shrink] = value
    return (
        f"scaled: the reporter's {how} = {format_size(total)}; {imported.shrink} = {value} "
        f"fits {format_size(budget)} (half the device and of memory)"
    )


def _shrunk(
    bench: Benchmark, imported: FromReport, fields: dict[str, Any], sweep: Table, budget: int
) -> tuple[int | str, int, str] | None:
    """The shrink field's value whose files at the sweep's largest point fit `budget`,
    with the files' bytes before and how they add up (None: they fit, or nothing shrinks)."""
    top = {k: max(v) for k, v in sweep.items() if isinstance(v, list) and v and k in bench.axes}
    try:
        workload = bench.Spec.model_validate({"kind": bench.kind, **fields})
        total, how = bench.files_bytes(workload, top, RunShape(30.0, 0.0, False))
    except (ValidationError, ValueError):
        return None
    name = imported.shrink
    if total is None or total <= budget or not name:
        return None
    value = getattr(workload, name)
    if isinstance(value, int):
        return max(1, value * budget // total), total, how
    size = parse_size_bytes(str(value))
    return f"{max(MIB, size * budget // total // MIB * MIB) // MIB}MiB", total, how


def _as_written(option: str, options: ReportOptions) -> str:
    """`-n 96`, `--file-num=4096`: the option a field came from, as the report wrote it."""
    value = dict(options).get(option)
    if not option or option == "command":
        return ""
    if value is None:
        return option
    if option.startswith("-"):
        return f"{option} {value}"[:56]
    return f"{value} {option}" if option == "clients" else f"--{option}={value}"[:56]


def tool_workload_lines(tool: ToolWorkload) -> list[str]:
    """The [workload] table for a tool, as TOML lines (to write or to comment out)."""
    options = ", ".join(f"{_key(k)} = {_string(v)}" for k, v in tool.options if v is not None)
    flags = [k for k, v in tool.options if v is None]
    lines = ["[workload]", f'kind = "{tool.tool}"', f"options = {{ {options} }}"]
    if flags:
        lines.append(f"flags = [{', '.join(_string(f) for f in flags)}]")
    if tool.steps:
        lines.append(f"steps = [{', '.join(_string(s) for s in tool.steps)}]")
    return lines


def not_runnable_message(draft: Draft, tool: ToolWorkload, source_name: str) -> str:
    """Why no spec is written for this report, and the commented [workload] it would take."""
    line = tool.source.number
    if not tool.runnable:
        head = f"{source_name}: line {line}: {tool.tool}: {tool.why}."
    elif tool.tool == "command":
        head = (
            f"{source_name}: line {line}: the report's workload is a shell command; fslab "
            "never runs a command from a report's text (docs/security.md)."
        )
    else:
        head = (
            f"{source_name}: line {line}: the report's workload is {tool.tool}, which this "
            f'fslab cannot run yet: its spec has no workload kind "{tool.tool}".'
        )
    lines = [head, "What fslab read, as the spec's [workload] will hold it (commented):"]
    lines += [f"  # {x}" for x in tool_workload_lines(tool)]
    if tool.tool in STAND_INS:
        lines += [
            "The closest workload fslab runs, NOT the reporter's (write it into a spec of your "
            "own if it answers your question):",
            f"  # [workload] {STAND_INS[tool.tool]}",
        ]
    lines += setup_comment_lines(draft)
    for question in draft.questions:
        if question.item in ("devices", "setup"):
            lines.append(f"  question: {question.question}; assumed: {question.assumed}")
    return "\n".join(lines)


def setup_comment_lines(draft: Draft) -> list[str]:
    """The report's setup steps fslab does not replay, each with why (the others are the
    spec's [[setup]] tables)."""
    _, skipped = replay_all(draft.facts.setup)
    if not skipped:
        return []
    lines = ["setup: the report's steps before its workload that fslab does not repeat:"]
    for step, why in skipped:
        text = f"line {step.source.number}: {step.kind}: {step.text} ({why})"
        lines += [f"  {x}" for x in wrap(text)]
    return lines


def ask_about_setup(draft: Draft) -> None:
    steps = draft.facts.setup
    if not steps:
        return
    tables, skipped = replay_all(steps)
    if not skipped:
        return
    kinds = ", ".join(dict.fromkeys(s.kind for s, _ in skipped))
    replayed = f"{len(tables)} step(s) are replayed as [[setup]]; " if tables else ""
    draft.questions.append(
        QuestionFact(
            "setup",
            f"the report runs {len(steps)} setup step(s) before its workload; {replayed}"
            f"{len(skipped)} ({kinds}) are not steps fslab repeats (listed under # setup: "
            "in [workload], each with why)",
            "not run: each point starts on a fresh filesystem with this host's settings",
            skipped[0][0].source,
        )
    )


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else _string(name)


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
