"""The campaigns of a fleet run in a store: found by the run's key and the host."""

from __future__ import annotations

from fslab.base.hostfacts import host_name
from fslab.store.db import CampaignRow, Store


def fleet_campaign(store: Store, key: str, host: str | None = None) -> CampaignRow | None:
    """This host's (or the named host's) latest campaign of the fleet run `key`."""
    found = [c for c in store.campaigns(host=host or host_name()) if c.overrides.fleet_key == key]
    return found[-1] if found else None
