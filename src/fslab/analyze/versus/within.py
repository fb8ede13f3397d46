"""Comparisons inside one campaign: configurations and the values of a sweep axis.

What `fslab compare ID --by filesystem` and `--by AXIS` show, and what the
report, the reply and the campaign's questions read from them: each other
configuration (or axis value) against one baseline, with the samples and the
verdicts of `analyze.versus.comparisons`, plus the profile shares that differ
most and the verdicts at one sweep point.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from fslab.analyze.campaign.dataset import CampaignData
from fslab.analyze.campaign.verdicts import ComparisonRow, ComparisonTable, compare
from fslab.analyze.curve.falloff import campaign_falloffs
from fslab.analyze.versus.comparisons import (
    Comparison,
    default_metrics,
    ordered,
    samples,
    select_metrics,
)
from fslab.analyze.versus.guests import guest_summary
from fslab.base.errors import UsageError
from fslab.base.vocab import PointKey


def compare_configs(
    data: CampaignData, baseline: str | None = None, metrics: Iterable[str] | None = None
) -> dict[str, ComparisonTable]:
    """Every other configuration against `baseline` (default: the campaign's,
    CampaignData.baseline_config), by sweep point."""
    configs = data.configs()
    base = baseline or data.baseline_config()
    if base is None or base not in configs:
        raise UsageError(
            f"no configuration {base!r} in campaign {data.id} (it has: {', '.join(configs)})"
        )
    if len(configs) < 2:
        raise UsageError(f"campaign {data.id} has one configuration ({base}): nothing to compare")
    names = list(metrics) if metrics is not None else default_metrics(data)
    base_samples = samples(data, names, base)
    return {
        config: ordered(compare(base_samples, samples(data, names, config)), names)
        for config in configs
        if config != base
    }


def config_comparisons(
    data: CampaignData, baseline: str | None = None, patterns: Iterable[str] | None = None
) -> list[Comparison]:
    """What `fslab compare ID --by filesystem` shows: one table per other config."""
    names = select_metrics([data], patterns)
    base = baseline or data.baseline_config()
    tables = compare_configs(data, base, names)
    assert base is not None  # compare_configs raised for a campaign without configurations
    falloffs = campaign_falloffs(data)  # where each side falls off: the one falloff model

    def details(config: str) -> dict[str, str]:
        return {c: falloffs[c].reason for c in (base, config) if c in falloffs}

    return [Comparison(base, config, table, details(config)) for config, table in tables.items()]


def axis_comparisons(
    data: CampaignData,
    axis: str,
    baseline: str | None = None,
    patterns: Iterable[str] | None = None,
) -> list[Comparison]:
    """What `fslab compare ID --by AXIS` shows: one table per other value of the axis."""
    if axis not in data.axes():
        swept = ", ".join(data.axes()) or "none"
        raise UsageError(f"--by {axis}: campaign {data.id} does not sweep {axis} (axes: {swept})")
    values = list(dict.fromkeys(str(p.sweep[axis]) for p in data.points if axis in p.sweep))
    base = baseline if baseline is not None else values[0]
    if base not in values:
        raise UsageError(
            f"--baseline {base!r}: {axis} takes {', '.join(values)} in campaign {data.id}"
        )
    if len(values) < 2:
        raise UsageError(f"--by {axis}: campaign {data.id} has one value ({base})")
    names = select_metrics([data], patterns)
    base_samples = samples(data, names, where=(axis, base))

    def details(value: str) -> dict[str, str]:
        return {f"{axis}={v}": axis_detail(data, axis, v) for v in (base, value)}

    return [
        Comparison(
            f"{axis}={base}",
            f"{axis}={value}",
            ordered(compare(base_samples, samples(data, names, where=(axis, value))), names),
            details(value),
        )
        for value in values
        if value != base
    ]


def axis_detail(data: CampaignData, axis: str, value: str) -> str:
    """What one value of an axis ran on: the guest's kernel, CPUs and accelerator."""
    guests = [
        p.facts.guest
        for p in data.points
        if str(p.sweep.get(axis)) == value and p.facts.guest is not None
    ]
    return guest_summary(guests) or "on the host"


PROFILE_SHARES = "profile.inclusive.*"  # perf-profile call-chain shares (children)


PROFILE_ROWS = 6  # profile shares added to a configuration comparison


def changed_profile_shares(
    data: CampaignData, baseline: str, limit: int = PROFILE_ROWS
) -> list[str]:
    """The call-chain shares that differ most between `baseline` and any other config.

    Ranked by the largest difference of mean share; for the report's table
    in the kernel test robot's form, judged as a family of their own so they
    take no power from the headline rows.
    """
    names = [n for n in data.metric_names() if fnmatch.fnmatchcase(n, PROFILE_SHARES)]

    def mean_share(config: str, name: str) -> float:
        values = [v for runs in data.values(name, config).values() for v in runs]
        return sum(values) / len(values) if values else 0.0

    others = [c for c in data.configs() if c != baseline]
    gaps = {
        name: max(
            (abs(mean_share(c, name) - mean_share(baseline, name)) for c in others), default=0.0
        )
        for name in names
    }
    ranked = sorted((n for n in names if gaps[n] > 0), key=lambda n: (-gaps[n], n))
    return ranked[:limit]


def with_profile_shares(
    data: CampaignData, comparisons: list[Comparison], baseline: str
) -> list[Comparison]:
    """Append each configuration's profile-share rows (their own BH family) to its table."""
    shares = changed_profile_shares(data, baseline)
    if not shares:
        return comparisons
    tables = compare_configs(data, baseline, shares)
    for comparison in comparisons:
        extra = tables.get(comparison.candidate)
        if extra is not None:
            comparison.table.rows += extra.rows
            ordered(comparison.table, [*default_metrics(data), *shares])
    return comparisons


@dataclass(frozen=True)
class PointVerdict:
    """One configuration against another at one sweep point, on the headline metric."""

    baseline: str
    candidate: str
    row: ComparisonRow


def verdicts_at(data: CampaignData, baseline: str, point: PointKey) -> list[PointVerdict]:
    """Every other configuration against `baseline` at `point`: what a change of setup buys.

    The rows come from the same tables `fslab compare ID --by filesystem
    --baseline BASELINE` prints (headline and latency p99 at every point in
    the Benjamini-Hochberg family), so the verdicts and p values agree with it.
    """
    if data.headline is None or len(data.configs()) < 2 or baseline not in data.configs():
        return []
    found = []
    for comparison in config_comparisons(data, baseline):
        table = comparison.table
        headline = table.headline
        row = next((r for r in table.rows if r.point == point and r.metric == headline), None)
        if row is not None:
            found.append(PointVerdict(baseline, comparison.candidate, row))
    return found
