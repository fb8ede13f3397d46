"""The recorded spaced campaigns (bench/spaced) as the tests read them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fslab.store.db import Store
from fslab.store.exchange import import_campaign


def spaced_exports(directory: Path) -> list[dict]:
    """Every campaign export under `directory`, in file order."""
    out = []
    for path in sorted(directory.glob("**/campaign-*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            out.append(json.load(handle))
    return out


def without_steal(exports: list[dict]) -> list[dict]:
    """The exports as a store before fslab recorded the host's steal (host_cpu dropped)."""
    for point in (p for data in exports for p in data["points"]):
        point["facts"].pop("host_cpu", None)
    return exports


def imported(db: Path, exports: list[dict]) -> Store:
    """A new store at `db` holding the exports (the caller closes it)."""
    store = Store(db)
    for data in exports:
        import_campaign(store, data)
    return store
