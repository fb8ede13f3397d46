"""Profiles of stored points: pick a point, load its profile, or say why there is none.

A point's profiles are artifacts (`profile.oncpu.folded` from perf,
`profile.offcpu.folded` from the blocked-thread sampler). Points are named
by seq ("12") or by selector ("ext4-default:numjobs=1024", or
"numjobs=1024" for the first configuration); by default the worst point of
the configuration with the deepest falloff (analyze.curve.falloff, as the report),
where falloff is explained.
When a point has no profile the collectors table says why (off, not
available on this host, failed), and that reason is the error message: a
missing profile is a fact about the run, not a bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.curve.falloff import campaign_falloffs, config_falloff, focus_config
from fslab.base.errors import FslabError, UsageError
from fslab.base.vocab import point_label
from fslab.stacks import profile as prof
from fslab.stacks.profile import DiffRow, FuncShare, HotChain, Profile
from fslab.store.db import PointRow, Store

ProfileKind = Literal["oncpu", "offcpu"]
COLLECTOR_OF: dict[str, str] = {"oncpu": "perf", "offcpu": "offcpu"}
# off-CPU stacks carry the thread state as a pseudo-frame after the comm: [D], [S]
_STATE_FRAME = re.compile(r"^\[[A-Z]\]$")


class NoProfile(FslabError):
    """The point has no profile of this kind; the message says why."""


@dataclass(frozen=True)
class Selector:
    """A point named on the command line: by seq, or by config and sweep values."""

    seq: int | None = None
    config: str | None = None
    sweep: tuple[tuple[str, str], ...] = ()


def parse_selector(text: str) -> Selector:
    """Read "12" (a seq), "cfg:numjobs=1024,bs=4k", "numjobs=1024" or "cfg"."""
    text = text.strip()
    if text.isdigit():
        return Selector(seq=int(text))
    config, sep, rest = text.partition(":")
    if not sep and "=" in config:
        config, rest = "", config
    items = [part.strip() for part in rest.split(",") if part.strip()]
    return Selector(config=config or None, sweep=parse_sweep(items))


def parse_sweep(items: list[str]) -> tuple[tuple[str, str], ...]:
    """["numjobs=1024", "bs=4k"] -> (("numjobs", "1024"), ("bs", "4k"))."""
    pairs = []
    for item in items:
        axis, eq, value = item.partition("=")
        if not eq or not axis.strip():
            raise UsageError(f"sweep value {item!r} is not axis=value (e.g. numjobs=1024)")
        pairs.append((axis.strip(), value.strip()))
    return tuple(pairs)


def row_label(point: PointRow) -> str:
    """The point as "#12 ext4-default numjobs=1024 rep 0": enough to find it again."""
    sweep = point_label(point.sweep)
    return f"#{point.seq} {point.config} {sweep} rep {point.repeat}"


def artifact_name(kind: ProfileKind) -> str:
    return f"profile.{kind}.folded"


def select_point(
    store: Store, data: CampaignData, selector: Selector | None, kind: ProfileKind
) -> PointRow:
    """The point a selector names; among repetitions, one that has the profile."""
    if selector is not None and selector.seq is not None:
        return _by_seq(data, selector.seq)
    if selector is None or (selector.config is None and not selector.sweep):
        candidates = _worst_key_points(data)
    else:
        candidates = _matching(data, selector)
    ok = [p for p in candidates if p.status == "ok"]
    with_profile = [p for p in ok if store.artifact(p.id, artifact_name(kind)) is not None]
    return (with_profile or ok or candidates)[0]


def _by_seq(data: CampaignData, seq: int) -> PointRow:
    for p in data.points:
        if p.seq == seq:
            return p
    seqs = [p.seq for p in data.points]
    span = f"{min(seqs)}..{max(seqs)}" if seqs else "none"
    raise UsageError(f"campaign {data.id} has no point #{seq} (seq {span})")


def worst_evidence_row(data: CampaignData, config: str) -> PointRow | None:
    """The run that stands for the configuration's worst point (analyze.curve.falloff)."""
    falloff = config_falloff(data, config)
    return data.evidence_row(config, falloff.worst.key) if falloff else None


def _worst_key_points(data: CampaignData) -> list[PointRow]:
    """The worst point of the focus configuration (the report's), then its other runs."""
    configs = data.configs()
    if not configs:
        raise UsageError(f"campaign {data.id} has no points")
    focus = focus_config(campaign_falloffs(data))
    config = focus.config if focus else configs[0]
    worst = worst_evidence_row(data, config)
    if worst is None:
        return [p for p in data.points if p.config == config]
    same = [p for p in data.points if p.config == worst.config and p.sweep == worst.sweep]
    return [worst, *(p for p in same if p.id != worst.id)]


def _matching(data: CampaignData, selector: Selector) -> list[PointRow]:
    configs = data.configs()
    config = selector.config or (configs[0] if configs else None)
    if config not in configs:
        raise UsageError(
            f"no configuration {config!r} in campaign {data.id} (it has: {', '.join(configs)})"
        )
    wanted = dict(selector.sweep)
    found = [
        p
        for p in data.points
        if p.config == config and all(str(p.sweep.get(a)) == v for a, v in wanted.items())
    ]
    if not found:
        have = sorted({point_label(p.sweep) for p in data.points if p.config == config})
        raise UsageError(
            f"no point of {config} with {point_label(tuple(wanted.items()))} "
            f"(it has: {'; '.join(have)})"
        )
    if not wanted:  # a config alone: its worst point
        worst = worst_evidence_row(data, config)
        if worst is not None:
            found.sort(key=lambda p: (p.id != worst.id, p.seq))
    return found


def missing_reason(store: Store, data: CampaignData, point: PointRow, kind: ProfileKind) -> str:
    """Why `point` has no profile of `kind`, from its status and the collectors table."""
    label = row_label(point)
    if point.status == "pending":
        return f"point {label} has not run yet (fslab run --resume {data.id})"
    name = COLLECTOR_OF[kind]
    status = store.collectors(point.id)
    if name in status:
        state, reason = status[name]
        if state != "ok":
            return f"point {label}: the {name} collector was {state}: {reason or 'no reason'}"
        return f"point {label}: the {name} collector ran but stored no {artifact_name(kind)}"
    if point.status == "failed":
        return f"point {label} failed before profiling: {point.error}"
    if getattr(data.campaign.spec.collect, name, None) is False:
        return f"point {label}: the spec turns the {name} collector off ([collect] {name} = false)"
    if not status:
        return (
            f"point {label}: no collector ran (the campaign was run with --no-collect, "
            "or by an fslab without collectors)"
        )
    return f"point {label}: the {name} collector did not run (ran: {', '.join(sorted(status))})"


def load_profile(
    store: Store, data: CampaignData, point: PointRow, kind: ProfileKind = "oncpu"
) -> Profile:
    """The point's profile; NoProfile (with the reason) when it has none or it is empty."""
    text = store.artifact(point.id, artifact_name(kind))
    if text is None:
        raise NoProfile(missing_reason(store, data, point, kind))
    profile = Profile.from_folded(text)
    if profile.total == 0:
        raise NoProfile(f"point {row_label(point)}: the {kind} profile has no samples")
    return profile


@dataclass
class ProfileView:
    """What `fslab profile` prints for one point."""

    point: PointRow
    kind: ProfileKind
    total: int
    idle_share: float
    top_inclusive: list[FuncShare]
    top_self: list[FuncShare]
    chains: list[HotChain]
    states: dict[str, float] = field(default_factory=dict)  # off-CPU: [D], [S] shares
    # (inclusive, self) share of every listed function, so each ranking shows both
    shares: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "point": _point_dict(self.point),
            "kind": self.kind,
            "samples": self.total,
            "idle_share": self.idle_share,
            "top_inclusive": [vars(f) for f in self.top_inclusive],
            "top_self": [vars(f) for f in self.top_self],
            "chains": [_chain_dict(c) for c in self.chains],
            "states": self.states,
        }


def profile_view(
    profile: Profile, point: PointRow, kind: ProfileKind, *, top: int = 15, chains: int = 5
) -> ProfileView:
    """Top functions by inclusive and self share, and the hottest chains."""
    inclusive, self_ = profile.inclusive_shares(), profile.self_shares()
    states = {name: share for name, share in inclusive.items() if _STATE_FRAME.match(name)}
    top_inclusive, top_self = _top(profile, top, "inclusive"), _top(profile, top, "self")
    listed = {f.name for f in (*top_inclusive, *top_self)}
    return ProfileView(
        point=point,
        kind=kind,
        total=profile.total,
        idle_share=profile.idle_share(),
        top_inclusive=top_inclusive,
        top_self=top_self,
        chains=profile.hottest_chains(chains),
        states=dict(sorted(states.items())),
        shares={name: (inclusive.get(name, 0.0), self_.get(name, 0.0)) for name in listed},
    )


def _top(profile: Profile, n: int, by: prof.RankBy) -> list[FuncShare]:
    """Profile.top without the off-CPU state pseudo-frames, which name no code."""
    ranked = profile.top(n + 4, by)
    return [f for f in ranked if not _STATE_FRAME.match(f.name)][:n]


@dataclass
class ProfileDiff:
    """Two points' profiles ranked by change in inclusive share (b - a)."""

    a: PointRow
    b: PointRow
    kind: ProfileKind
    total_a: int
    total_b: int
    functions: list[DiffRow]
    chains: list[DiffRow]
    comms: list[DiffRow]

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": _point_dict(self.a),
            "b": _point_dict(self.b),
            "kind": self.kind,
            "samples_a": self.total_a,
            "samples_b": self.total_b,
            "functions": [_diff_dict(r) for r in self.functions],
            "chains": [_diff_dict(r) for r in self.chains],
            "comms": [_diff_dict(r) for r in self.comms],
        }


def profile_diff(
    a: Profile, b: Profile, point_a: PointRow, point_b: PointRow, kind: ProfileKind, top: int = 15
) -> ProfileDiff:
    """Functions, hot chains and threads ranked by |change in inclusive share|."""

    def ranked(kind_name: str) -> list[DiffRow]:
        rows = prof.diff(a, b, limit=None, kinds=(kind_name,))
        return [r for r in rows if not _STATE_FRAME.match(r.name)][:top]

    return ProfileDiff(
        a=point_a,
        b=point_b,
        kind=kind,
        total_a=a.total,
        total_b=b.total,
        functions=ranked("function"),
        chains=ranked("chain"),
        comms=ranked("comm"),
    )


def sample_period_s(data: CampaignData, point: PointRow, kind: ProfileKind) -> float | None:
    """Seconds per on-CPU sample (1 / perf frequency), for speedscope's time axis."""
    freq = data.metrics.get(point.id, {}).get("profile.freq_hz")
    return 1.0 / freq if kind == "oncpu" and freq else None


def _point_dict(point: PointRow) -> dict[str, Any]:
    return {
        "id": point.id,
        "seq": point.seq,
        "config": point.config,
        "sweep": point.sweep,
        "repeat": point.repeat,
    }


def _chain_dict(chain: HotChain) -> dict[str, Any]:
    return {
        "comm": chain.comm,
        "frames": list(chain.frames),
        "samples": chain.samples,
        "share": chain.share,
        "self_samples": chain.self_samples,
        "func_fraction": chain.func_fraction,
    }


def _diff_dict(row: DiffRow) -> dict[str, Any]:
    return {**vars(row), "delta": row.delta}
