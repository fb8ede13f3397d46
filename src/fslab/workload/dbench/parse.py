"""dbench's stdout to metrics.

Samples: tests/data/workloads/dbench/ext4_c4.txt (and the other *.txt beside
it), captured by tests/data/workloads/dbench/capture.sh.

Parses what dbench 4.0 (Debian dbench 4.0-2.1) prints (ext4_c4.txt: the
shipped loadfile /usr/share/dbench/client.txt, 4 clients, -t 5). After the
per-second progress lines dbench prints a table of the operations of the
measured phase and one summary line:

     Operation      Count    AvgLat    MaxLat
     ----------------------------------------
     NTCreateX      41293     0.030    22.221
     ...
    Throughput 256.293 MB/sec  2 clients  2 procs  max_latency=39.450 ms

What each figure means (dbench.c):

- Throughput: bytes the clients moved per second after the warmup (a fifth
  of -t), in decimal MB (1e6 bytes): the headline, kept in B/s, the catalog's
  unit. It is the last progress sample of the execute phase (printed with
  %g, six significant digits), not a separate measurement.
- max_latency: the longest any client went without finishing an operation
  during the execute phase, in ms: the stall a user would notice.
- the table: per loadfile operation (SMB names: NTCreateX is an open or
  create, WriteX a write, Flush an fsync, Find a readdir ...), how many ran
  in the execute phase, their mean and their longest time, in ms. Which
  operation got slow says which filesystem path is the falloff. Operations
  with no calls are left out of the table, so their metrics are absent.
  -s and -S add "(sync open)", "(sync dirs)" to the summary; -F does not.

Anything else, and a run whose summary line is missing (a client failed, or
the output is cut), raises ToolError.
"""

from __future__ import annotations

import re

from fslab.base.errors import ToolError
from fslab.base.vocab import CatalogEntry, MetricDef

METRICS: tuple[CatalogEntry, ...] = (
    ("dbench.bw_bytes_s", MetricDef("higher", "B/s", "bytes moved per second after warmup")),
    ("dbench.max_latency_ms", MetricDef("lower", "ms", "longest wait for any operation")),
    ("dbench.op.*.count", MetricDef("none", "calls", "operations of one kind in the run")),
    ("dbench.op.*.lat_ms_avg", MetricDef("lower", "ms", "mean time of one operation kind")),
    ("dbench.op.*.lat_ms_max", MetricDef("lower", "ms", "longest time of one operation kind")),
    ("dbench.clients", MetricDef("none", "jobs", "clients dbench ran")),
)
HEADLINE = "dbench.bw_bytes_s"

MB = 1_000_000  # dbench.c: 1.0e-6 * total_bytes / t
_NUM = r"(\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
_BANNER_RE = re.compile(r"^dbench version \S+ - ", re.MULTILINE)
_SUMMARY_RE = re.compile(
    rf"^Throughput {_NUM} MB/sec(?: \(sync open\))?(?: \(sync dirs\))?"
    rf"\s+(\d+) clients\s+(\d+) procs\s+max_latency={_NUM} ms\s*$",
    re.MULTILINE,
)
_TABLE_HEAD_RE = re.compile(r"^ Operation\s+Count\s+AvgLat\s+MaxLat\s*$")
_RULE_RE = re.compile(r"^ -+\s*$")
_OP_RE = re.compile(rf"^ ([A-Za-z]+)\s+(\d+)\s+{_NUM}\s+{_NUM}\s*$")


def parse(stdout: str) -> dict[str, float]:
    """dbench stdout → metrics; ToolError unless it holds one finished run."""
    if not _BANNER_RE.search(stdout):
        first = stdout.strip().splitlines()[:1]
        raise ToolError(
            "not dbench output: no 'dbench version' banner"
            + (f" (starts {first[0][:80]!r})" if first else " (empty)"),
            stdout[-2000:],
        )
    summaries = _SUMMARY_RE.findall(stdout)
    if len(summaries) != 1:
        last = stdout.strip().splitlines()[-1]
        raise ToolError(
            "dbench output has no summary line (a client failed or the output is cut; "
            f"last line {last[:80]!r})"
            if not summaries
            else f"dbench output holds {len(summaries)} runs; parse one at a time",
            stdout[-2000:],
        )
    lines = stdout.splitlines()
    head = next((i for i, line in enumerate(lines) if _TABLE_HEAD_RE.match(line)), None)
    if head is None or head + 1 >= len(lines) or not _RULE_RE.match(lines[head + 1]):
        raise ToolError("dbench output has no operation table", stdout[-2000:])
    mb_per_s, clients, _procs, max_latency_ms = summaries[0]
    metrics = {
        "dbench.bw_bytes_s": float(mb_per_s) * MB,
        "dbench.max_latency_ms": float(max_latency_ms),
        "dbench.clients": float(clients),
    }
    for line in lines[head + 2 :]:
        op = _OP_RE.match(line)
        if op is None:
            break
        name = op.group(1).lower()
        metrics[f"dbench.op.{name}.count"] = float(op.group(2))
        metrics[f"dbench.op.{name}.lat_ms_avg"] = float(op.group(3))
        metrics[f"dbench.op.{name}.lat_ms_max"] = float(op.group(4))
    if not any(key.startswith("dbench.op.") for key in metrics):
        raise ToolError("dbench output has an empty operation table", stdout[-2000:])
    return metrics
