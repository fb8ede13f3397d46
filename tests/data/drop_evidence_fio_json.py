"""Drop fio's JSON from the evidence runs of a campaign export (IN OUT), for small test data.

Used by tests/data/report_capture.sh: reports read latency distributions from
clean runs only, and fio.json (json+ with per-job bins) is most of an export.
"""

import json
import sys

source, target = sys.argv[1], sys.argv[2]
with open(source) as fh:
    data = json.load(fh)
for point in data["points"]:
    if point.get("role") == "evidence":
        point["artifacts"].pop("fio.json", None)
with open(target, "w") as fh:
    json.dump(data, fh, indent=1)
    fh.write("\n")
