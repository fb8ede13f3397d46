"""The collector contract: the base class owns the failure states, the registry drives
the spec and the catalog (collect/base.py, collect/registry.py)."""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import ValidationError

from fslab.analyze.campaign.metrics_catalog import CATALOG
from fslab.collect.base import (
    Collector,
    CollectorResult,
    PointContext,
    StartFailed,
    Unavailable,
)
from fslab.collect.registry import ALL_COLLECTORS, collector_of_family
from fslab.spec.model import CollectSpec
from tests.test_collect_parsers import _ctx

CTX = _ctx()


class _Toy(Collector):
    """A collector whose begin and end do what the test says."""

    name: ClassVar[str] = "toy"

    def __init__(self, begin_raises: Exception | None = None, end_raises: bool = False) -> None:
        self.begin_raises = begin_raises
        self.end_raises = end_raises
        self.ended = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None

    def begin(self, ctx: PointContext) -> None:
        if self.begin_raises is not None:
            raise self.begin_raises

    def end(self) -> CollectorResult:
        self.ended = True
        if self.end_raises:
            raise RuntimeError("boom")
        return CollectorResult(metrics={"toy.x": 1.0})


def test_a_clean_start_and_stop():
    toy = _Toy()
    toy.start(CTX)
    result = toy.stop()
    assert result.status == "ok" and result.metrics == {"toy.x": 1.0}


@pytest.mark.parametrize(
    ("raised", "status", "reason"),
    [
        (Unavailable("not ext4"), "unavailable", "not ext4"),
        (StartFailed("cannot start perf record: ENOENT"), "failed", "cannot start perf record"),
        (ValueError("bad"), "failed", "start: ValueError: bad"),
    ],
)
def test_a_failed_start_is_reported_at_stop_without_end(raised, status, reason):
    toy = _Toy(begin_raises=raised)
    toy.start(CTX)  # never raises
    result = toy.stop()
    assert (result.status, toy.ended) == (status, False)
    assert reason in result.reason


def test_stop_without_start_and_a_failing_end():
    assert _Toy().stop().reason == "stop() without a successful start()"
    toy = _Toy(end_raises=True)
    toy.start(CTX)
    result = toy.stop()
    assert result.status == "failed" and "RuntimeError: boom" in result.reason
    assert toy.stop().status == "failed"  # a second stop: nothing was started again


def test_the_registry_drives_the_spec():
    fields = set(CollectSpec.model_fields)
    for name, cls in ALL_COLLECTORS.items():
        assert name in fields
        for option in cls.Options.model_fields:
            assert f"{name}_{option}" in fields
    assert len(fields) == len(ALL_COLLECTORS) + sum(
        len(c.Options.model_fields) for c in ALL_COLLECTORS.values()
    )
    spec = CollectSpec(perf_freq_hz=99, workqueue=False)
    assert spec.options_for("perf").model_dump() == {"freq_hz": 99}
    assert "workqueue" not in spec.enabled()
    with pytest.raises(ValidationError, match="perf_freq_hz"):
        CollectSpec(perf_freq_hz=0)  # the collector's own bound
    with pytest.raises(ValidationError, match="perf_bogus"):
        CollectSpec(perf_bogus=1)


def test_every_collector_declares_its_metric_families():
    for name, cls in ALL_COLLECTORS.items():
        assert cls.catalog, f"{name} declares no metrics"
        for family in cls.families():
            assert collector_of_family(family) is cls
            assert CATALOG.covers(f"{family}.anything_at_all")
