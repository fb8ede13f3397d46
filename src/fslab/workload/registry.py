"""Every benchmark by kind, and what the layers above read from their declarations:
the workload metric catalog, the headline and latency candidates, the labels.

Adding a benchmark: its folder `workload/<tool>/` (workload/base.py's contract,
docs/workloads.md) and one line in BUILTIN below. `register` adds one at run
time (a test's, a plugin's): the spec, the runner and the catalog read this
registry when they are asked, so it needs no other edit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from fslab.base.vocab import PERCENTILES, CatalogEntry, MetricDef, pick_metric
from fslab.workload.base import Benchmark, WorkloadSpec
from fslab.workload.command.benchmark import CommandBenchmark
from fslab.workload.dbench.benchmark import DbenchBenchmark
from fslab.workload.dd.benchmark import DdBenchmark
from fslab.workload.fio.benchmark import FioBenchmark
from fslab.workload.fs_mark.benchmark import FsMarkBenchmark
from fslab.workload.sysbench.benchmark import SysbenchBenchmark

BUILTIN: tuple[Benchmark, ...] = (
    FioBenchmark(),
    DdBenchmark(),
    FsMarkBenchmark(),
    SysbenchBenchmark(),
    DbenchBenchmark(),
    CommandBenchmark(),
)

BENCHMARKS: dict[str, Benchmark] = {b.kind: b for b in BUILTIN}
_changes = [0]  # bumped by register and unregister: what is derived from the registry is stale

# The runner's own facts beside the workload's metrics (measure/point.py writes them).
RUNNER_CATALOG: tuple[CatalogEntry, ...] = (
    ("fs.**", MetricDef("none", "B", "filesystem state around the point (free space, fill)")),
)


def register(benchmark: Benchmark) -> Benchmark:
    """Add a benchmark (a kind already registered is refused)."""
    if benchmark.kind in BENCHMARKS:
        raise ValueError(f"workload kind {benchmark.kind!r} is registered already")
    BENCHMARKS[benchmark.kind] = benchmark
    _changes[0] += 1
    return benchmark


def unregister(kind: str) -> None:
    """Remove a benchmark registered at run time (a test's, when it ends)."""
    if any(b.kind == kind for b in BUILTIN):
        raise ValueError(f"workload kind {kind!r} is built in")
    BENCHMARKS.pop(kind, None)
    _changes[0] += 1


def generation() -> int:
    """Changes with every register and unregister (for caches of what is derived here)."""
    return _changes[0]


def kinds() -> tuple[str, ...]:
    return tuple(BENCHMARKS)


def benchmark_for(workload: WorkloadSpec | str) -> Benchmark:
    """The benchmark of a workload (or of a kind)."""
    kind = workload if isinstance(workload, str) else workload.kind
    try:
        return BENCHMARKS[kind]
    except KeyError:
        raise ValueError(
            f"no benchmark of kind {kind!r} (registered: {', '.join(BENCHMARKS)})"
        ) from None


def workload_catalog() -> tuple[CatalogEntry, ...]:
    """Every benchmark's metric families, in registry order, then the runner's fs.*."""
    entries = tuple(m.catalog_entry() for b in BENCHMARKS.values() for m in b.metrics)
    return entries + RUNNER_CATALOG


def headline_candidates(swept: Collection[str] = ()) -> tuple[str, ...]:
    """A campaign's headline is the first of these any successful point has; a benchmark
    whose per-I/O size the campaign sweeps (fio's bs) offers its bytes per second first."""
    return tuple(
        name
        for b in BENCHMARKS.values()
        for name in (
            (*b.sized_headline, *b.headline) if set(swept) & set(b.per_io_axes) else b.headline
        )
    )


def per_io_axes() -> frozenset[str]:
    """Every benchmark's axes that change how much one I/O moves."""
    return frozenset(axis for b in BENCHMARKS.values() for axis in b.per_io_axes)


def latency_candidates() -> tuple[str, ...]:
    return tuple(name for b in BENCHMARKS.values() for name in b.latency)


def labels() -> dict[str, str]:
    return {k: v for b in BENCHMARKS.values() for k, v in b.labels.items()}


def _percentile_words() -> dict[str, str]:
    return {k: v for b in BENCHMARKS.values() for k, v in b.percentile_words.items()}


def headline_metric(
    metric_sets: Iterable[Mapping[str, float]], swept: Collection[str] = ()
) -> str | None:
    """The headline of a campaign (all its successful points) or of one run; `swept`:
    the campaign's axes that take more than one value.

    One campaign uses one headline (a randrw job is judged by its total, not
    by its writes).
    """
    return pick_metric(headline_candidates(swept), metric_sets)


def latency_metric(metric_sets: Iterable[Mapping[str, float]]) -> str | None:
    return pick_metric(latency_candidates(), metric_sets)


def metric_label(metric: str | None, *, missing: str = "-") -> str:
    """Short reader-facing names: "write IOPS", "fsync p99"; others as stored."""
    if not metric:
        return missing
    names = labels()
    if metric in names:
        return names[metric]
    words = _percentile_words()
    for pct in PERCENTILES:
        family = metric.removesuffix(f"_{pct}")
        if family != metric and family in words:
            return f"{words[family]} {pct.replace('_', '.')}"
    return metric


def packages() -> Sequence[str]:
    """The Debian packages the registered benchmarks need, in registry order."""
    return list(dict.fromkeys(b.package for b in BENCHMARKS.values()))


def process_names() -> tuple[str, ...]:
    """The benchmarks' process names (doctor --cleanup stops the ones a killed fslab left)."""
    return tuple(dict.fromkeys(b.process_name for b in BENCHMARKS.values()))
