"""The run model: clean repetitions measure, one instrumented evidence run explains.

Collectors change what they measure (on 2 CPUs every cycle a collector
takes is a cycle fio does not get), so by default no headline figure is
measured under them. Each point's repetitions run clean (no collector at
all) and one extra evidence run per sweep point runs with the collectors;
its own headline is kept next to the clean ones, so a report can say how
much the instruments perturbed the point.

Every stored point has a role:

- ``clean``: no collector ran; a headline repetition.
- ``evidence``: the collectors ran; read for diagnosis, never for headline
  statistics.
- ``inline``: the collectors ran and the run counts as a headline
  repetition (``--collect=inline``, and all data from before roles existed).
- ``warmup``: the first run of each configuration, at its heaviest sweep
  point, before any measured run; stored, counted and shown, never read for
  a figure. On a fresh machine the first runs touch memory the hypervisor
  has not backed yet (docs/statistics.md, bench/warmup_cost.py).

Where the evidence run goes: among the repetitions of its sweep point, after
ceil(R/2) of the R clean ones, so it sits in the middle of them in time and
slow drift (page cache, memory fragmentation, a neighbour's load) moves the
clean median and the evidence run alike. With the interleaved order the
repetitions are passes over all points, so the evidence runs form one pass of
their own in the middle of the campaign; with R = 1 that pass comes last, so
an interrupted campaign has its headline figures first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, get_args

PointRole = Literal["clean", "evidence", "inline", "warmup"]
CollectMode = Literal["separate", "inline", "off"]

POINT_ROLES: tuple[PointRole, ...] = get_args(PointRole)
COLLECT_MODES: tuple[CollectMode, ...] = get_args(CollectMode)
HEADLINE_ROLES: frozenset[str] = frozenset({"clean", "inline"})
INSTRUMENTED_ROLES: frozenset[str] = frozenset({"evidence", "inline"})


def counts_for_headline(role: str) -> bool:
    """True for the rows headline statistics (values, curves, CIs) are computed from."""
    return role in HEADLINE_ROLES


def is_evidence(role: str) -> bool:
    """True for the rows the diagnosis reads collectors' evidence from."""
    return role == "evidence"


def is_clean(role: str) -> bool:
    """True for the headline repetitions no collector ran in: what a perturbation is
    measured against."""
    return role == "clean"


def is_warmup(role: str) -> bool:
    """True for the discarded warm-up runs."""
    return role == "warmup"


def instrumented(role: str) -> bool:
    """True when the collectors run at a point of this role."""
    return role in INSTRUMENTED_ROLES


class Run(Protocol):
    """What the rules below read of a stored point (fslab.store.db.PointRow)."""

    @property
    def role(self) -> str: ...

    @property
    def status(self) -> str: ...


def is_headline_run(run: Run) -> bool:
    """A successful headline repetition: the one rule for which rows headline figures
    (values, curves, summaries, comparisons, scaling, --until-ci) are computed from."""
    return run.status == "ok" and counts_for_headline(run.role)


def is_evidence_run(run: Run) -> bool:
    """A successful evidence run: the rows the diagnosis reads collectors' evidence from."""
    return run.status == "ok" and is_evidence(run.role)


def repetition_role(mode: CollectMode) -> PointRole:
    """The role of a headline repetition under a collection mode."""
    return "inline" if mode == "inline" else "clean"


def repetition_roles(repeat: int, mode: CollectMode) -> list[tuple[PointRole, int]]:
    """(role, repetition index) of one sweep point's runs, in run order.

    Indices count per role: clean runs 0..R-1, the evidence run 0. With
    mode 'separate' the evidence run follows the first ceil(R/2) clean ones.
    """
    role = repetition_role(mode)
    runs: list[tuple[PointRole, int]] = [(role, rep) for rep in range(repeat)]
    if mode == "separate":
        runs.insert((repeat + 1) // 2, ("evidence", 0))
    return runs


def mode_of_roles(roles: Iterable[str]) -> CollectMode:
    """The collection mode a campaign's rows were planned with (for campaigns
    stored without it): any evidence row means separate, any inline one inline."""
    seen = set(roles)
    if "evidence" in seen:
        return "separate"
    if "inline" in seen:
        return "inline"
    return "off"
