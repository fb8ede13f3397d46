"""What differs between the hosts of a cross-host comparison, before any verdict.

A campaign's figure on one machine against another's is only read right next
to what the machines are: the CPU model and counts (nr_cpu_ids sizes ext4's
free-cluster watermark), memory, kernel, the device under the filesystem and
the limits put on it. `fslab compare ID --by host` prints these first; each
pair's comparison then carries its drift warnings (analyze/drift.py) as any
two campaigns do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fslab.analyze.noise.model import spec_fingerprint
from fslab.base.errors import FslabError
from fslab.base.format import format_bytes
from fslab.store.db import CampaignRow, Store
from fslab.store.facts import DeviceFacts


@dataclass(frozen=True)
class HostFact:
    label: str
    values: list[str]  # one per host, in the order of the campaigns

    @property
    def differs(self) -> bool:
        return len(set(self.values)) > 1

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.label, "values": self.values, "differs": self.differs}


def _device(campaign: CampaignRow) -> str:
    device = campaign.device or DeviceFacts(kind="?")
    size = format_bytes(device.size_bytes) if device.size_bytes else "?"
    if device.kind == "device":
        model = device.model or "unknown model"
        return f"{model} {device.resolved_path or device.path or ''} {size}".strip()
    if device.kind == "ram":
        return f"RAM-backed loop image {size}"
    return f"loop image in {device.image_dir or '?'} {size}"


def _limits(campaign: CampaignRow) -> str:
    limits = campaign.spec.target.limits
    if limits is None:
        return "none"
    set_limits = limits.model_dump(mode="json", exclude_none=True)
    return ", ".join(f"{k}={v}" for k, v in sorted(set_limits.items())) or "none"


FACTS: tuple[tuple[str, Callable[[CampaignRow], str]], ...] = (
    ("host", lambda c: c.hostname),
    ("campaign", lambda c: f"{c.id} ({c.started_at.replace('+00:00', '')})"),
    ("CPU model", lambda c: c.host.cpu_model),
    ("online CPUs", lambda c: str(c.host.online_cpus)),
    ("nr_cpu_ids", lambda c: str(c.host.nr_cpu_ids)),
    ("memory", lambda c: format_bytes(c.host.memory_bytes)),
    ("kernel", lambda c: c.host.kernel_release),
    ("cpufreq governor", lambda c: c.host.cpu_governor),
    ("device", _device),
    ("device limits", _limits),
    ("fio", lambda c: c.host.fio_version),
    ("fslab", lambda c: c.fslab_version),
)


def host_facts_side_by_side(campaigns: Sequence[CampaignRow]) -> list[HostFact]:
    return [HostFact(label, [get(c) for c in campaigns]) for label, get in FACTS]


def campaigns_across_hosts(store: Store, campaign_id: int) -> list[CampaignRow]:
    """The campaign, then the latest finished campaign of the same spec on each other host."""
    baseline = store.campaign(campaign_id)
    fingerprint = spec_fingerprint(baseline.spec)
    latest: dict[str, CampaignRow] = {}
    for campaign in store.campaigns():
        if campaign.hostname == baseline.hostname or campaign.status == "running":
            continue
        if spec_fingerprint(campaign.spec) == fingerprint:
            latest[campaign.hostname] = campaign  # ordered by id: the last one wins
    if not latest:
        raise FslabError(
            f"campaign {campaign_id} ({baseline.name} on {baseline.hostname}): no other host "
            f"in {store.location} has a campaign of the same spec (see `fslab list`)"
        )
    return [baseline, *(latest[h] for h in sorted(latest))]
