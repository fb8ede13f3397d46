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


def imported(db: Path, exports: list[dict]) -> Store:
    """A new store at `db` holding the exports (the caller closes it)."""
    store = Store(db)
    for data in exports:
        import_campaign(store, data)
    return store
