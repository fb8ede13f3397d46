"""A report's experiment in one record: the tool, its options as written, the filesystem
the reporter made, the devices, the variable changed and the setup steps.

This is what a reader of the report would write down before reproducing it, and
what tests/test_reproduce_corpus.py and bench/reproduce_corpus.py compare with
tests/data/reports/expected.toml. It is derived from the facts; nothing new is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fslab.reproduce.ddtext import writes_of
from fslab.reproduce.facts import ReportFacts, SweepFact
from fslab.reproduce.filesystems import reporters
from fslab.reproduce.setup import device_count


@dataclass(frozen=True)
class Experiment:
    tool: str  # fio, dd, fs_mark, sysbench, dbench, aim7, filebench, command; "" if none
    runnable: bool
    filesystem: str
    mkfs_options: tuple[str, ...]
    mount_options: tuple[str, ...]
    devices: int
    layout: str
    workload: dict[str, str]  # options as the reporter wrote them; bare flags left out
    sweep: SweepFact | None
    setup: tuple[str, ...]


def experiment_of(facts: ReportFacts) -> Experiment:
    tool, runnable, workload = "", True, dict[str, str]()
    if facts.fio:
        tool = "fio"
        workload = {k: v for k, v in facts.fio[0].written if v is not None}
        if not workload:
            workload = {k: str(v) for k, v in facts.fio[0].options.items() if v is not None}
    elif facts.tools:
        first = facts.tools[0]
        tool, runnable = first.tool, first.runnable
        workload = {k: v for k, v in first.options if v is not None}
    elif facts.dd:
        tool = "dd"
        workload = dict(facts.dd[0].operands)
    elif named := [o.tool for o in facts.other_tools if re.fullmatch(r"[a-z][\w-]*", o.tool)]:
        tool, runnable = named[0], False  # a benchmark fslab names and does not run (iozone)
    types = facts.filesystem_types()
    filesystem = types[0] if types else ""
    mkfs: list[str] | None = None
    mount: list[str] = []
    mounted = False
    for fs in reporters(facts.filesystems, filesystem):
        if fs.how == "mkfs" and mounted:
            break  # made again after a run: the sweep's, mounted its own way
        made = fs.how == "mkfs" or (fs.how == "parameters" and fs.mkfs_options)
        if made and mkfs is None:  # the first is the reporter's (defaults too)
            mkfs = list(fs.mkfs_options)
        mounted = mounted or (fs.how == "mount" and mkfs is not None)
        if fs.how in ("mkfs", "mount"):
            mount += [o for o in fs.mount_options if o not in mount]
    layout = max(facts.layouts, key=lambda x: x.devices).layout if facts.layouts else ""
    return Experiment(
        tool=tool,
        runnable=runnable,
        filesystem=filesystem,
        mkfs_options=tuple(mkfs or ()),
        mount_options=tuple(mount),
        devices=device_count(facts.layouts),
        layout=layout,
        workload=workload,
        sweep=facts.sweeps[0] if facts.sweeps else None,
        setup=tuple(step.text for step in facts.setup) + _read_layout(facts),
    )


def _read_layout(facts: ReportFacts) -> tuple[str, ...]:
    """A dd read's file as the report wrote it (the dd workload lays it out itself)."""
    if facts.fio or facts.tools or not facts.dd or not facts.dd[0].read:
        return ()
    name = facts.dd[0].operand("if")
    return tuple(dict.fromkeys(r.command for r in writes_of(facts.dd, name)))


FIELDS = (
    "tool",
    "runnable",
    "filesystem",
    "mkfs_options",
    "mount_options",
    "devices",
    "workload",
    "sweep",
    "setup",
)
"""The essentials a reader records for each report (tests/data/reports/expected.toml)."""


def compare(found: Experiment, expected: dict) -> dict[str, bool]:
    """Each essential field: whether what fslab read is what the reader recorded. Options
    compare as words (mkfs's own force and type flags aside), a kernel sweep by its axis
    (the reader names kernels in prose), other sweeps by axis and values in any order,
    setup steps in order, each starting with the reader's prefix."""
    sweep = expected.get("sweep") or {}
    return {
        "tool": found.tool == expected.get("tool"),
        "runnable": found.runnable == expected.get("runnable", True),
        "filesystem": found.filesystem == expected.get("filesystem"),
        "mkfs_options": _words(found.mkfs_options) == _words(expected.get("mkfs_options", [])),
        "mount_options": list(found.mount_options) == list(expected.get("mount_options", [])),
        "devices": found.devices == expected.get("devices", 1),
        "workload": found.workload == {k: str(v) for k, v in expected.get("workload", {}).items()},
        "sweep": found.sweep is not None
        and found.sweep.axis == sweep.get("axis")
        and (sweep["axis"] == "kernel" or set(found.sweep.values) == set(sweep.get("values", []))),
        "setup": len(found.setup) == len(expected.get("setup", []))
        and all(
            a.startswith(e) for a, e in zip(found.setup, expected.get("setup", []), strict=False)
        ),
    }


def _words(options) -> list[str]:
    words = [w for option in options for w in str(option).split()]
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "-t":
            skip = True
            continue
        if word not in ("-f", "-F", "-q"):
            kept.append(word)
    return kept
