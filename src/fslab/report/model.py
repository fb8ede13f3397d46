"""A campaign's report, built once from the store: `build_report` and the sections it assembles.

The text, HTML and JSON renderers all read the one tree built here (its
types: report.tree), so the three formats never disagree. The sections that
read only the measurements (campaign, results, scaling, latency,
comparisons) and the diagnosis are assembled in this module; those with a
subject of their own are built beside it: the setup (report.setup_facts),
the recipe that reproduces a point by hand (report.recipe), and the focus
points with the collector evidence read at them (report.evidence).
"""

from __future__ import annotations

import statistics

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.plotted import headline_bars, latency_distribution
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.analyze.campaign.summary import (
    SummaryRow,
    describe_outliers,
    describe_warmups,
    outlier_runs,
    summarize,
    warmup_runs,
    watermark_relevant,
)
from fslab.analyze.curve.scaling import ScaleReport, fit_campaign
from fslab.analyze.history.series import Series, build_series, select_campaigns
from fslab.analyze.versus.comparisons import Comparison
from fslab.analyze.versus.within import config_comparisons, with_profile_shares
from fslab.base.errors import FslabError
from fslab.base.roles import is_evidence, mode_of_roles
from fslab.base.timing import CampaignTiming
from fslab.base.vocab import PERCENTILES, point_key
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.report.diagnosis_text import describe_diagnosis
from fslab.report.evidence import (
    build_contention,
    build_profiles,
    evidence_run,
    focus_points,
)
from fslab.report.recipe import build_reproduce
from fslab.report.setup_facts import build_setup
from fslab.report.tree import (
    CampaignInfo,
    Comparisons,
    Diagnosis,
    DiagnosisEntry,
    FailedPoint,
    Latency,
    LatencyCdf,
    LatencyCurve,
    PointRef,
    Report,
    ResultRow,
    Results,
    Scaling,
)
from fslab.store.db import Store
from fslab.workload.registry import metric_label


def build_report(store: Store, campaign_id: int) -> Report:
    """Everything the renderers show, read from the store once."""
    data = load_campaign(store, campaign_id)
    worst, best = focus_points(data)
    evidence = (evidence_run(data, worst), evidence_run(data, best))
    return Report(
        campaign=_campaign_info(data),
        setup=build_setup(store, data),
        reproduce=build_reproduce(store, data, worst),
        results=_results(data),
        scaling=_scaling(data),
        latency=_latency(store, data, worst, best),
        comparisons=_comparisons(data),
        profiles=build_profiles(store, data, worst, best, evidence),
        contention=build_contention(store, data, worst, best, evidence),
        diagnosis=_diagnosis(store, data, worst),
        series=_series(store, data),
    )


def _series(store: Store, data: CampaignData) -> Series | None:
    """Every stored campaign of this one's name, with change points; None if it is alone."""
    campaigns = select_campaigns(store, name=data.campaign.name)
    if len(campaigns) < 2:
        return None
    return build_series(store, campaigns, data.campaign.name)


def _campaign_info(data: CampaignData) -> CampaignInfo:
    c = data.campaign
    counts = {s: sum(1 for p in data.points if p.status == s) for s in ("ok", "failed", "pending")}
    mode = str(c.overrides.collect or mode_of_roles(p.role for p in data.points))
    timings = [t for p in data.points if (t := p.facts.point_timing)]
    return CampaignInfo(
        id=c.id,
        name=c.name,
        description=c.spec.description,
        status=c.status,
        started_at=c.started_at,
        ended_at=c.ended_at,
        fslab_version=c.fslab_version,
        overrides=c.overrides,
        points_total=len(data.points),
        points_ok=counts["ok"],
        points_failed=counts["failed"],
        points_pending=counts["pending"],
        points_evidence=sum(1 for p in data.points if is_evidence(p.role)),
        collect_mode=mode,
        collect_text=COLLECT_TEXT.get(mode, mode),
        timing=CampaignTiming.total(timings) if timings else None,
    )


COLLECT_TEXT = {
    "separate": "headline figures from clean repetitions (no collector); collector "
    "evidence from one extra instrumented run per sweep point, whose own headline is "
    "shown next to the clean median as its perturbation",
    "inline": "collectors ran in every repetition (--collect=inline): headline figures "
    "were measured under the instruments, and how much they moved them was not measured",
    "off": "no collector ran: headline figures only, no kernel evidence",
}


# --- results --------------------------------------------------------------------


def _latency_family(data: CampaignData) -> str | None:
    if data.latency is None:
        return None
    return data.latency.rsplit("_", 1)[0]


def _results(data: CampaignData) -> Results:
    rows = summarize(data.points, data.metrics)
    family = _latency_family(data)
    out_rows = [_result_row(data, row, family) for row in rows]
    notes = []
    if data.headline is None:
        notes.append("no successful point has a throughput metric: nothing to tabulate")
    if data.latency is None and data.headline == "dd.bw_bytes_s":
        notes.append("dd reports only a rate: no latency percentiles")
    pending = sum(1 for p in data.points if p.status == "pending")
    if pending:
        notes.append(f"{pending} point(s) not run yet: fslab run --resume {data.id}")
    warmups = warmup_runs(data.points, data.metrics, data.headline)
    outliers = outlier_runs(data.points, data.metrics, data.headline)
    set_aside = [
        line
        for line in (
            describe_warmups(warmups, data.headline),
            describe_outliers(outliers, data.headline),
        )
        if line
    ]
    return Results(
        headline=data.headline,
        headline_label=metric_label(data.headline),
        latency=data.latency,
        latency_label=metric_label(data.latency),
        latency_family=family,
        axes=data.axes(),
        rows=out_rows,
        failures=_failures(data),
        pending=pending,
        watermark_relevant=watermark_relevant(rows),
        notes=notes,
        warmups=warmups,
        outliers=outliers,
        set_aside=set_aside,
    )


def _result_row(data: CampaignData, row: SummaryRow, family: str | None) -> ResultRow:
    key = point_key(row.sweep)
    percentiles: dict[str, float | None] = {}
    for q in PERCENTILES:
        values = data.values(f"{family}_{q}", row.config).get(key, []) if family else []
        percentiles[q] = statistics.median(values) if values else None
    return ResultRow(
        config=row.config,
        sweep=dict(row.sweep),
        n_ok=row.n_ok,
        n_failed=row.n_failed,
        median=row.median,
        minimum=row.minimum,
        maximum=row.maximum,
        values=list(row.values),
        latency_p99=row.latency_median,
        percentiles=percentiles,
        evidence=row.evidence,
        perturbation_pct=row.perturbation_pct,
        evidence_failed=row.evidence_failed,
        free_bytes_start=row.facts.free_bytes_start,
        watermark_bytes=row.facts.ext4_watermark_bytes,
        below_watermark=row.facts.below_ext4_watermark,
        filled=row.facts.filled,
    )


def _failures(data: CampaignData) -> list[FailedPoint]:
    failed = []
    for p in data.points:
        if p.status != "failed":
            continue
        tail = [line for line in (p.stderr or "").strip().splitlines() if line.strip()][-5:]
        failed.append(FailedPoint(p.seq, p.config, dict(p.sweep), p.error or "", tail))
    return failed


# --- scaling and latency curves -----------------------------------------------------


def _scaling(data: CampaignData) -> Scaling:
    try:
        fitted: ScaleReport = fit_campaign(data)
    except FslabError as exc:
        return Scaling(None, data.headline, [], [], [f"no scaling fit: {exc}"])
    notes = [f"no scaling fit: {fitted.reason}"] if fitted.reason else []
    return Scaling(
        axis=fitted.axis,
        metric=fitted.metric,
        curves=fitted.curves,
        moves=[m.to_dict() for m in fitted.moves],
        notes=notes,
    )


def _latency(
    store: Store, data: CampaignData, worst: PointRef | None, best: PointRef | None
) -> Latency:
    family = _latency_family(data)
    notes: list[str] = []
    if family is None:
        why = (
            "dd reports only a rate, no latency"
            if data.headline == "dd.bw_bytes_s"
            else "no successful point has latency percentiles"
        )
        return Latency(None, "latency", [], [], [why])
    axis = data.concurrency_axis()
    curves: list[LatencyCurve] = []
    if axis is None:
        notes.append("no concurrency axis swept: latency is in the results table only")
    else:
        for config in data.configs():
            curves += _latency_curves(data, config, family, axis)
    cdfs = []
    for role, ref in (("worst", worst), ("best", best)):
        if ref is None:
            continue
        cdf, why = _cdf(store, ref, family, role)
        if cdf is not None:
            cdfs.append(cdf)
        else:
            notes.append(why)
    return Latency(family, metric_label(family), curves, cdfs, notes)


def _latency_curves(data: CampaignData, config: str, family: str, axis: str) -> list[LatencyCurve]:
    by_q = {q: data.curve(config, f"{family}_{q}", axis) for q in PERCENTILES}
    curves = []
    for rest, (ns, _) in by_q["p99"].items():
        values: dict[str, list[float | None]] = {}
        for q in PERCENTILES:
            q_ns, q_reps = by_q[q].get(rest, ([], []))
            lookup = {n: statistics.median(reps) for n, reps in zip(q_ns, q_reps, strict=True)}
            values[q] = [lookup.get(n) for n in ns]
        curves.append(LatencyCurve(config, dict(rest), axis, list(ns), values))
    return curves


def _cdf(store: Store, ref: PointRef, family: str, role: str) -> tuple[LatencyCdf | None, str]:
    text = store.artifact(ref.point_id, "fio.json")
    if text is None:
        return None, f"{role} point {ref.label}: no fio.json stored, so no latency distribution"
    try:
        dist = latency_distribution(text, family)
    except (FslabError, ValueError) as exc:
        return None, f"{role} point {ref.label}: {exc}"
    return LatencyCdf(role, ref, family, dist.samples, dist.values_ns, dist.cumulative), ""


# --- comparisons ------------------------------------------------------------------


def _comparisons(data: CampaignData) -> Comparisons:
    configs = data.configs()
    with_results = data.configs_with_results()
    notes: list[str] = []
    metrics = [m for m in (data.headline, data.latency) if m]
    if len(configs) < 2:
        notes.append(f"one configuration ({', '.join(configs) or 'none'}): nothing to compare")
        return Comparisons(None, metrics, [], [], data.headline, 0, notes)
    if not with_results:
        notes.append("no configuration has a successful point: nothing to compare")
        return Comparisons(None, metrics, [], [], data.headline, 0, notes)
    baseline = data.baseline_config()
    assert baseline is not None  # there are configurations with results
    if baseline != configs[0]:
        notes.append(
            f"the first configuration, {configs[0]}, has no successful point; "
            f"{baseline} is the baseline instead"
        )
    items: list[Comparison] = []
    try:
        items = [
            c
            for c in with_profile_shares(data, config_comparisons(data, baseline), baseline)
            if c.candidate in with_results or c.table.rows
        ]
    except FslabError as exc:
        notes.append(f"no comparison: {exc}")
    for config in configs:
        if config != baseline and config not in with_results:
            notes.append(f"{config}: no successful point, not compared")
    reps = [min(r.n_baseline, r.n_candidate) for c in items for r in c.table.rows]
    min_reps = min(reps, default=0)
    if items and min_reps < MIN_REPS:
        notes.append(
            f"{min_reps} run(s) per point on a side: a verdict needs {MIN_REPS} or more "
            "(rerun with --set run.repeat=N); rows say 'needs more runs'"
        )
    return Comparisons(
        baseline, metrics, items, headline_bars(data, with_results), data.headline, min_reps, notes
    )


# --- diagnosis --------------------------------------------------------------------


def _diagnosis(store: Store, data: CampaignData, worst: PointRef | None) -> Diagnosis:
    """The diagnosis per configuration; a report never fails for it."""
    try:
        found = diagnose_campaign(store, data.id)
    except Exception as exc:  # the rest of the report stands without it
        return Diagnosis(False, [], [f"diagnosis unavailable: {type(exc).__name__}: {exc}"])
    focus = worst.config if worst is not None else None
    entries = [
        DiagnosisEntry(d.config, list(describe_diagnosis(d)), d.to_dict(), d.config == focus, d)
        for d in found
    ]
    notes = [] if entries else ["diagnosis found no configuration to diagnose"]
    return Diagnosis(True, entries, notes)
