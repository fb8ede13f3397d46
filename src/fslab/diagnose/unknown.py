"""The honest unknown: what a maintainer would start from when no rule explains the change.

When the rule base explains little of the change from the good to the bad
point (UNEXPLAINED: less than 40% of it, or nothing ranks at all), the
diagnosis still names the frames whose share grew most, each with the
calling chain it was reached by at the bad point, the kernel subsystem its
symbol lives in (diagnose/subsystems.toml), where the thread sleeps or spins,
and which other configurations of the campaign show the same growth; and the
one configuration that would test the subsystem's part. `draft_rule` turns
those frames into a rule file's skeleton for a user to finish.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from fslab.base.format import format_share
from fslab.diagnose.attribution import STATE_FRAMES, class_label, class_of
from fslab.diagnose.evidence import RUNNING, Compositions, PointEvidence, all_frames
from fslab.diagnose.mechanisms import PROFILE_KINDS, Frame, ProfileKind, Rule
from fslab.spec.model import FilesystemSpec
from fslab.stacks.fold import UNKNOWN_FRAME
from fslab.stacks.profile import Profile

UNEXPLAINED = 0.40  # below this share of the change explained, the unknown is shown
GROWN = 4  # frames listed
MIN_GROWTH = 0.01  # a frame that grew less (in share) is sampling noise, not listed
# another configuration shows "the same growth" with at least this part of this one's
SAME_GROWTH = 0.5
CHAIN_FRAMES = 6  # frames of a chain shown, the sleeping or spinning one last
# fslab's own process is the instruments' CPU (reading stacks, counters), not the workload's
NOT_FRAMES = frozenset({RUNNING, "leaf:(no kernel stack)", f"leaf:{UNKNOWN_FRAME}", "leaf:fslab"})
# entry trampolines: every chain has them, none says anything
ENTRY_FRAMES = frozenset(
    {
        "ret_from_fork_asm",
        "ret_from_fork",
        "kthread",
        "entry_SYSCALL_64_after_hwframe",
        "entry_SYSCALL_64",
        "do_syscall_64",
        "x64_sys_call",
    }
)


@dataclass(frozen=True)
class Subsystem:
    path: str
    what: str
    prefixes: tuple[str, ...]
    test: str
    by_fs: bool = False  # its test is another filesystem type


@cache
def subsystems() -> tuple[Subsystem, ...]:
    text = resources.files("fslab.diagnose").joinpath("subsystems.toml").read_text()
    return tuple(
        Subsystem(s["path"], s["what"], tuple(s["prefixes"]), s["test"], s.get("by_fs", False))
        for s in tomllib.loads(text)["subsystem"]
    )


def _placed(frame: str) -> Subsystem | None:
    """The subsystem a symbol's prefix places it in (the first entry that matches)."""
    name = frame.removesuffix("_[k]")
    return next((sub for sub in subsystems() if name.startswith(sub.prefixes)), None)


def subsystem_of(chain: Sequence[str]) -> Subsystem | None:
    """The subsystem of a chain's last frame: by its prefix, else its nearest caller's."""
    return next(filter(None, map(_placed, reversed(chain))), None)


@dataclass
class GrownFrame:
    """A class whose share grew from the good to the bad point, placed in the kernel."""

    kind: ProfileKind
    key: str
    good: float
    bad: float
    chain: tuple[str, ...]  # outermost first, the class's frame last
    subsystem: str  # "fs/btrfs (btrfs)", or "" when no table entry places it
    elsewhere: dict[str, tuple[float, float]] = field(default_factory=dict)  # config -> shares

    @property
    def frame(self) -> str:
        return class_label(self.key)

    @property
    def site(self) -> str:
        """Where the thread sleeps (off-CPU) or spins (on-CPU), and who called it there."""
        verb = "sleeps in" if self.kind == "offcpu" else "spends CPU in"
        caller = f", called from {self.chain[-2]}" if len(self.chain) > 1 else ""
        return f"{verb} {self.chain[-1] if self.chain else self.frame}{caller}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "frame": self.frame,
            "good": round(self.good, 4),
            "bad": round(self.bad, 4),
            "chain": list(self.chain),
            "subsystem": self.subsystem,
            "site": self.site,
            "elsewhere": {k: {"good": g, "bad": b} for k, (g, b) in self.elsewhere.items()},
        }


@dataclass
class Unknown:
    """What grew that the rule base does not explain, and the configuration that would test it."""

    explained: float  # the best rule's share of the change (0 when none ranked)
    frames: list[GrownFrame]
    test: str  # the one counterfactual configuration to add, in words

    def to_dict(self) -> dict[str, Any]:
        return {
            "explained": round(self.explained, 3),
            "frames": [f.to_dict() for f in self.frames],
            "test": self.test,
        }


def find_unknown(
    explained: float,
    fs_type: str,
    good: PointEvidence,
    bad: PointEvidence,
    comps: Compositions,
    others: Mapping[str, tuple[PointEvidence, PointEvidence]],
    rules: list[Rule],
    explained_by: Rule | None = None,
    fs_types: Mapping[str, str] | None = None,
    made: Mapping[str, tuple[str, ...]] | None = None,
    held: frozenset[str] = frozenset(),
) -> Unknown | None:
    """The frames that grew most (off-CPU first), placed; None when nothing grew. The
    frames of the rule ranked first (explained_by) are its share, not what else grew.
    `made`: each configuration's settings in words, this one's under "" (made_with);
    `held`: the configurations that held up at the bad point."""
    counted = {
        f.key for kind in PROFILE_KINDS for f in (explained_by.frames(kind) if explained_by else [])
    }
    for kind in PROFILE_KINDS:
        g, b, profile = comps.of(good, kind), comps.of(bad, kind), bad.profiles.get(kind)
        if g is None or b is None or profile is None:
            continue
        rows = sorted(
            (
                (k, g.get(k, 0.0), b.get(k, 0.0))
                for k in set(g) | set(b)
                if k not in NOT_FRAMES | counted
            ),
            key=lambda r: (-(r[2] - r[1]), r[0]),
        )
        frames = []
        for key, was, now in [r for r in rows if r[2] - r[1] >= MIN_GROWTH][:GROWN]:
            chain = chain_of(profile, key, all_frames(rules, kind))
            sub = subsystem_of(chain)
            found = GrownFrame(
                kind, key, was, now, chain, f"{sub.path} ({sub.what})" if sub else ""
            )
            for config, (o_good, o_bad) in others.items():
                og, ob = comps.of(o_good, kind), comps.of(o_bad, kind)
                if og is not None and ob is not None:
                    found.elsewhere[config] = (og.get(key, 0.0), ob.get(key, 0.0))
            frames.append(found)
        if frames:
            return Unknown(explained, frames, _test(frames, fs_type, fs_types or {}, made, held))
    return None


def chain_of(profile: Profile, key: str, named: list[Frame]) -> tuple[str, ...]:
    """The most common stack of the class at this point, cut after the class's frame,
    its last CHAIN_FRAMES frames (the thread name left out)."""
    best: tuple[str, ...] = ()
    most = 0
    for stack, count in profile.stacks.items():
        if count > most and class_of(stack, named) == key:
            best, most = stack, count
    if not best:
        return ()
    frame = class_label(key).split(" under ")[0]
    end = max((i for i, f in enumerate(best) if f == frame), default=len(best) - 1)
    chain = [f for f in best[1 : end + 1] if f not in ENTRY_FRAMES and f not in STATE_FRAMES]
    return tuple(chain[-CHAIN_FRAMES:])


def _test(
    frames: list[GrownFrame],
    fs_type: str,
    fs_types: Mapping[str, str],
    made: Mapping[str, tuple[str, ...]] | None = None,
    held: frozenset[str] = frozenset(),
) -> str:
    """The subsystem of the frame that grew most, and the configuration that tests it; for
    a filesystem's own frame, the campaign's other configurations may already answer it:
    first the same filesystem made otherwise, held up at the bad point with less of the
    growth, then other filesystem types. A subsystem with no test of its own (the buffer
    cache) is its caller's."""
    same = _held_otherwise(frames, fs_type, fs_types, made or {}, held)
    if same:
        return same
    for grown in frames:
        sub = deciding_subsystem(grown.chain)
        if sub is not None:
            answered = _answered(grown, fs_type, fs_types) if sub.by_fs else None
            return answered or sub.test.format(fs=fs_type)
    answered = _answered(frames[0], fs_type, fs_types) if frames else None
    return answered or f"the same workload on another filesystem type than {fs_type}"


def _held_otherwise(
    frames: list[GrownFrame],
    fs_type: str,
    fs_types: Mapping[str, str],
    made: Mapping[str, tuple[str, ...]],
    held: frozenset[str],
) -> str | None:
    """The same filesystem made otherwise, held up at the bad point without the same
    growth over the listed frames: it isolates a setting, so it answers the test first."""
    mine = sum(f.bad - f.good for f in frames)
    for config in sorted(held):
        if fs_types.get(config) != fs_type:
            continue
        theirs = sum(
            f.elsewhere[config][1] - f.elsewhere[config][0] for f in frames if config in f.elsewhere
        )
        if theirs > SAME_GROWTH * mine:
            continue
        here, there = made.get(""), made.get(config)
        diff = f" ({_differs(there, here)})" if here and there and here != there else ""
        return (
            f"nothing: {config} in this campaign, the same filesystem made otherwise{diff}, "
            "holds up at the bad point with less of this growth: look at what differs "
            "between the two"
        )
    return None


def deciding_subsystem(chain: Sequence[str]) -> Subsystem | None:
    """The subsystem whose test applies to a chain: its last frame's, or, where that
    one has no test of its own, the nearest caller's that has."""
    return next((sub for sub in map(_placed, reversed(chain)) if sub and sub.test), None)


def _grew(grown: GrownFrame, config: str) -> bool:
    """Whether another configuration's share of the frame grew as this one's did: by
    MIN_GROWTH and by SAME_GROWTH of this configuration's growth at least."""
    good, bad = grown.elsewhere[config]
    return bad - good >= max(MIN_GROWTH, SAME_GROWTH * (grown.bad - grown.good))


def _answered(grown: GrownFrame, fs_type: str, fs_types: Mapping[str, str]) -> str | None:
    """What the campaign's configurations of other filesystem types already say about the
    frame's growth; None when it has none."""
    others = [c for c in grown.elsewhere if fs_types.get(c, fs_type) != fs_type]
    if not others:
        return None
    grew = [c for c in others if _grew(grown, c)]
    names = grew or others
    verb = "shows" if len(names) == 1 else "show"
    if not grew:
        return (
            f"nothing: {', '.join(names)} in this campaign {verb} no such growth: {fs_type}'s own"
        )
    return (
        f"nothing: {', '.join(names)} in this campaign {verb} the same growth: not {fs_type}'s "
        "alone, look above the filesystem (the VFS, the page cache, the block layer)"
    )


def made_with(fs: FilesystemSpec) -> tuple[str, ...]:
    """A configuration's settings in words: mkfs and mount options, each setup step."""
    mkfs = " ".join(fs.mkfs_options) or "mkfs's defaults"
    mount = ",".join(fs.mount_options) or "defaults"
    steps = [
        "setup " + " ".join(f"{v}" for k, v in step.model_dump().items() if k != "note")
        for step in fs.setup
    ]
    return (f"mkfs {mkfs}", f"mounted {mount}", *steps)


def _differs(there: Sequence[str], here: Sequence[str]) -> str:
    """What one configuration has that the other has not, both ways, in words."""
    theirs = "; ".join(p for p in there if p not in here) or "nothing more"
    mine = "; ".join(p for p in here if p not in there) or "nothing more"
    return f"{theirs}; here: {mine}"


def draft_rule(name: str, unknown: Unknown, fs_type: str) -> str:
    """A rule file's skeleton from the grown frames, for a user to finish (TOML text)."""

    def frames(kind: ProfileKind) -> str:
        found = [f for f in unknown.frames if f.kind == kind]
        return ", ".join(json.dumps(f.chain[-1] if f.chain else f.frame) for f in found)

    where = next((f.subsystem.split(" ")[0] for f in unknown.frames if f.subsystem), "fs/")
    lines = [
        "# A draft rule written by `fslab diagnose --draft-rule`: finish the TODOs, put it",
        f"# in src/fslab/diagnose/rules/{name}.toml and validate it on a recorded case.",
        "# What grew from the good point to the bad one:",
        *(
            f"#   {f.frame}: {format_share(f.good)} -> {format_share(f.bad)} of {f.kind}"
            f" [{f.subsystem or 'unplaced'}] via {' > '.join(f.chain) or '?'}"
            for f in unknown.frames
        ),
        f"id = {json.dumps(name)}",
        f"title = {json.dumps(name)}",
        'short = "TODO: what threads wait for, in a few words"',
        f"fs_types = [{json.dumps(fs_type)}]",
        'explanation = """',
        "TODO: what the kernel does in these frames and why it grows with concurrency.",
        '"""',
        f"remedies = [{json.dumps('TODO; to test it: ' + unknown.test)}]",
        f"references = [{json.dumps(where)}]",
        "",
        "[signature]",
        f"offcpu = [{frames('offcpu')}]",
        f"oncpu = [{frames('oncpu')}]",
        "",
    ]
    return "\n".join(lines)
