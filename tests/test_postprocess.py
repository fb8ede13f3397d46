"""Post-processing: every collector's results computed at once, failures kept as results."""

from __future__ import annotations

import threading

from fslab.collect.base import CollectorResult, PendingResult
from fslab.measure.post import finish_all


def test_collectors_are_finished_side_by_side() -> None:
    """Each compute waits for the others at a barrier: one after another, they would
    all time out; side by side, all pass it."""
    names = ("perf", "workqueue", "jbd2")
    barrier = threading.Barrier(len(names), timeout=10)

    def compute(name: str) -> CollectorResult:
        barrier.wait()
        return CollectorResult(metrics={f"{name}.done": 1.0})

    pending = {n: PendingResult(lambda n=n: compute(n)) for n in names}
    results = finish_all(pending)
    assert list(results) == list(names)
    assert all(r.status == "ok" and r.metrics == {f"{n}.done": 1.0} for n, r in results.items())


def test_a_failing_collector_is_its_own_failed_result() -> None:
    def broken() -> CollectorResult:
        raise ValueError("bad trace")

    results = finish_all(
        {"perf": PendingResult(broken), "sysstat": PendingResult.ready(CollectorResult())}
    )
    assert results["perf"].status == "failed" and "bad trace" in results["perf"].reason
    assert results["sysstat"].status == "ok"
