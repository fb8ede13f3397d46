"""Export the latest campaign of a corpus database, trimmed for git, to stdout.

    python trim.py DB > case.json

The export is fslab's own (store.exchange.export_campaign). Trimming drops
only what the diagnosis never reads: fio's full JSON (the headline metrics
are already stored as metrics) and the raw collector dumps; the on-CPU
profile keeps every stack with at least MIN_STACK_SAMPLES samples and folds
the rest into one `[trimmed]` stack per thread, so shares are unchanged.
"""

from __future__ import annotations

import json
import sys

from fslab.store.db import Store
from fslab.store.exchange import export_campaign

KEEP_ARTIFACTS = (
    "profile.oncpu.folded",
    "profile.offcpu.folded",
    "offcpu.top.tsv",
    "workqueue.tsv",
)
MIN_STACK_SAMPLES = 3


def trim_folded(text: str) -> str:
    kept, folded = [], {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        if int(count) >= MIN_STACK_SAMPLES:
            kept.append(line)
        else:
            comm = stack.split(";", 1)[0]
            folded[comm] = folded.get(comm, 0) + int(count)
    kept += [f"{comm};[trimmed] {n}" for comm, n in sorted(folded.items())]
    return "\n".join(kept) + "\n"


def main() -> None:
    store = Store(sys.argv[1])
    data = export_campaign(store, store.latest_campaign_id())
    for point in data["points"]:
        artifacts = point.get("artifacts") or {}
        point["artifacts"] = {k: v for k, v in artifacts.items() if k in KEEP_ARTIFACTS}
        if "profile.oncpu.folded" in point["artifacts"]:
            point["artifacts"]["profile.oncpu.folded"] = trim_folded(
                point["artifacts"]["profile.oncpu.folded"]
            )
    json.dump(data, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
