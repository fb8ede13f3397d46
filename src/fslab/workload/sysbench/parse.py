"""sysbench fileio's run output to metrics.

Samples: tests/data/workloads/sysbench/ext4_rndwr_t4.txt (and the other *.txt
beside it), captured by tests/data/workloads/sysbench/capture.sh.

Parses what sysbench 1.0.20 (Debian sysbench 1.0.20+ds-5) prints for
``sysbench fileio ... run`` (ext4_rndwr_t4.txt: rndwr, sync I/O, 16 files,
64 MiB, 4 threads, 3 s). The prepare and cleanup phases print
no statistics: their output is refused, as is a run that stopped with FATAL.

    File operations:
        reads/s:                      0.00
        writes/s:                     2249.18
        fsyncs/s:                     36003.14
    Throughput:
        read, MiB/s:                  0.00
        written, MiB/s:               35.14
    General statistics:
        total time:                          3.0143s
        total number of events:              115262
    Latency (ms):
         ...
         99th percentile:                        2.26
         sum:                                11972.15

What each figure means:

- reads/s, writes/s, fsyncs/s: calls per second over the run, all threads.
  writes/s is the headline of the write modes fslab runs. fsyncs/s follows
  from --file-fsync-freq, and not as one might read it: the periodic fsync
  is of every file in turn, so --file-fsync-freq=1 on 16 files makes 16
  fsyncs per write; with 0 only the fsyncs at the end of the test remain.
- read/written MiB/s: the same calls in bytes (MiB of 2^20), kept in B/s,
  the catalog's unit for throughput; the printed two decimals bound the
  precision to about 10 KiB/s.
- Latency: per *event*, and an event is any request, a write or an fsync
  alike, so with periodic fsync it is mostly fsync time. Printed with two
  decimals of a millisecond, so on RAM-backed devices min, avg and often p99
  read 0.00 or 0.01: avg is recomputed from sum / events, which keeps its
  precision; min, max and the percentile (--percentile, 0 prints none) are
  as printed.
- total time and events: how long the run lasted and how many requests it
  made; context, not a score.

Anything that is not one finished run raises ToolError.
"""

from __future__ import annotations

import re

from fslab.base.errors import ToolError
from fslab.base.units import MIB
from fslab.base.vocab import CatalogEntry, MetricDef

METRICS: tuple[CatalogEntry, ...] = (
    ("sysbench.*.ops_per_s", MetricDef("higher", "IO/s", "read, write or fsync calls per second")),
    ("sysbench.*.bw_bytes_s", MetricDef("higher", "B/s", "bytes read or written per second")),
    ("sysbench.lat_ms_*", MetricDef("lower", "ms", "time per event (a write or an fsync)")),
    ("sysbench.runtime_s", MetricDef("none", "s", "measured run time")),
    ("sysbench.events", MetricDef("none", "events", "requests made (writes, reads, fsyncs)")),
    ("sysbench.threads", MetricDef("none", "threads", "threads sysbench ran")),
)
HEADLINE = "sysbench.write.ops_per_s"

_NUM = r"(\d+(?:\.\d+)?)"
# (metric, regex): each must appear once in a finished run's output
_FIELDS = (
    ("sysbench.read.ops_per_s", rf"^\s+reads/s:\s+{_NUM}\s*$"),
    ("sysbench.write.ops_per_s", rf"^\s+writes/s:\s+{_NUM}\s*$"),
    ("sysbench.fsync.ops_per_s", rf"^\s+fsyncs/s:\s+{_NUM}\s*$"),
    ("sysbench.read.bw_bytes_s", rf"^\s+read, MiB/s:\s+{_NUM}\s*$"),
    ("sysbench.write.bw_bytes_s", rf"^\s+written, MiB/s:\s+{_NUM}\s*$"),
    ("sysbench.runtime_s", rf"^\s+total time:\s+{_NUM}s\s*$"),
    ("sysbench.events", r"^\s+total number of events:\s+(\d+)\s*$"),
    ("sysbench.lat_ms_min", rf"^\s+min:\s+{_NUM}\s*$"),
    ("sysbench.lat_ms_max", rf"^\s+max:\s+{_NUM}\s*$"),
    ("sysbench.lat_ms_sum", rf"^\s+sum:\s+{_NUM}\s*$"),
    ("sysbench.threads", r"^Number of threads: (\d+)\s*$"),
)
_FIELD_RES = tuple((name, re.compile(regex, re.MULTILINE)) for name, regex in _FIELDS)
_PERCENTILE_RE = re.compile(rf"^\s+(\d+(?:\.\d+)?)th percentile:\s+{_NUM}\s*$", re.MULTILINE)
_BANNER_RE = re.compile(r"^sysbench \d+\.\d+", re.MULTILINE)
_FATAL_RE = re.compile(r"^FATAL: .*$", re.MULTILINE)
_PHASE_RE = re.compile(r"^(Creating files for the test|Removing test files)\.\.\.$", re.MULTILINE)


def _percentile_name(pct: str) -> str:
    """'99' → sysbench.lat_ms_p99, '99.9' → sysbench.lat_ms_p99_9 (fslab's spelling)."""
    return "sysbench.lat_ms_p" + pct.rstrip("0").rstrip(".").replace(".", "_")


def parse(stdout: str) -> dict[str, float]:
    """sysbench fileio run output → metrics; ToolError unless it is one finished run."""
    if not _BANNER_RE.search(stdout):
        head = stdout.strip().splitlines()[:1]
        raise ToolError(
            "not sysbench output: no 'sysbench <version>' banner"
            + (f" (starts {head[0][:80]!r})" if head else " (empty)"),
            stdout[-2000:],
        )
    fatal = _FATAL_RE.search(stdout)
    if fatal is not None:
        raise ToolError(f"sysbench failed: {fatal.group(0)}", stdout[-2000:])
    if "File operations:" not in stdout:
        phase = _PHASE_RE.search(stdout)
        raise ToolError(
            f"sysbench output of a prepare or cleanup phase ({phase.group(1)!r}), not a run"
            if phase is not None
            else "sysbench output has no fileio statistics (another test, or cut short)",
            stdout[-2000:],
        )
    found: dict[str, float] = {}
    for name, regex in _FIELD_RES:
        hits = regex.findall(stdout)
        if len(hits) != 1:
            raise ToolError(
                f"sysbench output {'lacks' if not hits else 'repeats'} {name.split('.', 1)[1]} "
                "(not one finished fileio run, or cut short)",
                stdout[-2000:],
            )
        found[name] = float(hits[0])
    metrics = {k: v for k, v in found.items() if k != "sysbench.lat_ms_sum"}
    for key in ("sysbench.read.bw_bytes_s", "sysbench.write.bw_bytes_s"):
        metrics[key] = found[key] * MIB
    if found["sysbench.events"] > 0:
        metrics["sysbench.lat_ms_avg"] = found["sysbench.lat_ms_sum"] / found["sysbench.events"]
    for pct, value in _PERCENTILE_RE.findall(stdout):
        metrics[_percentile_name(pct)] = float(value)
    return metrics
