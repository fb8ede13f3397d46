"""Export the spaced-campaign recording for the repository: one gzipped JSON per campaign.

    .venv/bin/python bench/spaced/export.py bench/spaced/data/spaced.db

Writes bench/spaced/data/campaign-NNN.json.gz (fslab's export format) for
every complete campaign, with the artifacts (fio's JSON output, 70 kB a
point) left out: the metrics are what bench/stats_calibration.py and the
tests read. Running it again rewrites the files from the database.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from fslab.store.db import Store
from fslab.store.exchange import export_campaign

OUT = Path(__file__).parent / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--out", type=Path, default=OUT, help=f"directory (default {OUT})")
    parser.add_argument(
        "--source", default="bench/spaced/record.sh", help="the script that recorded the database"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with Store(args.db) as store:
        done = [c for c in store.campaigns() if c.status == "complete"]
        for campaign in done:
            data = export_campaign(store, campaign.id)
            for point in data["points"]:
                point["artifacts"] = {}
            data["captured"] = (
                f"{args.source}, campaign {campaign.id} of {args.db.name}; "
                "artifacts dropped (fio.json), metrics as measured"
            )
            path = args.out / f"campaign-{campaign.id:03d}.json.gz"
            # mtime=0: the same campaign always gives the same bytes
            with gzip.GzipFile(path, "wb", mtime=0) as raw:
                raw.write(json.dumps(data, indent=1, sort_keys=True).encode())
        print(f"{len(done)} campaign(s) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
