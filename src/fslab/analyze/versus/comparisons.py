"""Which points to compare, and with what: campaigns and configurations.

`fslab.analyze.campaign.verdicts` judges baseline vs candidate samples; this module
builds those samples from stored campaigns and compares campaigns (the shapes
inside one campaign, configurations and axis values, are in
`analyze.versus.within`). Three shapes are compared:

- two campaigns (the same spec on two kernels, hosts or commits): points
  match by configuration and sweep values, so the key carries the config;
- two configurations of one campaign (`--by filesystem`): points match by
  sweep values alone, each config against one baseline config (the first
  with a successful point: CampaignData.baseline_config, as the report's);
- two values of one sweep axis of one campaign (`--by kernel`, `--by
  possible_cpus`, any axis): points match by config and the other sweep
  values, each value against the first (or the baseline value). Guests
  under TCG are only comparable inside one run, so this is how kernels and
  CPU counts are compared.

Across campaigns, a between-campaign noise model (analyze.noise) judges each
row when the baseline's spec has been calibrated on the host; without one the
verdicts are provisional (the spread inside each campaign understates the
drift between campaigns) and say what to run. Groups of campaigns a side
(`fslab compare 12,14,16 13,15,17`) compare the sides' levels, so the drift
between campaigns shrinks with the campaigns a side. When the baselines'
own level moved (analyze.noise.levels), the model note says the model gave each
level its own mean, or a warning says the sides lie on different levels.

The default metrics are the campaign's headline (throughput) and its latency
p99: the two figures a reader asks about first. Evidence metrics (workqueue
delays, profile shares) are added by glob because there are hundreds of them
and every extra row costs power in the Benjamini-Hochberg family.
"""

from __future__ import annotations

import fnmatch
import math
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.verdicts import ComparisonRow, ComparisonTable, compare, judge, least_p
from fslab.analyze.noise.drift import Drift, host_drift, load_drift
from fslab.analyze.noise.levels import LevelCheck
from fslab.analyze.noise.model import (
    MIN_CAMPAIGNS,
    TEST_NAME,
    NoiseModel,
    PointNoise,
    group_row,
    host_key,
    model_row,
    spec_fingerprint,
)
from fslab.base.errors import UsageError
from fslab.base.format import format_pct
from fslab.base.vocab import PointKey, point_key, point_label
from fslab.workload.registry import metric_label

Samples = dict[PointKey, dict[str, list[float]]]


@dataclass(frozen=True)
class GroupSides:
    """What backs a comparison of groups of campaigns (`fslab compare 12,14 13,15`)."""

    baseline: list[int]  # campaign ids of each side
    candidate: list[int]
    others: list[int]  # other stored campaigns of either side's spec in the noise model
    test: str
    between_cv_pct: dict[str, float]  # headline's between-campaign CV, by point label


@dataclass
class Comparison:
    """One baseline vs candidate table, with labels saying what each side is."""

    baseline: str
    candidate: str
    table: ComparisonTable
    details: dict[str, str] = field(default_factory=dict)  # label -> what it is (campaigns)
    notes: list[str] = field(default_factory=list)  # the noise model used, drift warnings
    provisional: bool = False  # across campaigns without a noise model for every row
    drift: list[Drift] = field(default_factory=list)  # host facts that differ (campaigns)
    groups: GroupSides | None = None  # the groups form: which campaigns back each side
    levels: LevelCheck | None = None  # across campaigns whose baselines' level moved

    def regressions(self, pct: float) -> list[ComparisonRow]:
        return self.table.regressions(pct)

    def to_dict(self, fail_pct: float | None = None) -> dict[str, Any]:
        out = {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "details": dict(self.details),
            "notes": list(self.notes),
            "provisional": self.provisional,
            "drift": [d.to_dict() for d in self.drift],
            **self.table.to_dict(),
        }
        if self.groups is not None:
            out["groups"] = asdict(self.groups)
        if self.levels is not None:
            out["levels"] = self.levels.to_dict()
        if fail_pct is not None:
            out["regressions"] = [row.to_dict() for row in self.regressions(fail_pct)]
        return out


def default_metrics(*campaigns: CampaignData) -> list[str]:
    """Headline and latency p99 of each campaign, first seen first."""
    names = [m for c in campaigns for m in (c.headline, c.latency) if m]
    return list(dict.fromkeys(names))


def select_metrics(
    campaigns: Sequence[CampaignData], patterns: Iterable[str] | None = None
) -> list[str]:
    """Default metrics plus every stored metric matching one of `patterns` (globs).

    Expanded to names here (not left as globs) so the caller can say when a
    pattern matched nothing, instead of silently comparing less.
    """
    chosen = default_metrics(*campaigns)
    available = sorted({name for c in campaigns for name in c.metric_names()})
    for pattern in patterns or ():
        matched = [name for name in available if fnmatch.fnmatchcase(name, pattern)]
        if not matched:
            raise UsageError(f"--metric {pattern!r} matches no stored metric")
        chosen += matched
    return list(dict.fromkeys(chosen))


def samples(
    data: CampaignData,
    metrics: Iterable[str],
    config: str | None = None,
    *,
    where: tuple[str, str] | None = None,
) -> Samples:
    """{point: {metric: per-repetition values}}; the key has the config unless one is given."""
    """`where = (axis, value)`: only the points at that value, keyed without the axis."""
    names = list(metrics)
    out: Samples = {}
    axis, wanted = where or ("", "")
    for p in data.ok_points(config):
        if where is not None and str(p.sweep.get(axis)) != wanted:
            continue
        values = data.metrics.get(p.id, {})
        sweep = point_key(p.sweep, drop=(axis,) if where else ())
        key = sweep if config else (("config", p.config), *sweep)
        for metric in names:
            if metric in values:
                out.setdefault(key, {}).setdefault(metric, []).append(values[metric])
    return out


def compare_campaigns(
    a: CampaignData,
    b: CampaignData,
    metrics: Iterable[str] | None = None,
    noise: NoiseModel | None = None,
) -> ComparisonTable:
    """Campaign b against baseline a, point by point (config + sweep values).

    Rows the noise model covers compare b with the level of a's spec over its
    baseline campaigns (between- and within-campaign variance, analyze.noise);
    the others are judged by compare()'s test on runs.
    """
    names = list(metrics) if metrics is not None else default_metrics(a, b)
    cand = samples(b, names)
    table = compare(samples(a, names), cand)
    if noise is not None:
        _judge_with_model(
            table,
            noise,
            lambda row, point_noise: model_row(
                row.point, row.metric, cand[row.point][row.metric], point_noise
            ),
        )
    return ordered(table, names)


def _spread_to_point(table: ComparisonTable) -> None:
    """Where the candidate's headline runs spread out at a point, the machine was unsteady
    for every metric measured in those runs: each row there takes the headline's F test
    p when it is the smaller (rows the model did not test keep NaN: a no-op for groups)."""
    headline = table.headline
    at_point = {row.point: row.unsteady_p for row in table.rows if row.metric == headline}
    for row in table.rows:
        row.unsteady_p = least_p(row.unsteady_p, at_point.get(row.point, math.nan))


def _judge_with_model(
    table: ComparisonTable,
    noise: NoiseModel,
    measure: Callable[[ComparisonRow, PointNoise], ComparisonRow | None],
) -> None:
    """Replace every row the model covers by `measure`'s, then judge the table again."""
    if not noise.calibrated:
        return
    modelled = 0
    for i, row in enumerate(table.rows):
        point_noise = noise.get(row.point, row.metric)
        replacement = measure(row, point_noise) if point_noise is not None else None
        if replacement is not None:
            table.rows[i] = replacement
            modelled += 1
    _spread_to_point(table)
    judge(table.rows)
    table.settings["noise_model"] = {
        "fingerprint": noise.fingerprint,
        "host": noise.host,
        "baselines": list(noise.baseline_ids),
        "rows_modelled": modelled,
    }


def compare_groups(
    base: Sequence[CampaignData],
    cand: Sequence[CampaignData],
    metrics: Sequence[str],
    noise: NoiseModel,
) -> ComparisonTable:
    """The level of the candidate campaigns against that of the baseline campaigns.

    Rows the noise model covers are measured by analyze.noise.group_row; the
    others by compare()'s test on the runs of each side pooled (provisional).
    """
    by_campaign = [_per_campaign(side, metrics) for side in (base, cand)]
    pooled = [
        {
            p: {m: [v for runs in c.values() for v in runs] for m, c in ms.items()}
            for p, ms in side.items()
        }
        for side in by_campaign
    ]
    table = compare(pooled[0], pooled[1])

    def measure(row: ComparisonRow, point_noise: PointNoise) -> ComparisonRow | None:
        a, b = (side[row.point][row.metric] for side in by_campaign)
        return group_row(row.point, row.metric, a, b, point_noise)

    _judge_with_model(table, noise, measure)
    return ordered(table, metrics)


def _per_campaign(
    side: Sequence[CampaignData], metrics: Sequence[str]
) -> dict[PointKey, dict[str, dict[int, list[float]]]]:
    """{point: {metric: {campaign id: runs}}} over a side's campaigns."""
    out: dict[PointKey, dict[str, dict[int, list[float]]]] = {}
    for data in side:
        for point, values in samples(data, metrics).items():
            for metric, runs in values.items():
                out.setdefault(point, {}).setdefault(metric, {})[data.id] = runs
    return out


def unmodelled_rows(table: ComparisonTable) -> list[ComparisonRow]:
    """Rows judged on runs alone (no between-campaign model covered them)."""
    return [row for row in table.rows if row.test != TEST_NAME]


def campaign_comparisons(
    a: CampaignData,
    b: CampaignData,
    patterns: Iterable[str] | None = None,
    noise: NoiseModel | None = None,
    *,
    levels: LevelCheck | None = None,
) -> list[Comparison]:
    """What `fslab compare A B` shows: one table, campaign b against campaign a.

    `noise` is the between-campaign model of a's spec (analyze.history.baselines);
    without it, or where it does not cover a row, the verdicts are provisional.
    `levels`: where a and b lie when the baselines' level moved (analyze.noise.levels).
    """
    names = select_metrics([a, b], patterns)
    table = compare_campaigns(a, b, names, noise)
    labels = [f"campaign {a.id}", f"campaign {b.id}"]
    if a.id == b.id:
        labels = [f"campaign {a.id} (A)", f"campaign {b.id} (B)"]
    details = {label: _campaign_detail(c) for label, c in zip(labels, (a, b), strict=True)}
    model_note = noise.describe() if noise else "no between-campaign noise model"
    comparison = _across_campaigns(
        Comparison(labels[0], labels[1], table, details, levels=levels),
        ([a], [b]),
        [_with_level_note(model_note, levels)],
        "inside each campaign only",
        f"calibrate with `{calibrate_command(a)}`",
    )
    if noise is not None and (unsteady := _unsteady_note(table, noise, labels[1])):
        comparison.notes.append(unsteady)
    return [comparison]


def _unsteady_note(table: ComparisonTable, noise: NoiseModel, candidate: str) -> str | None:
    """Which rows were not judged because the candidate's runs spread out (analyze.noise),
    with the spread that showed it at each point."""
    rows = [row for row in table.rows if row.unsteady]
    if not rows:
        return None
    shown: dict[PointKey, ComparisonRow] = {}
    for row in rows:  # the row whose runs spread the most surely at each point
        if row.point not in shown or row.unsteady_p < shown[row.point].unsteady_p:
            shown[row.point] = row
    said = []
    for row in shown.values():
        point_noise = noise.get(row.point, row.metric)
        usual = format_pct(point_noise.steady_cv_pct, 1) if point_noise else "less"
        said.append(
            f"{metric_label(row.metric)} at {point_label(row.point)} "
            f"{format_pct(row.sd_pct_candidate, 1)} "
            f"(a typical campaign of the spec: {usual}; F test p {row.unsteady_p:.2g})"
        )
    return (
        f"unsteady: {candidate}'s runs spread more than the spec's campaigns' usually do: "
        f"{'; '.join(said)}. The machine or the candidate was unsteady while they ran, so "
        f"the {len(rows)} row(s) at {'that point' if len(shown) == 1 else 'those points'} "
        "are not judged; run it again: a steady rerun is judged, and one unsteady again "
        "points at the candidate"
    )


def _with_level_note(note: str, levels: LevelCheck | None, *, groups: bool = False) -> str:
    """The model note, and what the model did with the levels when the baselines' moved."""
    said = levels.note(groups=groups) if levels is not None else None
    return f"{note}; {said}" if said else note


def _across_campaigns(
    comparison: Comparison,
    sides: tuple[Sequence[CampaignData], Sequence[CampaignData]],
    model_notes: Sequence[str],
    runs_judged: str,
    to_run: str,
) -> Comparison:
    """Drift and level warnings, what judged the rows, and provisional when the model
    left rows (host facts from each side's first campaign, steal from all its runs)."""
    base, cand = sides
    comparison.drift = host_drift(base[0].campaign.host, cand[0].campaign.host) + load_drift(
        [p.facts for c in base for p in c.ok_points()],
        [p.facts for c in cand for p in c.ok_points()],
    )
    comparison.notes += [d.describe() for d in comparison.drift]
    if comparison.levels is not None:
        warning = comparison.levels.warning(
            comparison.baseline, comparison.candidate, groups=comparison.groups is not None
        )
        comparison.notes += [warning] if warning else []
    comparison.notes += model_notes
    loose = unmodelled_rows(comparison.table)
    comparison.provisional = bool(loose)
    if loose:
        comparison.notes.append(
            f"provisional: {len(loose)} of {len(comparison.table.rows)} row(s) judged on the "
            f"runs {runs_judged}, which understates the drift between campaigns; {to_run}"
        )
    return comparison


def group_comparisons(
    base: Sequence[CampaignData],
    cand: Sequence[CampaignData],
    names: Sequence[str],
    noise: NoiseModel,
    *,
    baselines: Sequence[int] = (),
    levels: LevelCheck | None = None,
) -> list[Comparison]:
    """What `fslab compare 12,14,16 13,15,17` shows: one table, the candidate
    campaigns' level against the baseline campaigns'.

    `noise` is fitted over both sides and `baselines` (the other stored
    campaigns of either side's spec), each side around its own mean
    (analyze.history.baselines.compare_with_noise_groups); `levels`, where the sides lie
    when the baseline spec's level moved (analyze.noise.levels).
    """
    table = compare_groups(base, cand, names, noise)
    labels = [_group_label(side) for side in (base, cand)]
    details = {label: _group_detail(side) for label, side in zip(labels, (base, cand), strict=True)}
    drift = _between_cv(table, noise, names[0] if names else "")
    sides = GroupSides(
        baseline=[d.id for d in base],
        candidate=[d.id for d in cand],
        others=list(baselines),
        test=TEST_NAME if noise.calibrated else "test on runs (no between-campaign model)",
        between_cv_pct=drift,
    )
    cvs = ", ".join(f"{format_pct(cv, 1)} at {label}" for label, cv in drift.items())
    notes = [
        f"{sides.test}, {len(base)} vs {len(cand)} campaigns"
        + (f", between-campaign CV {cvs} ({metric_label(names[0])})" if drift else "")
    ]
    if noise.calibrated:
        pooling = _pooling_note(base, cand, noise, baselines, levels)
        notes.append(_with_level_note(pooling, levels, groups=True))
    elif levels is not None and (said := levels.note(groups=True)):
        notes.append(said)
    comparison = _across_campaigns(
        Comparison(labels[0], labels[1], table, details, groups=sides, levels=levels),
        (base, cand),
        notes,
        "of each side pooled",
        f"the drift needs {MIN_CAMPAIGNS - 1} degrees of freedom, the campaigns less one per "
        "spec and host (2 campaigns a side, or stored campaigns of the specs): give more "
        f"campaigns a side, or calibrate with `{calibrate_command(base[0])}`",
    )
    return [comparison]


def _pooling_note(
    base: Sequence[CampaignData],
    cand: Sequence[CampaignData],
    noise: NoiseModel,
    baselines: Sequence[int],
    levels: LevelCheck | None = None,
) -> str:
    """Where the between-campaign variance came from (analyze.history.baselines.group_model)."""
    ids = f" ({_ids(baselines)})" if baselines else ""
    blocks = max((p.blocks for p in noise.points.values()), default=1)
    per_level = len(levels.levels) if levels is not None and levels.by_level else 1
    if blocks <= per_level:
        mean = "one mean" if per_level == 1 else "one mean a level"
        return (
            f"between-campaign variance from both sides and {len(baselines)} other stored "
            f"campaign(s) of the spec{ids}, around {mean}: the sides repeat one spec on one host"
        )
    same = {(spec_fingerprint(s[0].campaign.spec), host_key(s[0].campaign)) for s in (base, cand)}
    why = "" if len(same) == 1 else " (the sides differ in spec or host)"
    return (
        "between-campaign variance pooled from both sides' campaigns, each side around its "
        f"own mean{why}, plus {len(baselines)} other stored campaign(s) of either side's "
        f"spec{ids}"
    )


def _between_cv(table: ComparisonTable, noise: NoiseModel, metric: str) -> dict[str, float]:
    """The between-campaign CV of `metric` at each compared point, by point label."""
    return {
        point_label(point_key(dict(row.point), drop=("config",))): point_noise.between_cv_pct
        for row in table.rows
        if row.metric == metric and (point_noise := noise.get(row.point, row.metric)) is not None
    }


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(i) for i in ids)


def _group_label(side: Sequence[CampaignData]) -> str:
    return f"campaign {side[0].id}" if len(side) == 1 else f"campaigns {_ids([d.id for d in side])}"


def _group_detail(side: Sequence[CampaignData]) -> str:
    """Name, kernel, host and the span of start times of a side's campaigns."""
    first = side[0].campaign
    starts = sorted(d.campaign.started_at[:16] for d in side)  # to the minute, UTC
    last = starts[-1][11:] if starts[-1][:10] == starts[0][:10] else starts[-1]
    span = f"{starts[0]}Z" if len(starts) == 1 else f"{starts[0]}Z..{last}Z"
    return (
        f"{first.name}, {first.host.fact('kernel_release') or '?'} on "
        f"{first.host.fact('hostname') or '?'}, {span}"
    )


def calibrate_command(data: CampaignData) -> str:
    """The `fslab calibrate` command line that would back comparisons against `data`."""
    overrides = data.campaign.overrides
    words = ["fslab", "calibrate", overrides.source or data.campaign.name]
    if overrides.quick:
        words.append("--quick")
    for item in overrides.set:
        words += ["--set", shlex.quote(str(item))]
    return " ".join([*words, "--times", "5", "--spacing", "10m"])


def min_repetitions(comparisons: Sequence[Comparison]) -> int:
    """The smallest repetition count on any compared row (0 when nothing compared)."""
    counts = [min(row.n_baseline, row.n_candidate) for c in comparisons for row in c.table.rows]
    return min(counts, default=0)


def ordered(table: ComparisonTable, names: Sequence[str]) -> ComparisonTable:
    """Rows by point (as stored), then metrics in the order asked: headline first."""
    rank = {name: i for i, name in enumerate(names)}
    points = list(dict.fromkeys(row.point for row in table.rows))
    table.rows.sort(key=lambda row: (points.index(row.point), rank.get(row.metric, len(rank))))
    return table


def _campaign_detail(data: CampaignData) -> str:
    """Name, kernel, host and start time: what differs between two campaigns."""
    host = data.campaign.host
    return (
        f"{data.campaign.name}, {host.fact('kernel_release') or '?'} on "
        f"{host.fact('hostname') or '?'}, {data.campaign.started_at.replace('+00:00', 'Z')}"
    )
