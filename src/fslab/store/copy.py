"""`fslab store copy SRC DST`: move results between SQLite and PostgreSQL.

Each campaign goes through the export format (fslab.store.exchange), so a copy
carries exactly what `fslab export` would. A campaign already in DST (same
name, host and start time) is skipped, so copying again only adds what is new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fslab.store.db import Store
from fslab.store.exchange import export_campaign, import_campaign


@dataclass(frozen=True)
class CopyResult:
    copied: int
    skipped: int
    ids: list[tuple[int, int]]  # (id in SRC, id in DST) of each copied campaign


def copy_store(
    source: str | Path,
    target: str | Path,
    *,
    on_campaign: Callable[[int, int | None], None] | None = None,
) -> CopyResult:
    copied: list[tuple[int, int]] = []
    skipped = 0
    with Store(source) as src, Store(target) as dst:
        for campaign in src.campaigns():
            if dst.find_campaign(campaign) is not None:
                skipped += 1
                if on_campaign:
                    on_campaign(campaign.id, None)
                continue
            new_id = import_campaign(dst, export_campaign(src, campaign.id))
            copied.append((campaign.id, new_id))
            if on_campaign:
                on_campaign(campaign.id, new_id)
    return CopyResult(copied=len(copied), skipped=skipped, ids=copied)
