"""A sweep point's evidence, in the form the judging reads: metrics, facts, profiles.

Evidence for a sweep point is read only from `CampaignData.evidence_rows`
(headlines are never measured under instruments): with several evidence runs
at a point their profiles are pooled (samples added) and their metrics
averaged. `Compositions` cuts each point's profiles into the rule base's
classes once, so every mechanism and every counterfactual reads the same cut.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData
from fslab.base.vocab import PointKey, point_label
from fslab.diagnose.attribution import classify
from fslab.diagnose.mechanisms import PROFILE_KINDS, Frame, ProfileKind, Rule
from fslab.stacks.profile import Profile
from fslab.store.db import PointRow, Store

RUNNING = "running"  # the off-CPU composition's class for threads on a CPU or runnable
PROFILE_ARTIFACTS: dict[ProfileKind, str] = {
    "oncpu": "profile.oncpu.folded",
    "offcpu": "profile.offcpu.folded",
}


@dataclass
class PointEvidence:
    """What one point's evidence run measured, in the form the scoring reads."""

    key: PointKey
    row: PointRow | None  # the last of `rows`: its facts are the point's
    headline: float | None
    metrics: Mapping[str, float]
    facts: Mapping[str, Any]  # by stored name, as the rules' fact conditions name them
    profiles: dict[ProfileKind, Profile | None]
    rows: tuple[PointRow, ...] = ()  # the evidence runs pooled here

    @property
    def ident(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.rows)

    @property
    def label(self) -> str:
        return point_label(self.key)

    @property
    def blocked_fraction(self) -> float | None:
        """Fraction of the workload's threads blocked (off-CPU sampler), None if not measured."""
        total = self.metrics.get("offcpu.threads_mean")
        blocked = self.metrics.get("offcpu.blocked_threads_mean")
        if not total or blocked is None:
            return None
        return min(1.0, blocked / total)


def load_evidence(
    store: Store,
    data: CampaignData,
    config: str,
    key: PointKey,
    headline: float | None,
    rows: list[PointRow] | None = None,
) -> PointEvidence:
    """A sweep point's evidence: its evidence runs (or the `rows` given) pooled."""
    rows = data.evidence_rows(config, key) if rows is None else rows
    if not rows:
        return PointEvidence(key, None, headline, {}, {}, {"oncpu": None, "offcpu": None})
    profiles: dict[ProfileKind, Profile | None] = {}
    for kind, name in PROFILE_ARTIFACTS.items():
        counts: dict[str, int] = {}
        for row in rows:
            text = store.artifact(row.id, name)
            for stack, n in (Profile.from_folded(text).to_counts() if text else {}).items():
                counts[stack] = counts.get(stack, 0) + n
        profile = Profile.from_counts(counts) if counts else None
        if profile is not None and kind == "oncpu":
            profile = profile.busy()
        profiles[kind] = profile if profile is not None and profile.total else None
    last = rows[-1]
    facts = {**last.facts.stored(), "fs_type": last.fs_type}  # rules name facts as stored
    metrics = _mean_metrics([data.metrics.get(row.id, {}) for row in rows])
    return PointEvidence(key, last, headline, metrics, facts, profiles, tuple(rows))


def _mean_metrics(sets: list[Mapping[str, float]]) -> dict[str, float]:
    """Each metric's mean over the evidence runs that measured it."""
    names = dict.fromkeys(name for m in sets for name in m)
    return {
        name: sum(values) / len(values)
        for name in names
        if (values := [m[name] for m in sets if name in m])
    }


def all_frames(rules: list[Rule], kind: ProfileKind) -> list[Frame]:
    return list(dict.fromkeys(f for rule in rules for f in rule.frames(kind)))


@dataclass
class Compositions:
    """Each point's profiles cut into the rule base's classes (diagnose.attribution)."""

    by_row: dict[tuple[int, ...], dict[ProfileKind, dict[str, float] | None]] = field(
        default_factory=dict
    )

    def add(self, evidence: PointEvidence, rules: list[Rule]) -> None:
        found: dict[ProfileKind, dict[str, float] | None] = {}
        for kind, profile in evidence.profiles.items():
            found[kind] = classify(profile, all_frames(rules, kind)) if profile else None
        blocked = evidence.blocked_fraction
        off = found.get("offcpu")
        if off is not None and blocked is not None:
            # shares of all the workload's threads: a thread that went from running to
            # waiting in a mechanism's frames is part of the change too
            found["offcpu"] = {**{k: v * blocked for k, v in off.items()}, RUNNING: 1 - blocked}
        if evidence.rows:
            self.by_row[evidence.ident] = found

    def of(self, evidence: PointEvidence, kind: ProfileKind) -> dict[str, float] | None:
        if not evidence.rows:
            return None
        return self.by_row.get(evidence.ident, {}).get(kind)


def signal(evidence: PointEvidence, rule: Rule, comps: Compositions) -> tuple[float, str] | None:
    """The mechanism's share at one point, and of what: off-CPU first (where threads wait)."""
    for kind in PROFILE_KINDS:
        classes = comps.of(evidence, kind)
        if classes is not None and rule.frames(kind):
            keys = {f.key for f in rule.frames(kind)}
            share = sum(v for k, v in classes.items() if k in keys)
            return share, "of threads" if kind == "offcpu" else "of busy CPU"
    return None
