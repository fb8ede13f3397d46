"""The stored campaigns that repeat a spec on a host, and the noise model they give.

A campaign's baselines are every stored campaign with the same spec
fingerprint on the same host and kernel (analyze.noise), in time order.
`fslab calibrate` records some on purpose; every ordinary campaign that
repeats a spec adds one. Groups of campaigns (`fslab compare 12,14,16
13,15,17`) fit the model over both sides and the baselines of each side's
spec, each side and each spec's other campaigns around their own mean.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fslab.analyze.comparisons import (
    Comparison,
    campaign_comparisons,
    group_comparisons,
    samples,
    select_metrics,
)
from fslab.analyze.dataset import CampaignData, load_campaign
from fslab.analyze.noise import NoiseModel, fit_point_noise, host_key, spec_fingerprint
from fslab.errors import UsageError
from fslab.store.db import CampaignRow, Store
from fslab.vocab import PointKey


def same_spec(campaign: CampaignRow, other: CampaignRow) -> bool:
    return _cell(campaign) == _cell(other)


def baseline_campaigns(
    store: Store, reference: CampaignRow, exclude: Iterable[int] = ()
) -> list[CampaignRow]:
    """Campaigns of the reference's spec on its host, oldest first (reference included)."""
    left_out = set(exclude)
    return [
        c
        for c in store.campaigns()
        if c.id not in left_out and c.status != "running" and same_spec(reference, c)
    ]


def fit_model(
    campaigns: Sequence[CampaignData],
    metrics: Iterable[str],
    *,
    host: str,
    fingerprint: str,
    blocks: Mapping[int, Hashable] | None = None,
) -> NoiseModel:
    """Per (point, metric) variance components over the given campaigns (`blocks`:
    campaign id -> the block whose own mean it spreads around; default one block)."""
    names = list(metrics)
    by_point: dict[tuple[PointKey, str], dict[int, list[float]]] = {}
    for data in campaigns:
        for point, values in samples(data, names).items():
            for metric, runs in values.items():
                by_point.setdefault((point, metric), {})[data.id] = runs
    model = NoiseModel(host=host, fingerprint=fingerprint, baseline_ids=[c.id for c in campaigns])
    for (point, metric), by_campaign in by_point.items():
        noise = fit_point_noise(by_campaign, blocks)
        if noise is not None:
            model.points[(point, metric)] = noise
    return model


def noise_model(
    store: Store, reference: CampaignRow, metrics: Iterable[str], exclude: Iterable[int] = ()
) -> NoiseModel:
    """The model for comparisons against `reference`, from its spec's stored campaigns.

    `exclude` leaves campaigns out of the fit: the candidate of a comparison,
    whose difference is what is being judged, not noise.
    """
    rows = baseline_campaigns(store, reference, exclude)
    return fit_model(
        [load_campaign(store, c.id) for c in rows],
        metrics,
        host=host_key(reference),
        fingerprint=spec_fingerprint(reference.spec),
    )


def compare_with_noise(
    store: Store, baseline_id: int, candidate_id: int, patterns: Iterable[str] | None = None
) -> list[Comparison]:
    """`fslab compare A B`: the table judged with the noise model of A's spec (B left out)."""
    a, b = load_campaign(store, baseline_id), load_campaign(store, candidate_id)
    names = select_metrics([a, b], patterns)
    noise = noise_model(store, a.campaign, names, exclude=[candidate_id])
    return campaign_comparisons(a, b, patterns, noise)


@dataclass(frozen=True)
class GroupModel:
    """Two groups of campaigns and the noise model fitted over them and their baselines."""

    baseline: list[CampaignData]
    candidate: list[CampaignData]
    others: list[int]  # other stored campaigns of either side's spec, in the fit
    metrics: list[str]
    noise: NoiseModel

    def comparisons(self, candidate: Sequence[CampaignData] | None = None) -> list[Comparison]:
        """The comparison table; `candidate` replaces the candidate side's data (a bench
        scaling a metric: the model is unchanged, as the side's own mean absorbs a shift)."""
        return group_comparisons(
            self.baseline, candidate or self.candidate, self.metrics, self.noise,
            baselines=self.others,
        )  # fmt: skip


def group_model(
    store: Store,
    baseline_ids: Sequence[int],
    candidate_ids: Sequence[int],
    patterns: Iterable[str] | None = None,
    *,
    own_means: bool = False,
) -> GroupModel:
    """The noise model of a comparison of groups, fitted over both sides' campaigns and
    every other stored campaign of either side's spec on its host (analyze.noise).

    Campaigns spread around the mean of their (spec, host): when the sides
    differ in either, each side's campaign effects are measured around its own
    mean (shared with the other stored campaigns of its spec), so the
    difference under test does not count as drift; when both sides repeat
    one spec on one host nothing recorded sets them apart and all its
    campaigns share one mean. `own_means` gives each side its own mean even
    then (bench/stats_calibration.py: an A/A check of the two-spec case).
    """
    sides = [
        _side(store, ids, label)
        for ids, label in ((baseline_ids, "baseline"), (candidate_ids, "candidate"))
    ]
    both = [*baseline_ids, *candidate_ids]
    for cid in both:
        if both.count(cid) > 1:
            raise UsageError(f"campaign {cid} is given twice: each campaign on one side, once")
    names = select_metrics([d for side in sides for d in side], patterns)
    blocks: dict[int, Hashable] = {
        d.id: (_cell(d.campaign), side_name if own_means else "")
        for side, side_name in zip(sides, "AB", strict=True)
        for d in side
    }
    others: list[CampaignData] = []
    for side in sides:
        for row in baseline_campaigns(
            store, side[0].campaign, exclude=[*both, *(c.id for c in others)]
        ):
            others.append(load_campaign(store, row.id))
            blocks[row.id] = (_cell(row), "")
    a = sides[0][0].campaign
    noise = fit_model(
        [*sides[0], *sides[1], *others],
        names,
        host=host_key(a),
        fingerprint=spec_fingerprint(a.spec),
        blocks=blocks,
    )
    return GroupModel(sides[0], sides[1], [c.id for c in others], names, noise)


def _cell(campaign: CampaignRow) -> tuple[str, str]:
    """What campaigns must share to repeat one condition: spec fingerprint and host."""
    return spec_fingerprint(campaign.spec), host_key(campaign)


def compare_with_noise_groups(
    store: Store,
    baseline_ids: Sequence[int],
    candidate_ids: Sequence[int],
    patterns: Iterable[str] | None = None,
) -> list[Comparison]:
    """`fslab compare 12,14,16 13,15,17`: the levels of two groups of campaigns."""
    return group_model(store, baseline_ids, candidate_ids, patterns).comparisons()


def _side(store: Store, ids: Sequence[int], label: str) -> list[CampaignData]:
    """A side's campaigns; all must repeat one spec on one host (exit 2 naming the odd one)."""
    side = [load_campaign(store, cid) for cid in ids]
    first = side[0].campaign
    for data in side[1:]:
        c = data.campaign
        for what, mine, theirs in (
            ("spec fingerprint", spec_fingerprint(c.spec), spec_fingerprint(first.spec)),
            ("host", host_key(c), host_key(first)),
        ):
            if mine != theirs:
                raise UsageError(
                    f"campaign {c.id} on the {label} side: {what} {mine!r} differs from "
                    f"campaign {first.id}'s {theirs!r}; a side's campaigns must repeat one spec "
                    "on one host"
                )
    return side
