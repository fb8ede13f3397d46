"""The stored campaigns that repeat a spec on a host, and the noise model they give.

A campaign's baselines are every stored campaign with the same spec
fingerprint on the same host and kernel (analyze.noise), in time order.
`fslab calibrate` records some on purpose; every ordinary campaign that
repeats a spec adds one. Groups of campaigns (`fslab compare 12,14,16
13,15,17`) fit the model over both sides and the baselines of each side's
spec, each side and each spec's other campaigns around their own mean.

When the baselines' own level moved (the spec's headline series has a
change point, as `fslab series` shows it), a comparison whose sides lie on
one level gets a model with a mean per level, and one whose sides lie on
different levels keeps the one-mean model and warns (analyze.noise.levels holds
the rule).

Runs record the host's steal; where it slows the headline within campaigns,
every campaign of a comparison is first taken to zero steal (analyze.noise.slowdown,
which says why the CPU-speed probe the runs also record is not taken out),
and so are a bisection's references and candidate (bisect_model).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.history.position import Verdict, decide
from fslab.analyze.history.series import series_of
from fslab.analyze.noise.levels import LevelCheck, LevelMove, place
from fslab.analyze.noise.model import NoiseModel, fit_point_noise, host_key, spec_fingerprint
from fslab.analyze.noise.slowdown import SlowdownFit, take_out_slowdown
from fslab.analyze.versus.comparisons import (
    Comparison,
    campaign_comparisons,
    group_comparisons,
    samples,
    select_metrics,
)
from fslab.base.errors import UsageError
from fslab.base.vocab import PointKey, point_label
from fslab.store.db import CampaignRow, Store


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
    reference: Hashable | None = None,
) -> NoiseModel:
    """Per (point, metric) variance components over the given campaigns (`blocks`:
    campaign id -> the block whose own mean it spreads around; default one block;
    `reference`: the block whose mean is the level, default every campaign's)."""
    names = list(metrics)
    by_point: dict[tuple[PointKey, str], dict[int, list[float]]] = {}
    for data in campaigns:
        for point, values in samples(data, names).items():
            for metric, runs in values.items():
                by_point.setdefault((point, metric), {})[data.id] = runs
    model = NoiseModel(host=host, fingerprint=fingerprint, baseline_ids=[c.id for c in campaigns])
    for (point, metric), by_campaign in by_point.items():
        noise = fit_point_noise(by_campaign, blocks, reference)
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


def level_moves(campaigns: Sequence[CampaignData]) -> list[LevelMove]:
    """Where the headline level of these campaigns (oldest first) moved: the change points
    `fslab series` marks (analyze.history.series), at any sweep point."""
    series = series_of(campaigns, "baselines")
    if series.metric is None:
        return []
    configs = {dict(point).get("config") for point in series.points}
    one_point = len(series.points) == 1
    moves = []
    for point, changes in series.changes.items():
        shown = point if len(configs) != 1 else tuple(kv for kv in point if kv[0] != "config")
        for cp in changes:
            first = campaigns[cp.index].campaign
            moves.append(
                LevelMove(
                    index=cp.index,
                    campaign_id=first.id,
                    started_at=first.started_at,
                    metric=series.metric,
                    point="" if one_point else point_label(shown),
                    before=cp.mean_before,
                    after=cp.mean_after,
                    p_value=cp.p_value,
                )
            )
    return moves


def level_check(
    series: Sequence[CampaignData],
    baseline_side: Sequence[CampaignData],
    candidate_side: Sequence[CampaignData],
) -> LevelCheck | None:
    """Where the sides lie on the levels of `series`: the baseline side's spec's stored
    campaigns on its host, as `fslab series` lists them (the candidate too when it
    repeats the spec: the level it lies on is read off the series, and the moves are
    those `fslab series` shows); None when the level never moved."""
    ordered = sorted(series, key=lambda d: (d.campaign.started_at, d.id))

    def starts(side: Sequence[CampaignData]) -> list[tuple[int, str]]:
        return [(d.id, d.campaign.started_at) for d in side]

    return place(
        starts(ordered), level_moves(ordered), starts(baseline_side), starts(candidate_side)
    )


@dataclass(frozen=True)
class CampaignModel:
    """The noise model `fslab compare A B` judges with, A's baselines' levels, and A and B
    as judged (their headline with the host's slowdowns taken out)."""

    noise: NoiseModel
    levels: LevelCheck | None  # None: the baselines' level did not move
    a: CampaignData
    b: CampaignData
    slowdown: SlowdownFit | None = None  # None: the headline was not adjusted

    def comparisons(
        self, patterns: Iterable[str] | None = None, candidate: CampaignData | None = None
    ) -> list[Comparison]:
        """The table of A against B (`candidate` replaces B's data: a bench scaling it)."""
        found = campaign_comparisons(
            self.a, candidate or self.b, patterns, self.noise, levels=self.levels
        )
        return [_with_slowdown_note(c, self.slowdown) for c in found]


def _with_slowdown_note(comparison: Comparison, slowdown: SlowdownFit | None) -> Comparison:
    if slowdown is not None:
        comparison.notes.append(slowdown.describe())
    return comparison


def campaign_model(
    store: Store, a: CampaignData, b: CampaignData, metrics: Iterable[str]
) -> CampaignModel:
    """The model of A's spec from its stored campaigns (B left out). When their level moved
    and A and B lie on one level, each level spreads around its own mean and B is compared
    with the mean of theirs (analyze.noise.levels). Every campaign's headline is first taken at
    zero steal where steal slows it (analyze.noise.slowdown)."""
    stored = [load_campaign(store, c.id) for c in baseline_campaigns(store, a.campaign)]
    adjusted, slowdown = take_out_slowdown([a, b, *(d for d in stored if d.id not in (a.id, b.id))])
    by_id = {d.id: d for d in adjusted}
    a, b = by_id[a.id], by_id[b.id]
    loaded = [by_id[d.id] for d in stored]
    fitted = [d for d in loaded if d.id != b.id]
    levels = level_check(loaded, [a], [b])
    blocks: dict[int, Hashable] | None = None
    reference: int | None = None
    if levels is not None and levels.by_level:  # by_level: both sides on level `on`
        blocks = {d.id: levels.level_of(d.campaign.started_at) for d in fitted}
        reference = levels.on
    noise = fit_model(
        fitted,
        metrics,
        host=host_key(a.campaign),
        fingerprint=spec_fingerprint(a.campaign.spec),
        blocks=blocks,
        reference=reference,
    )
    return CampaignModel(noise, levels, a, b, slowdown)


def compare_with_noise(
    store: Store, baseline_id: int, candidate_id: int, patterns: Iterable[str] | None = None
) -> list[Comparison]:
    """`fslab compare A B`: the table judged with the noise model of A's spec (B left out)."""
    a, b = load_campaign(store, baseline_id), load_campaign(store, candidate_id)
    names = select_metrics([a, b], patterns)
    return campaign_model(store, a, b, names).comparisons(patterns)


@dataclass(frozen=True)
class BisectModel:
    """A bisection's references and candidate as judged (their headline with the host's
    slowdowns taken out) and the noise model of the good reference's spec."""

    good: CampaignData
    bad: CampaignData
    candidate: CampaignData
    noise: NoiseModel
    slowdown: SlowdownFit | None = None  # None: the headline was not adjusted

    def verdict(self) -> Verdict:
        """Where the candidate lies between the references (analyze.history.position.decide)."""
        return decide(self.good, self.bad, self.candidate, self.noise, slowdown=self.slowdown)


def bisect_model(
    store: Store,
    good: CampaignData,
    bad: CampaignData,
    candidate: CampaignData,
    metrics: Iterable[str],
) -> BisectModel:
    """The model `fslab bisect-run` judges a candidate with: the stored campaigns of the
    good reference's spec on its host, the bad reference and the candidate left out (what
    is judged is not noise). The host's slowdowns are taken out over all of them together,
    references and candidate included, as `fslab compare` does (campaign_model); called again after
    every round of repetitions, so the slope is refitted on every run so far."""
    judged = (good.id, bad.id, candidate.id)
    stored = [
        load_campaign(store, c.id)
        for c in baseline_campaigns(store, good.campaign, exclude=judged[1:])
    ]
    adjusted, slowdown = take_out_slowdown(
        [good, bad, candidate, *(d for d in stored if d.id not in judged)]
    )
    by_id = {d.id: d for d in adjusted}
    noise = fit_model(
        [by_id[d.id] for d in stored],
        metrics,
        host=host_key(good.campaign),
        fingerprint=spec_fingerprint(good.campaign.spec),
    )
    return BisectModel(by_id[good.id], by_id[bad.id], by_id[candidate.id], noise, slowdown)


@dataclass(frozen=True)
class GroupModel:
    """Two groups of campaigns and the noise model fitted over them and their baselines."""

    baseline: list[CampaignData]
    candidate: list[CampaignData]
    others: list[int]  # other stored campaigns of either side's spec, in the fit
    metrics: list[str]
    noise: NoiseModel
    levels: LevelCheck | None = None  # None: the baseline spec's level did not move
    slowdown: SlowdownFit | None = None  # None: headline not adjusted (analyze.noise.slowdown)

    def comparisons(self, candidate: Sequence[CampaignData] | None = None) -> list[Comparison]:
        """The comparison table; `candidate` replaces the candidate side's data (a bench
        scaling a metric: the model is unchanged, as the side's own mean absorbs a shift)."""
        found = group_comparisons(
            self.baseline, candidate or self.candidate, self.metrics, self.noise,
            baselines=self.others, levels=self.levels,
        )  # fmt: skip
        return [_with_slowdown_note(c, self.slowdown) for c in found]


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

    When the level of the baseline side's spec moved (analyze.noise.levels, on its
    campaigns in the fit) and every campaign of both sides lies on one level,
    the campaigns of each level spread around their own mean as well.
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
    others: list[CampaignData] = []
    for side in sides:
        for row in baseline_campaigns(
            store, side[0].campaign, exclude=[*both, *(c.id for c in others)]
        ):
            others.append(load_campaign(store, row.id))
    adjusted, slowdown = take_out_slowdown([*sides[0], *sides[1], *others])
    by_id = {d.id: d for d in adjusted}
    sides = [[by_id[d.id] for d in side] for side in sides]
    others = [by_id[d.id] for d in others]
    a = sides[0][0].campaign
    series = [d for d in [*sides[0], *sides[1], *others] if _cell(d.campaign) == _cell(a)]
    levels = level_check(series, sides[0], sides[1])

    def block(data: CampaignData, side: str) -> Hashable:
        """(spec and host, side or "", level or 0): the mean a campaign spreads around."""
        by_level = levels is not None and levels.by_level
        level = levels.level_of(data.campaign.started_at) if levels and by_level else 0
        return (_cell(data.campaign), side if own_means else "", level)

    blocks = {d.id: block(d, name) for side, name in zip(sides, "AB", strict=True) for d in side}
    blocks.update({d.id: block(d, "") for d in others})
    noise = fit_model(
        [*sides[0], *sides[1], *others],
        names,
        host=host_key(a),
        fingerprint=spec_fingerprint(a.spec),
        blocks=blocks,
    )
    return GroupModel(sides[0], sides[1], [c.id for c in others], names, noise, levels, slowdown)


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
