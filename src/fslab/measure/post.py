"""Collector post-processing in the background, off the measured path.

When a point's workload ends its collectors stop observing at once and keep
their raw data (perf.data, ftrace pages); turning that into profiles and
metrics (perf script and folding, decoding) runs in a thread while the runner
tears the point down and sets up the next one. The runner waits for it before
the next measured window starts, so post-processing never takes CPU from a
measurement. A failure in it is the collector's failed result, never a crash.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from fslab.collect.base import CollectorResult, PendingResult

UNFINISHED = "post-processing did not finish (fslab stopped before it)"


@dataclass
class PostResults:
    """What a point's collectors produced, once post-processed."""

    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    collectors: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, why)
    seconds: float = 0.0  # wall time of the post-processing

    @classmethod
    def from_results(cls, results: Mapping[str, CollectorResult], seconds: float) -> PostResults:
        evidence = cls(seconds=seconds)
        for name, result in results.items():
            evidence.metrics.update(result.metrics)
            evidence.artifacts.update(result.artifacts)
            evidence.collectors[name] = (result.status, result.reason)
        return evidence


def finish_all(pending: Mapping[str, PendingResult]) -> dict[str, CollectorResult]:
    """Every collector's results, each computed in its own thread: `perf script` is a
    subprocess and the decoders spend most of their time in numpy or the kernel, so
    together they take about as long as the slowest (docs/collectors.md, "Common
    behaviour")."""
    if len(pending) <= 1:
        return {name: p.finish() for name, p in pending.items()}
    with ThreadPoolExecutor(len(pending), thread_name_prefix="fslab-post") as pool:
        futures = {name: pool.submit(p.finish) for name, p in pending.items()}
        return {name: future.result() for name, future in futures.items()}


class PostProcessing:
    """One point's pending collector results, finished in a background thread.

    `artifact_dir` (the collectors' scratch files) is removed when done.
    """

    def __init__(self, pending: Mapping[str, PendingResult], artifact_dir: str) -> None:
        self.pending = dict(pending)
        self.artifact_dir = artifact_dir
        self._evidence: PostResults | None = None
        self._thread = threading.Thread(target=self._run, name="fslab-post", daemon=True)

    def placeholder(self) -> dict[str, tuple[str, str]]:
        """Collector status to store until the results are in (kept if fslab dies first)."""
        return {name: ("failed", UNFINISHED) for name in self.pending}

    def start(self) -> PostProcessing:
        self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        try:
            results = finish_all(self.pending)
        finally:
            shutil.rmtree(self.artifact_dir, ignore_errors=True)
        self._evidence = PostResults.from_results(results, time.monotonic() - started)

    def wait(self) -> PostResults:
        """The evidence, waiting for the thread (or running it here if never started)."""
        if self._evidence is None:
            if self._thread.ident is None:
                self._run()
            else:
                self._thread.join()
        if self._evidence is None:  # the thread died of something finish() did not catch
            return PostResults(collectors=self.placeholder())
        return self._evidence
