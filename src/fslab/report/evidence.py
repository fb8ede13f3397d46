"""The focus points, where their collector evidence is read, and the two sections built on it.

The focus points come from analyze.curve.falloff, the one rule for best and worst
point: the configuration with the deepest falloff, its worst point and its
best point, so "best vs worst" contrasts one configuration across its sweep
(what changed as it fell off), not two filesystems, and names the same
points as the diagnosis.

Headline figures come from the headline repetitions (clean or inline); the
collector evidence shown for a focus point (profiles, contention) comes from
its evidence run (`CampaignData.evidence_row`), and every report states how
much that run was perturbed by the instruments. The Profiles and Contention
sections are the two readers of that evidence, so they are built here, next
to the rule that picks it.
"""

from __future__ import annotations

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.plotted import jbd2_pairs, wchan_rows, workqueue_rows
from fslab.analyze.curve.falloff import campaign_falloffs, focus_config
from fslab.analyze.curve.point_profile import NoProfile, ProfileKind, load_profile
from fslab.base.roles import is_evidence
from fslab.base.vocab import point_key
from fslab.collect.registry import ALL_COLLECTORS
from fslab.report.tree import Contention, EvidenceRun, PointRef, Profiles, ProfileSection
from fslab.stacks.profile import diff
from fslab.store.db import PointRow, Store
from fslab.workload.registry import metric_label

PROFILE_KINDS: tuple[ProfileKind, ...] = ("oncpu", "offcpu")
CHAINS = 3  # perf-style chains are 15-20 lines each: the top three tell the story
DIFF_ROWS = 12
COLLECTOR_FAMILIES = frozenset().union(*(c.families() for c in ALL_COLLECTORS.values()))


# --- focus points -----------------------------------------------------------------


def point_ref(data: CampaignData, point: PointRow) -> PointRef:
    """A stored point as the sections name it, with its headline figure."""
    headline = data.metrics.get(point.id, {}).get(data.headline) if data.headline else None
    return PointRef(
        point.id, point.seq, point.config, dict(point.sweep), point.repeat, point.role, headline
    )


def evidence_run(data: CampaignData, ref: PointRef | None) -> EvidenceRun | None:
    """The run a focus point's evidence is read from, and the sentence that says so."""
    if ref is None:
        return None
    key = point_key(ref.sweep)
    row = data.evidence_row(ref.config, key)
    perturbation = data.perturbation(ref.config, key)
    pct = perturbation.pct if perturbation else None
    if row is not None and is_evidence(row.role):
        statement = (
            perturbation.describe()
            if perturbation
            else "evidence run (no clean repetition succeeded to compare it with)"
        )
        return EvidenceRun(point_ref(data, row), statement, pct)
    if row is not None:
        return EvidenceRun(
            point_ref(data, row),
            f"inline: the collectors ran in every repetition, so the headline was measured "
            f"under them (perturbation not measured); evidence from repetition {row.repeat}, "
            "the one closest to the median",
            None,
        )
    failed = [
        p
        for p in data.points
        if is_evidence(p.role)
        and p.status == "failed"
        and p.config == ref.config
        and point_key(p.sweep) == key
    ]
    if failed:
        return EvidenceRun(None, f"the evidence run failed: {failed[-1].error}", None)
    return EvidenceRun(None, "no instrumented run at this point (collectors off)", None)


def focus_points(data: CampaignData) -> tuple[PointRef | None, PointRef | None]:
    """(worst, best) of the focus configuration, as analyze.curve.falloff decides them.

    The focus configuration is the one with the deepest falloff (else the
    first); its worst and best sweep points are the falloff model's, each
    shown through the headline repetition that stands for it
    (CampaignData.typical_row), so every section names the same points as the
    diagnosis; their collector evidence is their sweep point's evidence run.
    """
    focus = focus_config(campaign_falloffs(data))
    if focus is None:
        return None, None
    worst = data.typical_row(focus.config, focus.worst.key)
    best = data.typical_row(focus.config, focus.best.key) if focus.best != focus.worst else None
    return (point_ref(data, worst) if worst else None), (point_ref(data, best) if best else None)


# --- profiles ---------------------------------------------------------------------


def build_profiles(
    store: Store,
    data: CampaignData,
    worst: PointRef | None,
    best: PointRef | None,
    evidence: tuple[EvidenceRun | None, EvidenceRun | None],
) -> Profiles:
    notes = []
    if worst is None:
        notes.append("no successful point with a throughput metric: no worst point to profile")
        empty = [_empty_profile(kind) for kind in PROFILE_KINDS]
        return Profiles(None, best, "", empty[0], empty[1], notes=notes)
    why = (
        f"{worst.config}, the configuration with the deepest falloff: its worst point "
        f"(lowest median {metric_label(data.headline)} at or past its peak) and its best"
    )
    if best is None:
        notes.append("a single sweep point: no best-vs-worst difference")
    worst_ev, best_ev = evidence
    sections = [
        _profile_section(store, data, kind, worst_ev, best_ev if best else None)
        for kind in PROFILE_KINDS
    ]
    return Profiles(worst, best, why, sections[0], sections[1], worst_ev, best_ev, notes)


def _empty_profile(kind: ProfileKind) -> ProfileSection:
    return ProfileSection(kind, _profile_title(kind), None, 0, None, [], "")


def _profile_title(kind: ProfileKind) -> str:
    return "on-CPU (perf)" if kind == "oncpu" else "off-CPU (blocked threads)"


def _profile_section(
    store: Store,
    data: CampaignData,
    kind: ProfileKind,
    worst_ev: EvidenceRun | None,
    best_ev: EvidenceRun | None,
) -> ProfileSection:
    """The profile of the worst point's evidence run, and its difference from the best's."""
    section = _empty_profile(kind)
    if worst_ev is None or worst_ev.point is None:
        section.notes.append(f"worst point: {worst_ev.statement if worst_ev else 'none'}")
        return section
    worst = worst_ev.point
    section.point = worst
    try:
        profile = load_profile(store, data, data.point(worst.point_id), kind)
    except NoProfile as exc:
        section.notes.append(str(exc))
        return section
    section.profile = profile
    section.samples = profile.total
    section.idle_share = profile.idle_share() if kind == "oncpu" else None
    section.chains = profile.hottest_chains(CHAINS)
    section.chains_text = profile.format_chains(section.chains)
    if best_ev is None:
        return section
    if best_ev.point is None:
        section.notes.append(f"best point: {best_ev.statement}")
        return section
    try:
        best_profile = load_profile(store, data, data.point(best_ev.point.point_id), kind)
    except NoProfile as exc:
        section.notes.append(f"best point: {exc}")
        return section
    section.best_profile = best_profile
    a, b = (best_profile.busy(), profile.busy()) if kind == "oncpu" else (best_profile, profile)
    rows = diff(a, b, limit=None, kinds=("function",))
    section.diff_rows = [r for r in rows if not _is_state_frame(r.name)][:DIFF_ROWS]
    return section


def _is_state_frame(name: str) -> bool:
    """Off-CPU stacks carry the thread state as a pseudo-frame ([D], [S]): not code."""
    return len(name) == 3 and name[0] == "[" and name[2] == "]"


# --- contention -------------------------------------------------------------------


def build_contention(
    store: Store,
    data: CampaignData,
    worst: PointRef | None,
    best: PointRef | None,
    evidence: tuple[EvidenceRun | None, EvidenceRun | None],
) -> Contention:
    if worst is None:
        return Contention(
            best, None, [], [], [], None, notes=["no worst point: nothing to contrast"]
        )
    worst_ev, best_ev = evidence
    w_run = worst_ev.point if worst_ev else None
    b_run = best_ev.point if best_ev and best else None
    w = data.metrics.get(w_run.point_id, {}) if w_run else {}
    b = data.metrics.get(b_run.point_id, {}) if b_run else {}
    collectors = store.collectors(w_run.point_id) if w_run else {}
    workqueues = workqueue_rows(w, b)
    jbd2 = jbd2_pairs(w, b)
    wchans, blocked = wchan_rows(w, b)
    notes = []
    if w_run is None and worst_ev is not None:
        notes.append(f"worst point: {worst_ev.statement}: no workqueue, jbd2 or off-CPU evidence")
    elif not any(k.split(".")[0] in COLLECTOR_FAMILIES for k in w):
        notes.append(
            "no collector metrics at the worst point (run with --no-collect, or by an "
            "fslab without collectors): no workqueue, jbd2 or off-CPU evidence"
        )
    else:
        for found, prefix, collector in (
            (workqueues, "wq.", "workqueue"),
            (jbd2, "jbd2.", "jbd2"),
            (wchans, "offcpu.wchan.", "offcpu"),
        ):
            if not found:
                notes.append(_collector_gap(w, collectors, prefix, collector))
    return Contention(
        best=best,
        worst=worst,
        workqueues=workqueues,
        jbd2=jbd2,
        wchans=wchans,
        blocked_threads_worst=blocked,
        worst_evidence=worst_ev,
        best_evidence=best_ev if best else None,
        notes=[n for n in notes if n],
    )


def _collector_gap(
    metrics: dict[str, float], collectors: dict[str, tuple[str, str]], prefix: str, name: str
) -> str:
    """Why the worst point has no metric under `prefix`, from the collectors table."""
    if any(k.startswith(prefix) for k in metrics):
        return ""
    state, reason = collectors.get(name, ("not run", ""))
    if state != "ok":
        return f"{name}: the collector was {state}" + (f": {reason}" if reason else "")
    return f"{name}: {ALL_COLLECTORS[name].no_data}"
