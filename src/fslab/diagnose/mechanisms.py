"""The rule base: one TOML file per kernel mechanism in `diagnose/rules/`, read into typed rules.

A rule says what defines a mechanism, so the diagnosis can measure how much
of the change from a good to a bad point it accounts for (docs/diagnosis.md):

- `offcpu` / `oncpu`: the frames where its threads wait / its CPUs spin;
  a frame may be given as {frame, under} to count it only below a caller,
  {frame, not_under} only where that caller is not above it, or as
  {frame, leaf = true} to count only threads sleeping in it;
- `metrics`: collector metrics it predicts to grow (or shrink) from the good
  point to the bad one, by `factor`;
- `requires`: what must hold at the bad point for the mechanism to be
  possible at all (a serialising worker must be busy); a failed requirement
  rules the mechanism out, with its numbers;
- `against`: facts that argue against it (dioread_lock for credit waits);
- `alternatives`: mechanisms it is commonly mistaken for, always judged and,
  when they lose, shown as ruled out;
- `ceiling = "device_limits"`: the mechanism can also cap every point at
  once (a device at its configured limit), which no change between points
  shows;
- `blames` / `blames_kinds`: the names (and kinds of name: any workqueue,
  any lock) a bug report may blame that mean this mechanism, so a reply can
  judge the reporter's hypothesis as one of the rule base's mechanisms.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any, Literal

ProfileKind = Literal["oncpu", "offcpu"]
PROFILE_KINDS: tuple[ProfileKind, ...] = ("offcpu", "oncpu")


@dataclass(frozen=True)
class Frame:
    """A kernel function in a stack, optionally only below a given caller, or only as the leaf.

    `leaf`: the thread sleeps in this very function. /proc/PID/stack leaves
    out scheduler functions (__sched: rwsem_down_write_slowpath, schedule), so
    a thread sleeping on a lock shows the lock's caller as its leaf, e.g.
    path_openat for a directory's i_rwsem taken by open(O_CREAT).
    """

    frame: str
    under: str = ""
    leaf: bool = False
    # a generic wait (io_schedule) that means something else below this caller
    # (rq_qos_wait: a block-layer throttle's wait, not the device's)
    not_under: str = ""

    @property
    def key(self) -> str:
        key = f"{self.frame}<{self.under}" if self.under else self.frame
        key = f"{key}!{self.not_under}" if self.not_under else key
        return f"{key}$" if self.leaf else key

    def matches_at(self, stack: tuple[str, ...], index: int) -> bool:
        if self.leaf and index != len(stack) - 1:
            return False
        callers = stack[:index]
        return (
            stack[index] == self.frame
            and (not self.under or self.under in callers)
            and not (self.not_under and self.not_under in callers)
        )

    def describe(self) -> str:
        text = f"{self.frame} under {self.under}" if self.under else self.frame
        text = f"{text} (not under {self.not_under})" if self.not_under else text
        return f"{text} (sleeping in it)" if self.leaf else text


@dataclass(frozen=True)
class MetricSignal:
    """A metric the mechanism predicts to change from the good to the bad point."""

    metric: str  # a name, or a glob ("tp.balance_dirty_pages*"): the largest match is used
    what: str
    factor: float = 2.0
    grows: bool = True
    floor: float = 0.0  # a value at or below this counts as absent (noise, idle counters)


@dataclass(frozen=True)
class Condition:
    """A requirement or counter-argument checked at the bad point."""

    kind: Literal["workqueue", "metric", "fact"]
    what: str
    metric: str = ""
    op: Literal[">=", "<="] = ">="
    value: float = 0.0
    fact: str = ""
    contains: str = ""
    equals: Any = None
    workqueue: str = ""  # a queue name; empty: any queue
    max_peak_concurrency: float = 1.0
    min_utilisation: float = 0.8
    min_queue_delay_ns: float = 10e6


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    short: str  # what threads wait for, in a few words: "journal credits"
    explanation: str
    remedies: tuple[str, ...]
    references: tuple[str, ...]
    fs_types: tuple[str, ...]
    offcpu: tuple[Frame, ...]
    oncpu: tuple[Frame, ...]
    metrics: tuple[MetricSignal, ...]
    requires: tuple[Condition, ...]
    against: tuple[Condition, ...]
    alternatives: tuple[str, ...]
    ceiling: str = ""
    blames: tuple[str, ...] = ()
    blames_kinds: tuple[str, ...] = ()
    texts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)  # fs -> words

    def for_fs(self, fs_type: str) -> Rule:
        """The rule in the words of one filesystem: its [text.<type>] table replaces
        short, explanation, remedies and references, so no sentence names another
        filesystem's objects."""
        words = self.texts.get(fs_type)
        if not words:
            return self
        return replace(
            self,
            short=str(words.get("short", self.short)),
            explanation=" ".join(str(words.get("explanation", self.explanation)).split()),
            remedies=tuple(words.get("remedies", self.remedies)),
            references=tuple(words.get("references", self.references)),
        )

    def frames(self, kind: ProfileKind) -> tuple[Frame, ...]:
        return self.offcpu if kind == "offcpu" else self.oncpu

    def applies_to(self, fs_type: str) -> bool:
        return not self.fs_types or fs_type in self.fs_types

    def is_blamed_by(self, name: str) -> bool:
        """The name is one of `blames`, or a frame of the signature (case-insensitive)."""
        frames = [n for f in (*self.offcpu, *self.oncpu) for n in (f.frame, f.under) if n]
        return name.lower() in {n.lower() for n in (*self.blames, *frames)}


def _frames(items: list[Any], where: str) -> tuple[Frame, ...]:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(Frame(item))
        elif (
            isinstance(item, Mapping)
            and set(item) <= {"frame", "under", "leaf", "not_under"}
            and "frame" in item
        ):
            out.append(
                Frame(
                    str(item["frame"]),
                    str(item.get("under", "")),
                    bool(item.get("leaf")),
                    str(item.get("not_under", "")),
                )
            )
        else:
            raise ValueError(
                f"{where}: a frame is a name or {{frame, under, not_under, leaf}}, not {item!r}"
            )
    return tuple(out)


def _typed(cls: type, items: list[dict[str, Any]], where: str) -> tuple[Any, ...]:
    try:
        return tuple(cls(**item) for item in items)
    except TypeError as exc:
        raise ValueError(f"{where}: bad entry: {exc}") from exc


def parse_rule(data: Mapping[str, Any]) -> Rule:
    rule_id = str(data["id"])
    signature = data.get("signature", {})
    where = f"rule {rule_id}"
    unknown = set(signature) - {"offcpu", "oncpu"}
    if unknown:
        raise ValueError(f"{where}: bad entry: unknown signature key(s) {sorted(unknown)}")
    return Rule(
        id=rule_id,
        title=str(data["title"]),
        short=str(data.get("short", data["title"])),
        explanation=" ".join(str(data["explanation"]).split()),
        remedies=tuple(data.get("remedies", ())),
        references=tuple(data.get("references", ())),
        fs_types=tuple(data.get("fs_types", ())),
        offcpu=_frames(signature.get("offcpu", []), f"{where}: signature.offcpu"),
        oncpu=_frames(signature.get("oncpu", []), f"{where}: signature.oncpu"),
        metrics=_typed(MetricSignal, data.get("metrics", []), f"{where}: metrics"),
        requires=_typed(Condition, data.get("requires", []), f"{where}: requires"),
        against=_typed(Condition, data.get("against", []), f"{where}: against"),
        alternatives=tuple(data.get("alternatives", ())),
        ceiling=str(data.get("ceiling", "")),
        blames=tuple(str(n) for n in data.get("blames", ())),
        blames_kinds=tuple(str(k) for k in data.get("blames_kinds", ())),
        texts=_texts(data.get("text", {}), where),
    )


TEXT_KEYS = frozenset({"short", "explanation", "remedies", "references"})


def _texts(data: Mapping[str, Any], where: str) -> dict[str, Mapping[str, Any]]:
    for fs_type, words in data.items():
        if not isinstance(words, Mapping) or not set(words) <= TEXT_KEYS:
            raise ValueError(f"{where}: text.{fs_type}: only {sorted(TEXT_KEYS)} may be given")
    return dict(data)


def load_rules() -> list[Rule]:
    folder = resources.files("fslab.diagnose").joinpath("rules")
    return [
        parse_rule(tomllib.loads(entry.read_text()))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    ]


@dataclass(frozen=True)
class Blamed:
    """The mechanism a bug report's hypothesis names, and the name that says so."""

    rule: Rule
    kind: str  # of the name: workqueue, lock, function, macro, ...
    name: str
    by_kind: bool  # matched only by the kind of name (any workqueue), not the name itself


def blamed_mechanism(names: Sequence[tuple[str, str]], rules: Sequence[Rule]) -> Blamed | None:
    """The rule a hypothesis's (kind, name) pairs blame: by a name first, then by its kind.

    A commit or a free name matches only through a rule's `blames`; None when
    the rule base has no mechanism for anything the hypothesis names.
    """
    for kind, name in names:
        for rule in rules:
            if rule.is_blamed_by(name):
                return Blamed(rule, kind, name, by_kind=False)
    for kind, name in names:
        for rule in rules:
            if kind in rule.blames_kinds:
                return Blamed(rule, kind, name, by_kind=True)
    return None
