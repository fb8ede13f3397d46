"""Per configuration and sweep value: the headline figure over repetitions.

The spread is the minimum and maximum of the repetitions (not a standard
deviation): with the handful of repetitions a campaign has, the range is the
honest description. Latency is the median over repetitions of each
repetition's p99 from merged histogram bins; percentiles are never averaged.
Only headline repetitions (clean, inline) enter these figures; a sweep
point's evidence run is reported beside them with its perturbation.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.stats import outlier_mask
from fslab.base.format import format_change_pct
from fslab.base.roles import (
    counts_for_headline,
    is_clean,
    is_evidence,
    is_evidence_run,
    is_headline_run,
    is_warmup,
)
from fslab.base.vocab import PointKey, ScalarValue, point_key, point_label, sweep_order
from fslab.store.db import PointRow
from fslab.workload.registry import headline_metric, latency_metric


@dataclass(frozen=True)
class Perturbation:
    """How much the instruments moved one sweep point's headline."""

    metric: str
    evidence: float  # the evidence run's headline
    clean_median: float  # median of the clean repetitions
    n_clean: int

    @property
    def ratio(self) -> float:
        return self.evidence / self.clean_median

    @property
    def pct(self) -> float:
        """Signed change in percent (-19.0: the evidence run was 19 % lower)."""
        return 100.0 * (self.ratio - 1.0)

    def describe(self) -> str:
        """The sentence reports print, e.g. "evidence run: 7.4K IOPS vs 9.1K clean,
        perturbation -19%"."""
        return (
            f"evidence run: {format_value(self.metric, self.evidence, word=True)} vs "
            f"{format_value(self.metric, self.clean_median)} clean, "
            f"perturbation {format_change_pct(self.pct)}"
        )


def perturbation_of(
    members: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]], headline: str | None
) -> Perturbation | None:
    """The evidence run among one sweep point's rows against their clean median.

    None without a successful evidence run with the headline, or without
    clean repetitions (a campaign run inline never measured without instruments).
    """
    if headline is None:
        return None
    evidence = _evidence_values(members, metrics, headline)
    clean = [
        metrics[p.id][headline]
        for p in members
        if is_headline_run(p) and is_clean(p.role) and headline in metrics.get(p.id, {})
    ]
    if not evidence or not clean or statistics.median(clean) <= 0:
        return None
    return Perturbation(headline, evidence[-1], statistics.median(clean), len(clean))


def _evidence_values(
    members: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]], headline: str | None
) -> list[float]:
    """The headline of each successful evidence run among one sweep point's rows."""
    if headline is None:
        return []
    return [
        metrics[p.id][headline]
        for p in members
        if is_evidence_run(p) and headline in metrics.get(p.id, {})
    ]


def campaign_metrics(
    points: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]]
) -> tuple[str | None, str | None]:
    """The campaign's headline and latency metric, the ones each of its tables carries: the
    first candidates (base.vocab) any successful headline repetition has."""
    ok = [metrics.get(p.id, {}) for p in points if is_headline_run(p)]
    values: dict[str, set[str]] = {}
    for p in points:
        for axis, value in p.sweep.items():
            values.setdefault(axis, set()).add(str(value))
    swept = [axis for axis, seen in values.items() if len(seen) > 1]
    return headline_metric(ok, swept), latency_metric(ok)


@dataclass
class RowFacts:
    """What a row's points say about free space and ext4's free-cluster watermark."""

    ext4_watermark_bytes: int | None = None
    below_ext4_watermark: bool | None = None
    free_bytes_start: float | None = None  # the first point's, when the workload started
    filled: bool = False  # the filesystem was filled before the workload

    def to_dict(self) -> dict[str, float | bool]:
        """As `fslab show --json` prints them: only what the points said."""
        out: dict[str, float | bool] = {
            k: v for k, v in asdict(self).items() if v is not None and k != "filled"
        }
        if self.filled:
            out["filled"] = True
        return out


@dataclass
class SummaryRow:
    config: str
    sweep: dict[str, ScalarValue]
    n_ok: int
    n_failed: int
    headline: str | None
    median: float | None
    minimum: float | None
    maximum: float | None
    latency: str | None
    latency_median: float | None
    values: list[float] = field(default_factory=list)
    facts: RowFacts = field(default_factory=RowFacts)
    evidence: float | None = None  # the evidence run's headline
    perturbation_pct: float | None = None  # evidence vs clean median, signed %
    evidence_failed: bool = False  # the point's evidence run failed

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "facts": self.facts.to_dict()}


def summarize(
    points: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]]
) -> list[SummaryRow]:
    """One row per (configuration, sweep values): configurations in first-seen spec order,
    points in value order within each."""
    headline, latency = campaign_metrics(points, metrics)
    groups: dict[tuple[str, PointKey], list[PointRow]] = {}
    for point in sorted(points, key=lambda p: p.seq):
        groups.setdefault((point.config, point_key(point.sweep)), []).append(point)
    config_order = list(dict.fromkeys(p.config for p in sorted(points, key=lambda p: p.seq)))
    rows: list[SummaryRow] = []
    for (config, _), members in sorted(
        groups.items(), key=lambda item: (config_order.index(item[0][0]), sweep_order(item[0][1]))
    ):
        rows.append(_row(config, members, metrics, headline, latency))
    return rows


def _row(
    config: str,
    members: Sequence[PointRow],
    metrics: Mapping[int, Mapping[str, float]],
    headline: str | None,
    latency: str | None,
) -> SummaryRow:
    headline_rows = [p for p in members if counts_for_headline(p.role)]
    ok = [p for p in members if is_headline_run(p)]
    perturbation = perturbation_of(members, metrics, headline)
    evidence = _evidence_values(members, metrics, headline)
    values = [metrics[p.id][headline] for p in ok if headline and headline in metrics.get(p.id, {})]
    lat_values = [
        metrics[p.id][latency] for p in ok if latency and latency in metrics.get(p.id, {})
    ]
    facts = RowFacts()
    for p in ok:
        if p.facts.ext4_watermark_bytes is not None:
            facts.ext4_watermark_bytes = p.facts.ext4_watermark_bytes
        if p.facts.below_ext4_watermark is not None:
            facts.below_ext4_watermark = p.facts.below_ext4_watermark
        free = metrics.get(p.id, {}).get("fs.free_bytes_start")
        if free is not None and facts.free_bytes_start is None:
            facts.free_bytes_start = free
        if "fs.fill_bytes" in metrics.get(p.id, {}):
            facts.filled = True
    return SummaryRow(
        config=config,
        sweep=dict(members[0].sweep),
        n_ok=len(ok),
        n_failed=sum(1 for p in headline_rows if p.status == "failed"),
        headline=headline,
        median=statistics.median(values) if values else None,
        minimum=min(values) if values else None,
        maximum=max(values) if values else None,
        latency=latency,
        latency_median=statistics.median(lat_values) if lat_values else None,
        values=values,
        facts=facts,
        evidence=evidence[-1] if evidence else None,
        perturbation_pct=perturbation.pct if perturbation else None,
        evidence_failed=any(is_evidence(p.role) and p.status == "failed" for p in members),
    )


def watermark_relevant(rows: Sequence[SummaryRow]) -> bool:
    """ext4's free-cluster watermark matters for dd-style writes or pre-filled filesystems."""
    has_ext4 = any(r.facts.ext4_watermark_bytes is not None for r in rows)
    relevant = any(r.facts.filled or r.headline == "dd.bw_bytes_s" for r in rows)
    return has_ext4 and relevant


@dataclass(frozen=True)
class SetAsideRun:
    """A run to name beside the figures: a warm-up (discarded) or an outlier (kept in
    the medians, never deciding a verdict alone)."""

    config: str
    sweep: dict[str, ScalarValue]
    seq: int
    status: str
    value: float | None  # its headline
    median: float | None = None  # its point's median (outliers)

    def label(self, headline: str | None) -> str:
        where = f"{self.config} {point_label(self.sweep, empty='')}".strip()
        if self.value is None:
            return f"{where} #{self.seq}: {self.status}"
        figure = format_value(headline, self.value)
        if self.median is None:
            return f"{where}: {figure}"
        median = format_value(headline, self.median)
        return f"{where} #{self.seq}: {figure} (its point's median {median})"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def warmup_runs(
    points: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]], headline: str | None
) -> list[SetAsideRun]:
    """The campaign's warm-up runs, in run order."""
    return [
        SetAsideRun(
            p.config,
            dict(p.sweep),
            p.seq,
            p.status,
            metrics.get(p.id, {}).get(headline) if headline else None,
        )
        for p in sorted(points, key=lambda p: p.seq)
        if is_warmup(p.role) and p.status != "pending"
    ]


def outlier_runs(
    points: Sequence[PointRow], metrics: Mapping[int, Mapping[str, float]], headline: str | None
) -> list[SetAsideRun]:
    """Headline runs far outside their point's other runs (stats.outlier_mask)."""
    if headline is None:
        return []
    groups: dict[tuple[str, PointKey], list[tuple[PointRow, float]]] = {}
    for p in sorted(points, key=lambda p: p.seq):
        value = metrics.get(p.id, {}).get(headline)
        if is_headline_run(p) and value is not None:
            groups.setdefault((p.config, point_key(p.sweep)), []).append((p, value))
    found = []
    for runs in groups.values():
        values = [v for _, v in runs]
        middle = statistics.median(values)
        for (p, value), far in zip(runs, outlier_mask(values), strict=True):
            if far:
                found.append(SetAsideRun(p.config, dict(p.sweep), p.seq, p.status, value, middle))
    return found


def describe_warmups(runs: Sequence[SetAsideRun], headline: str | None) -> str | None:
    """The sentence every report prints about the warm-up runs (None: there were none)."""
    if not runs:
        return None
    listed = "; ".join(r.label(headline) for r in runs)
    return (
        f"warm-up: {len(runs)} run(s) discarded, one per configuration at its heaviest point "
        f"before any measured run: {listed}"
    )


def describe_outliers(runs: Sequence[SetAsideRun], headline: str | None) -> str | None:
    """The sentence every report prints about outlier runs (None: there were none)."""
    if not runs:
        return None
    listed = "; ".join(r.label(headline) for r in runs)
    return (
        f"outliers: {len(runs)} run(s) far from their point's other runs, kept in the "
        f"medians and never deciding a verdict alone: {listed}"
    )
