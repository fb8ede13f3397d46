"""Export the latest campaign of a corpus database, trimmed for git, to stdout.

    python trim.py DB > case.json

The export is fslab's own (store.exchange.export_campaign). Trimming drops
only what the diagnosis never reads: fio's full JSON (the headline metrics
are already stored as metrics) and the raw collector dumps; the on-CPU
profile keeps every stack with at least MIN_STACK_SAMPLES samples and cuts
the rarer ones back from the leaf, a frame at a time, until they merge into
a stack that has that many: the callers, where the rules' frames mostly sit,
stay, and so does every sample. (Cases exported before firstwrite folded
rare stacks into one `[trimmed]` stack per thread, which hid a spread-out
profile's frames.)
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
    stacks: dict[tuple[str, ...], int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit():
            key = tuple(stack.split(";"))
            stacks[key] = stacks.get(key, 0) + int(count)
    while True:
        rare = [k for k, n in stacks.items() if n < MIN_STACK_SAMPLES and len(k) > 2]
        if not rare:
            break
        deepest = max(len(k) for k in rare)
        for key in [k for k in rare if len(k) == deepest]:
            stacks[key[:-1]] = stacks.get(key[:-1], 0) + stacks.pop(key)
    return "".join(f"{';'.join(k)} {n}\n" for k, n in sorted(stacks.items()))


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
