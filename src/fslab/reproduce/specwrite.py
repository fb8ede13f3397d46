"""From a report's facts to a spec that reproduces it here, every choice stated in a comment.

The spec is written as TOML with comments (tomlkit) and validated by fslab's
own spec model before it is shown, so what `fslab reproduce` prints is what
`fslab run` accepts. This module assembles the document: its header (the
questions and what cannot run here), [target] and [quick]; the sections
are written by configwrite ([[filesystems]]), workloadwrite ([workload],
[sweep], [run]) and reportedwrite ([vm], [reported]).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from fslab.base.errors import SpecError, UsageError
from fslab.base.format import format_size_exact
from fslab.reproduce import pending
from fslab.reproduce.configwrite import Config, config_table, configurations
from fslab.reproduce.draft import Draft, md_layout
from fslab.reproduce.facts import NOT_RUNNABLE, QuestionFact, ReportFacts
from fslab.reproduce.reportedwrite import reported_table, unreproducible, vm_table
from fslab.reproduce.scale import QUICK_REPEAT, HostShape, target_size_bytes
from fslab.reproduce.setupwrite import replay_all, scaled_files
from fslab.reproduce.tomlitems import add, wrap
from fslab.reproduce.toolwrite import (
    ask_about_setup,
    not_runnable_message,
    setup_comment_lines,
    tool_runs,
    tool_tables,
)
from fslab.reproduce.workloadwrite import workload_tables
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec

LOOKED_FOR = (
    "a fio command line (fio --name=... --rw=...), fio options in braces ({ --name=... }), "
    "a fio job file (a section line, then option=value lines), lkp-tests fio parameters "
    "(testcase: fio-basic with rw:, bs:), dd writing or reading a file "
    "(dd if=/dev/zero of=FILE bs= count=, dd if=FILE of=/dev/null bs=), or a shell command "
    "timed with `time` (written into the spec switched off, for you to review and allow); "
    "it reads fs_mark (and testcase: fsmark), sysbench fileio and dbench too, and names "
    f"{', '.join(sorted(NOT_RUNNABLE)[:-1])} and {sorted(NOT_RUNNABLE)[-1]}, saying why it "
    "cannot run them"
)


@dataclass(frozen=True)
class Reproduction:
    """The spec, its commented TOML, and what the user must be told."""

    spec: Spec
    toml: str
    warnings: list[str]
    questions: list[QuestionFact]


def build_spec(
    facts: ReportFacts, *, source_name: str, host: HostShape, guests: bool = True
) -> Reproduction:
    """The spec reproducing the report here; UsageError (exit 2) when it has no workload.

    With `guests`, the report's kernel and CPU count run in a qemu guest where
    fslab can have them (pending.vm_section); without, on this host."""
    tool = facts.tools[0] if facts.tools and not facts.fio else None
    if not facts.has_workload and tool is None:
        raise UsageError(_no_workload_message(facts, source_name))
    questions = list(facts.questions)
    draft = Draft(facts, host, questions, guests=guests)
    _devices_question(draft)
    ask_about_setup(draft)
    if tool is not None and not tool_runs(tool):
        raise UsageError(not_runnable_message(draft, tool, source_name))
    doc = _document(draft, source_name)
    text = tomlkit.dumps(doc)
    try:
        spec = validate_spec(tomllib.loads(text), f"the spec written for {source_name}")
    except SpecError as exc:
        if tool is None:
            raise
        raise UsageError(
            f"{source_name}: line {tool.source.number}: the {tool.tool} spec fslab wrote does "
            f"not load: {exc}"
        ) from None
    return Reproduction(spec, text, draft.warnings, questions)


def _no_workload_message(facts: ReportFacts, source_name: str) -> str:
    lines = [f"{source_name}: no workload fslab can run was found. fslab looked for {LOOKED_FOR}."]
    for other in facts.other_tools:
        lines.append(f"  line {other.source.number}: {other.tool}: {other.why}")
    for question in facts.questions:
        if question.item == "fio workload" and question.source:
            lines.append(f"  line {question.source.number}: {question.question}")
    lines.append("Paste the workload's command (or job file) into the report text and run again.")
    return "\n".join(lines)


def spec_name(source_name: str, title: str) -> str:
    stem = Path(source_name).stem if source_name not in ("-", "") else title
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "-", stem).strip("-.")[:64]
    return slug or "reproduce"


def _document(draft: Draft, source_name: str) -> tomlkit.TOMLDocument:
    facts = draft.facts
    doc = tomlkit.document()
    size = _device_size(draft)
    configs = configurations(draft)
    if draft.facts.fio or not draft.facts.tools:
        workload, sweep, run, quick_set = workload_tables(draft, size.value, configs)
    else:
        workload, sweep, run, quick_set = tool_tables(draft, int(size.value), source_name)
    for line in setup_comment_lines(draft):
        workload.add(tomlkit.comment(line))
    steps = scaled_files(draft, replay_all(facts.setup)[0], int(size.value))
    unreproducible(draft)
    name = spec_name(source_name, facts.title)
    for line in _header(draft, source_name):
        doc.add(tomlkit.comment(line))
    doc.add(tomlkit.nl())
    doc["name"] = name
    doc["description"] = f"reproduces: {facts.title}"[:200]
    target = tomlkit.table()
    target["kind"] = "ram"
    add(target, "size", format_size_exact(int(size.value)), size.comment)
    _target_limits(draft, target)
    if draft.array is not None:
        array = draft.array
        add(target, "devices", array.devices, f"the report's {array.said} (line {array.line})")
        add(
            target,
            "array",
            array.kind,
            "an md array over as many RAM loop images"
            + (", standing in for LVM's stripe (dm)" if "lvm" in array.said.lower() else ""),
        )
    elif draft.devices > 1:
        add(
            target,
            "devices",
            draft.devices,
            f"the reporter's btrfs spans {draft.devices} devices: as many RAM loop images here",
        )
    doc["target"] = target
    filesystems = tomlkit.aot()
    for config in configs:
        filesystems.append(config_table(config))
    doc["filesystems"] = filesystems
    doc["workload"] = workload
    if sweep.value:
        doc["sweep"] = sweep
    if steps:
        doc["setup"] = _setup_tables(steps)
    vm = vm_table(draft)
    if vm is not None:
        doc["vm"] = vm
    doc["run"] = run
    doc["quick"] = _quick(configs, quick_set)
    doc["reported"] = reported_table(draft, source_name, configs)
    return doc


def _setup_tables(steps: list[dict[str, Any]]) -> tomlkit.items.AoT:
    """[[setup]]: the report's steps fslab does itself, the report line in each note."""
    tables = tomlkit.aot()
    for step in steps:
        table = tomlkit.table()
        for key, value in step.items():
            table[key] = value
        tables.append(table)
    return tables


def _devices_question(draft: Draft) -> None:
    """The devices question says what this spec builds: the reporter's btrfs over as many
    loop images, an md array for their md or LVM, or one device."""
    if draft.devices == 1 and draft.array is None:
        for index, question in enumerate(draft.questions):
            if question.item == "devices" and md_layout(draft.facts) is not None:
                draft.questions[index] = replace(
                    question,
                    assumed=question.assumed + "; an md array (target.array) needs a kernel "
                    'with md: in a guest ([vm] kernel = "6.1"), over as many loop images',
                )
        return
    for index, question in enumerate(draft.questions):
        if question.item != "devices":
            continue
        if draft.array is not None:
            assumed = (
                f"an md {draft.array.kind.removeprefix('md-').upper()} over "
                f"{draft.array.devices} RAM-backed loop images (target.array), made fresh at "
                "every point; md's default chunk, not the reporter's"
            )
        else:
            assumed = (
                f"{draft.devices} RAM-backed loop images under the btrfs (target.devices); "
                "another filesystem's configuration is made on the first"
            )
        draft.questions[index] = replace(
            question, question=question.question.split("; a spec builds")[0], assumed=assumed
        )


def _header(draft: Draft, source_name: str) -> list[str]:
    lines = [
        *wrap(f'Written by `fslab reproduce {source_name}` from the report "{draft.facts.title}".'),
        "Each choice below names the report line it came from, and each scaling says why.",
        "Nothing has run yet: `fslab run THIS.toml` (or `fslab reproduce REPORT --run`).",
    ]
    if draft.questions:
        lines += ["", "Questions (what the report leaves open, and what fslab assumed):"]
        for q in draft.questions:
            where = f"line {q.source.number}: " if q.source else ""
            lines += wrap(f"- {where}{q.question}; assumed: {q.assumed}")
    if draft.warnings:
        lines += ["", "Not reproducible on this host (kept under [reported]):"]
        for warning in draft.warnings:
            lines += wrap(f"- {warning}")
    return lines


def _device_size(draft: Draft):
    sizes = [d for d in draft.facts.devices if d.size_bytes]
    reported = sizes[0].size_bytes if sizes else None
    said = sizes[0].text if sizes else ""
    dd = bool(draft.facts.dd) and not draft.facts.fio and not draft.facts.tools
    holds = draft.facts.dd[0].written_bytes() if dd else 0
    scaled = target_size_bytes(reported, draft.host, dd=dd, said=said, holds=holds)
    if sizes:
        scaled = type(scaled)(scaled.value, f"line {sizes[0].source.number}: {scaled.comment}")
    return scaled


def _target_limits(draft: Draft, target: Table) -> None:
    """[target.limits]: the report's device limits, the line each came from above it."""
    limits = draft.limits.limits
    if limits is None:
        return
    for device in draft.limits.used:
        for line in wrap(
            f'line {device.source.number}: the device limit "{device.text}" (read as '
            f"{pending.limit_text(device)}) caps reads and writes alike; fslab applies it "
            "with the blkio throttle on each point's scratch device"
        ):
            target.add(tomlkit.comment(line))
    table = tomlkit.table()
    for key, value in limits.model_dump(exclude_none=True).items():
        table[key] = value
    target["limits"] = table


def _quick(configs: list[Config], settings: dict[str, Any]) -> Table:
    quick = tomlkit.table()
    keep = [configs[0].label]
    lever = next((c.label for c in configs if "remedy" in c.description), None)
    keep.append(lever or (configs[1].label if len(configs) > 1 else configs[0].label))
    quick["filesystems"] = list(dict.fromkeys(keep))
    smaller = [k.removeprefix("workload.") for k in settings if k.startswith("workload.")]
    files = f", a smaller file set ({', '.join(smaller)})" if smaller else ""
    for line in wrap(
        "--quick: the reporter's setup and its first counterpart, fewer points, "
        f"shorter runs{files}, {QUICK_REPEAT} runs a point (a verdict on the counterpart "
        "needs 3 or more)"
    ):
        quick.add(tomlkit.comment(line))
    table = tomlkit.table()
    for key, value in settings.items():
        table[key] = value
    quick["set"] = table
    return quick
