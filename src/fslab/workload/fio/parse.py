"""fio json+ output to flat metrics, with percentiles from merged latency bins.

Samples: tests/data/fio_seed_grouped.json (and fio_seed_pertask, fio_randread,
fio_randrw, fio_fail_*), captured by tests/data/capture_workload.py.

Per-job percentiles cannot be averaged into a percentile of the whole run, so
fslab merges the json+ latency histograms (`bins`) of all jobs and reads the
percentiles from the merged histogram, the way fio itself does under
group_reporting. Throughput (IOPS, bytes/s, bytes) is summed over jobs; CPU
percentages are weighted by each job's run time, which is what fio reports for a
group (summed CPU time over summed run time).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from fslab.base.errors import ToolError

DIRECTIONS = ("read", "write", "trim")
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99_9": 0.999}

# fio prints percentile keys with six decimals: "99.900000".
_FIO_PERCENTILE_KEYS = {suffix: f"{q * 100:.6f}" for suffix, q in QUANTILES.items()}

Job = Mapping[str, Any]


class FioOutputError(ToolError):
    """fio's output holds no result fslab can read (fio failed early, or wrong format)."""


@dataclass
class FioResult:
    """One fio run's metrics (flat names, explicit units) and its health."""

    metrics: dict[str, float]
    jobs: int  # job entries in the output (1 per group under group_reporting)
    error: int  # fio's error codes summed over jobs, 0 when every job succeeded
    notes: list[str] = field(default_factory=list)  # metrics fslab could not compute, and why


def parse_fio_json(text: str) -> FioResult:
    """Metrics from fio's stdout (json or json+), tolerating lines fio prints around it."""
    report = _find_report(text)
    jobs = report["jobs"]
    if not jobs:
        raise FioOutputError("unparsable fio output: the JSON report lists no jobs", stderr=text)
    metrics: dict[str, float] = {}
    notes: list[str] = []
    for direction in DIRECTIONS:
        metrics.update(_direction_metrics(direction, jobs, notes))
    metrics.update(_sync_metrics(jobs, notes))
    metrics.update(_total_metrics(metrics))
    metrics.update(_cpu_metrics(jobs))
    metrics["fio.runtime_s"] = _runtime_s(jobs)
    metrics["fio.jobs"] = float(_worker_count(jobs, report.get("global options") or {}))
    error = sum(int(job.get("error", 0)) for job in jobs)
    return FioResult(metrics=metrics, jobs=len(jobs), error=error, notes=notes)


def percentiles_from_bins(bins: Mapping[int, int], quantiles: Sequence[float]) -> list[float]:
    """Percentiles (nearest rank) of a latency histogram, as fio computes them.

    Each quantile q in (0, 1] gives the smallest bin value v such that at least
    q of all samples are <= v; fio's own percentiles are this on the same bins.
    """
    ordered = sorted((int(value), int(count)) for value, count in bins.items())
    total = sum(count for _, count in ordered)
    if total <= 0:
        raise ValueError("no samples in the latency histogram")
    results: list[float] = []
    for q in quantiles:
        if not 0 < q <= 1:
            raise ValueError(f"quantile must be in (0, 1]: {q}")
        threshold = Fraction(repr(q)) * total  # exact, so 0.999 x 1000 is 999, not 999.0000001
        cumulative = 0
        for value, count in ordered:
            cumulative += count
            if cumulative >= threshold:
                results.append(float(value))
                break
    return results


# --- finding the report -------------------------------------------------------------------


def _find_report(text: str) -> dict[str, Any]:
    """The last JSON object with a `jobs` list; fio may print notes before and after it."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    position = 0
    for match in re.finditer(r"^\{", text, flags=re.MULTILINE):
        if match.start() < position:
            continue
        try:
            obj, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        position = end
        if isinstance(obj, dict) and isinstance(obj.get("jobs"), list):
            found = obj
    if found is None:
        raise FioOutputError(_unparsable_message(text), stderr=text[-4000:])
    return found


def _unparsable_message(text: str) -> str:
    said = [line.strip() for line in text.splitlines() if line.startswith("fio:")]
    hint = (
        f"fio said: {'; '.join(said[:5])}"
        if said
        else "fio probably failed before running any job (see its stderr), "
        "or ran without --output-format=json+"
    )
    return f"unparsable fio output: no JSON report with a 'jobs' list; {hint}"


# --- metrics ------------------------------------------------------------------------------


def _direction_metrics(direction: str, jobs: Sequence[Job], notes: list[str]) -> dict[str, float]:
    """Summed throughput and merged completion-latency stats for read, write or trim."""
    sections = [job[direction] for job in jobs if direction in job]
    if sum(int(s.get("total_ios", 0)) for s in sections) <= 0:
        return {}
    prefix = f"fio.{direction}"
    metrics = {
        f"{prefix}.iops": sum(float(s["iops"]) for s in sections),
        f"{prefix}.bw_bytes_s": sum(float(s["bw_bytes"]) for s in sections),
        f"{prefix}.io_bytes": sum(float(s["io_bytes"]) for s in sections),
    }
    latency = [s["clat_ns"] for s in sections if int(s.get("total_ios", 0)) > 0]
    metrics.update(_latency_metrics(f"{prefix}.clat_ns", latency, notes, with_max=True))
    return metrics


def _sync_metrics(jobs: Sequence[Job], notes: list[str]) -> dict[str, float]:
    """fsync/fdatasync counts and latency, from the `sync` section (fio >= 3.5)."""
    sections = [job["sync"] for job in jobs if "sync" in job]
    count = sum(int(s.get("total_ios", 0)) for s in sections)
    if count <= 0:
        return {}
    latency = [s["lat_ns"] for s in sections if int(s.get("total_ios", 0)) > 0]
    metrics = {"fio.sync.count": float(count)}
    metrics.update(_latency_metrics("fio.sync.lat_ns", latency, notes, with_max=True))
    return metrics


def _latency_metrics(
    prefix: str, stats: Sequence[Mapping[str, Any]], notes: list[str], *, with_max: bool
) -> dict[str, float]:
    """Mean (weighted by sample count), max and merged-bin percentiles of latency stats."""
    samples = sum(int(s.get("N", 0)) for s in stats)
    if samples <= 0:
        return {}
    metrics = {f"{prefix}_mean": sum(float(s["mean"]) * int(s["N"]) for s in stats) / samples}
    if with_max:
        metrics[f"{prefix}_max"] = float(max(float(s["max"]) for s in stats))
    metrics.update(_percentile_metrics(prefix, stats, notes))
    return metrics


def _percentile_metrics(
    prefix: str, stats: Sequence[Mapping[str, Any]], notes: list[str]
) -> dict[str, float]:
    if all("bins" in s for s in stats):
        merged = merge_bins(s["bins"] for s in stats)
        values = percentiles_from_bins(merged, list(QUANTILES.values()))
        return {f"{prefix}_{suffix}": v for suffix, v in zip(QUANTILES, values, strict=True)}
    if len(stats) == 1 and "percentile" in stats[0]:
        # plain json of one job (or one group): fio's own percentiles are exact
        table = stats[0]["percentile"]
        return {
            f"{prefix}_{suffix}": float(table[key])
            for suffix, key in _FIO_PERCENTILE_KEYS.items()
            if key in table
        }
    notes.append(
        f"{prefix} percentiles left out: several jobs without json+ latency bins "
        f"cannot be merged (per-job percentiles must not be averaged)"
    )
    return {}


LATENCY_SECTIONS = {  # latency metric family -> (fio json direction, latency key)
    "fio.sync.lat_ns": ("sync", "lat_ns"),
    "fio.write.clat_ns": ("write", "clat_ns"),
    "fio.read.clat_ns": ("read", "clat_ns"),
}


def latency_histogram(text: str, family: str) -> dict[int, int]:
    """One latency family's json+ bins over all jobs of fio's stdout, merged.

    Raises FioOutputError when the output has no report, ValueError when the
    report has no such bins (fio ran without --output-format=json+).
    """
    direction, key = LATENCY_SECTIONS[family]
    jobs = _find_report(text)["jobs"]
    sections = [job[direction][key] for job in jobs if key in job.get(direction, {})]
    bins = [s["bins"] for s in sections if s.get("bins")]
    if not bins:
        raise ValueError(
            f"fio.json has no {direction} latency bins (fio ran without --output-format=json+)"
        )
    return merge_bins(bins)


def merge_bins(bin_maps: Iterable[Mapping[str, int] | Mapping[int, int]]) -> dict[int, int]:
    """One histogram from several jobs' bins (json+ keys are latency values as strings)."""
    merged: Counter[int] = Counter()
    for bins in bin_maps:
        for value, count in bins.items():
            merged[int(value)] += int(count)
    return dict(merged)


def _total_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """IOPS and bandwidth over all directions, when the job did more than one (randrw)."""
    done = [d for d in DIRECTIONS if f"fio.{d}.iops" in metrics]
    if len(done) < 2:
        return {}
    return {
        "fio.total.iops": sum(metrics[f"fio.{d}.iops"] for d in done),
        "fio.total.bw_bytes_s": sum(metrics[f"fio.{d}.bw_bytes_s"] for d in done),
    }


def _cpu_metrics(jobs: Sequence[Job]) -> dict[str, float]:
    """CPU use as fio reports a group: usr/sys weighted by job run time; context switches summed."""
    weights = [float(job.get("job_runtime", 0)) for job in jobs]
    if sum(weights) <= 0:
        weights = [1.0] * len(jobs)
    total_weight = sum(weights)

    def weighted(key: str) -> float:
        return sum(float(job.get(key, 0.0)) * w for job, w in zip(jobs, weights, strict=True)) / (
            total_weight
        )

    return {
        "fio.cpu.usr_pct": weighted("usr_cpu"),
        "fio.cpu.sys_pct": weighted("sys_cpu"),
        "fio.cpu.ctx": float(sum(int(job.get("ctx", 0)) for job in jobs)),
    }


def _runtime_s(jobs: Sequence[Job]) -> float:
    """The run's duration: the longest per-direction run time of any job, in seconds.

    (`job_runtime` is summed over a group's jobs under group_reporting, so it is
    not a duration.)
    """
    runtimes_ms = [float(job[d].get("runtime", 0)) for job in jobs for d in DIRECTIONS if d in job]
    return max(runtimes_ms, default=0.0) / 1000.0


def _worker_count(jobs: Sequence[Job], global_options: Mapping[str, str]) -> int:
    """How many fio threads/processes ran: numjobs per job name, whether grouped or not.

    Under group_reporting one entry stands for all numjobs clones; without it
    each clone has its own entry. Flags like group_reporting are not echoed in
    the JSON, so take the larger of the two counts per job name.
    """
    entries: Counter[str] = Counter(str(job.get("jobname", "")) for job in jobs)
    numjobs: dict[str, int] = {}
    for job in jobs:
        options = job.get("job options") or {}
        text = options.get("numjobs", global_options.get("numjobs", "1"))
        try:
            numjobs[str(job.get("jobname", ""))] = max(1, int(text))
        except (TypeError, ValueError):
            numjobs[str(job.get("jobname", ""))] = 1
    return sum(max(count, numjobs.get(name, 1)) for name, count in entries.items())
