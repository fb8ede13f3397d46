"""A report's setup steps as the spec's [[setup]] tables, where fslab can do them itself.

Each step the report ran between mkfs and its workload (reproduce.setup) is
read, never run: a `truncate`, `fallocate` or prefill `dd` of a file, a
`mkdir`, a `touch`, btrfs's No_COW `chattr +C`, an allowlisted `sysctl vm.*`, an
allowlisted block-queue setting (`echo 0 > /sys/block/DEV/queue/wbt_lat_usec`, made on
fslab's own scratch device, never on the reporter's DEV) or dropping caches becomes a
typed step (spec.setup) that fslab does in the scratch filesystem, a path of the
reporter's machine becoming its last name there (as fio's filename does).
Anything else (tune2fs, other writes under /sys, other shells) stays a listed
step with the reason it is not replayed.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import TypeAdapter, ValidationError

from fslab.base.format import format_size
from fslab.base.units import parse_size_bytes
from fslab.reproduce.draft import Draft
from fslab.reproduce.facts import QuestionFact, SetupFact
from fslab.reproduce.scale import MIB, file_budget_bytes
from fslab.spec.setup import QUEUE_SETTINGS, TWINS, SetupStep

_STEP = TypeAdapter(SetupStep)
_QUEUE_RE = re.compile(r"^/sys/(?:block|class/block)/[^/]+/queue/(\w+)$")
NOT_REPLAYED = {
    "tune2fs": "tune2fs changes the filesystem's features: give them as mkfs_options instead",
    "procfs": "a /proc/sys setting outside the vm.* settings a spec may change",
    "file": "writes a file of the reporter's choosing: fslab does not write report text",
    "sync": "every setup step is followed by the workload's own start: nothing to sync",
    "fio layout": "fio lays out its own files at the start of each point",
    "fstrim": "a fresh scratch filesystem has nothing to discard",
}


def replay(fact: SetupFact) -> tuple[list[dict[str, Any]], str]:
    """The [[setup]] tables for one report step, or none and why not."""
    if fact.kind in NOT_REPLAYED:
        return [], NOT_REPLAYED[fact.kind]
    try:
        words = shlex.split(fact.text)
    except ValueError:
        return [], "its quoting does not parse"
    note = f"line {fact.source.number}: {fact.text}"[:300]
    try:
        steps = _steps(fact.kind, words)
    except (ValueError, IndexError) as exc:
        return [], str(exc) or "its operands are not ones fslab reads"
    tables = []
    for step in steps:
        try:
            _STEP.validate_python({**step, "note": note})
        except ValidationError as exc:
            return [], exc.errors()[0]["msg"].removeprefix("Value error, ")
        tables.append({**step, "note": note})
    if not tables:
        return [], "no operand fslab can repeat"
    return tables, ""


def replay_all(facts: list[SetupFact]) -> tuple[list[dict[str, Any]], list[tuple[SetupFact, str]]]:
    """Every step's tables in the report's order, and the steps not replayed with why.

    A setting listed as 0 beside its twin set non-zero (vm.dirty_ratio = 0 next to
    vm.dirty_bytes = 8589934592) is how the kernel shows the twin in force: writing the
    0 would clear the twin, so it is left out."""
    tables: list[dict[str, Any]] = []
    skipped: list[tuple[SetupFact, str]] = []
    for fact in facts:
        found, why = replay(fact)
        tables += found
        if why:
            skipped.append((fact, why))
    in_force = {t["name"] for t in tables if t["kind"] == "sysctl" and t["value"]}
    kept = [
        t
        for t in tables
        if not (t["kind"] == "sysctl" and not t["value"] and TWINS.get(t["name"]) in in_force)
    ]
    return kept, skipped


def scaled_files(
    draft: Draft, tables: list[dict[str, Any]], target_bytes: int
) -> list[dict[str, Any]]:
    """The files the steps make, scaled as the workload's file sizes are: in proportion,
    the largest filling the file budget (a 100G truncate beside a 100G job file keeps
    their ratio on a smaller device, and a fallocate of more than the device fails)."""
    files = [t for t in tables if t["kind"] == "file"]
    budget = file_budget_bytes(target_bytes, draft.host)
    largest = max((int(t["size"]) for t in files), default=0)
    if largest <= budget:
        return tables
    factor = budget / largest
    scaled = []
    for table in tables:
        if table["kind"] == "file" and int(table["size"]):  # a touched file stays empty
            size = max(MIB, int(int(table["size"]) * factor) // MIB * MIB)
            draft.questions.append(
                QuestionFact(
                    "setup",
                    f"{table['note']} makes a file of {format_size(int(table['size']))}, "
                    "more than this machine's file budget",
                    f"{format_size(size)}: scaled in proportion, the largest filling the "
                    "file budget, as the workload's sizes are",
                )
            )
            table = {**table, "size": str(size)}
        scaled.append(table)
    return scaled


def _steps(kind: str, words: list[str]) -> list[dict[str, Any]]:
    if kind == "drop caches":
        return [{"kind": "drop_caches"}]
    if kind == "sysctl":
        listed = words[0] != "sysctl"  # "vm.dirty_ratio = 20" as a report lists it
        assignment = "".join(words) if listed else next(w for w in words[1:] if "=" in w)
        name, _, value = assignment.partition("=")
        return [{"kind": "sysctl", "name": name, "value": int(value)}]
    if kind == "mkdir":
        return [
            {"kind": "mkdir", "path": scratch_name(w)} for w in words[1:] if not w.startswith("-")
        ]
    if kind in ("truncate", "fallocate"):
        flag = "-s" if kind == "truncate" else "-l"
        size, path = _option(words, flag, "--size" if kind == "truncate" else "--length")
        return [{"kind": "file", "path": scratch_name(path), "size": _size(size), "how": kind}]
    if kind == "dd":
        ops = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if ops.get("if") not in ("/dev/zero", "/dev/urandom"):
            raise ValueError(f"dd reads {ops.get('if')!r}: fslab prefills from zeros only")
        total = parse_size_bytes(ops.get("bs", "512")) * int(ops["count"])
        return [
            {"kind": "file", "path": scratch_name(ops["of"]), "size": str(total), "how": "write"}
        ]
    if kind == "sysfs":
        return [_queue_step(words)]
    if kind == "chattr":
        return [{"kind": "nocow", "path": scratch_name(words[-1])}]
    if kind == "touch":
        return [{"kind": "file", "path": scratch_name(words[-1]), "size": "0"}]
    raise ValueError(f"a {kind} step is not one fslab repeats")


def _queue_step(words: list[str]) -> dict[str, Any]:
    """`echo V > /sys/block/DEV/queue/NAME` (or `| tee`): the setting, for the scratch
    device; the reporter's DEV is not read."""
    target = words[-1].lstrip(">")
    match = _QUEUE_RE.match(target)
    if match is None or match.group(1) not in QUEUE_SETTINGS:
        raise ValueError(
            "a sysfs setting other than the block-queue ones a spec may change "
            f"({', '.join(sorted(QUEUE_SETTINGS))})"
        )
    return {"kind": "queue", "name": match.group(1), "value": words[1]}


def _option(words: list[str], short: str, long: str) -> tuple[str, str]:
    """(the size option's value, the one file operand) of truncate/fallocate."""
    size, paths, rest = "", [], iter(words[1:])
    for word in rest:
        if word in (short, long):
            size = next(rest)
        elif word.startswith(short) and len(word) > len(short):
            size = word[len(short) :]
        elif word.startswith(long + "="):
            size = word.partition("=")[2]
        elif word.startswith("-"):
            raise ValueError(f"option {word} is not one fslab repeats")
        else:
            paths.append(word)
    if not size or len(paths) != 1:
        raise ValueError("needs one size and one file")
    return size, paths[0]


def _size(text: str) -> str:
    """truncate's and fallocate's 100G, 4GiB or 1048576, as bytes fslab reads back."""
    return str(parse_size_bytes(text))


def scratch_name(path: str) -> str:
    """A path of the reporter's machine as its last name in the scratch filesystem."""
    name = path.rstrip("/").rsplit("/", 1)[-1] if path.startswith("/") else path
    if "$" in name or "{" in name or "*" in name:
        raise ValueError(f"{path!r} is a shell pattern, not a name")
    return name
