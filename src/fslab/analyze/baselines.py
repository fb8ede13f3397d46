"""The stored campaigns that repeat a spec on a host, and the noise model they give.

A campaign's baselines are every stored campaign with the same spec
fingerprint on the same host and kernel (analyze.noise), in time order.
`fslab calibrate` records some on purpose; every ordinary campaign that
repeats a spec adds one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fslab.analyze.comparisons import Comparison, campaign_comparisons, samples, select_metrics
from fslab.analyze.dataset import CampaignData, load_campaign
from fslab.analyze.noise import NoiseModel, fit_point_noise, host_key, spec_fingerprint
from fslab.store.db import CampaignRow, Store
from fslab.vocab import PointKey


def same_spec(campaign: CampaignRow, other: CampaignRow) -> bool:
    return spec_fingerprint(campaign.spec) == spec_fingerprint(other.spec) and host_key(
        campaign.host
    ) == host_key(other.host)


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
    campaigns: Sequence[CampaignData], metrics: Iterable[str], *, host: str, fingerprint: str
) -> NoiseModel:
    """Per (point, metric) variance components over the given campaigns."""
    names = list(metrics)
    by_point: dict[tuple[PointKey, str], dict[int, list[float]]] = {}
    for data in campaigns:
        for point, values in samples(data, names).items():
            for metric, runs in values.items():
                by_point.setdefault((point, metric), {})[data.id] = runs
    model = NoiseModel(host=host, fingerprint=fingerprint, baseline_ids=[c.id for c in campaigns])
    for (point, metric), by_campaign in by_point.items():
        noise = fit_point_noise(by_campaign)
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
        host=host_key(reference.host),
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
