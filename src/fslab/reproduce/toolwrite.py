"""A benchmark other than fio and dd in a written spec, and the report's setup steps.

The spec's [workload] takes `kind = "<tool>"` and the tool's options as the
report wrote them, but only when fslab's spec model has that kind: a spec
`fslab reproduce` prints always loads. A kind the model does not know yet is
written as comments (what the spec will say once it does), and the report is
refused with them (exit 2), as is a tool no machine fslab runs on has (aim7,
filebench: its closest runnable stand-in is offered, commented, never put in
its place). Setup steps have no place in a spec yet: they are listed as a
commented `# setup:` block with a question, and never run.
"""

from __future__ import annotations

from functools import cache

from pydantic import ValidationError

from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import QuestionFact, ToolWorkload
from fslab.reproduce.tomlitems import wrap
from fslab.spec.model import Spec

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
    steps = draft.facts.setup
    if not steps:
        return []
    lines = ["setup: the report's steps before its workload (not run: a spec has no setup yet)"]
    for step in steps:
        lines += [f"  {x}" for x in wrap(f"line {step.source.number}: {step.kind}: {step.text}")]
    return lines


def ask_about_setup(draft: Draft) -> None:
    steps = draft.facts.setup
    if not steps:
        return
    kinds = ", ".join(dict.fromkeys(s.kind for s in steps))
    draft.questions.append(
        QuestionFact(
            "setup",
            f"the report runs {len(steps)} setup step(s) before its workload ({kinds}); a "
            "spec has no setup steps yet (listed under # setup: in [workload])",
            "not run: each point starts on a fresh filesystem with this host's settings",
            steps[0].source,
        )
    )


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else _string(name)


def _string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
