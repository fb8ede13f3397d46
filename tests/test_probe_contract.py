"""The probe contract (collect/probe.py): every registered probe declares facts the
store names, begins and ends around a run and returns a subset of them; the runner's
loop (measure.point.probing) runs whatever the registry holds and never fails for one."""

from __future__ import annotations

import time
from typing import ClassVar

import pytest

from fslab.collect.probe import Probe
from fslab.collect.registry import ALL_PROBES
from fslab.measure.point import probing
from fslab.store.facts import HostCpuFacts

# what the runner stored as host_cpu before the probes were a contract: same names
HOST_CPU = {
    "steal": ("steal_pct", "idle_pct"),
    "others": ("others_cpu_pct",),
    "speed": ("speed_probe_us", "speed_probe_samples", "speed_probe_cpu_pct"),
}


def test_the_registry_holds_the_probes_and_their_facts() -> None:
    assert {name: cls.fact_names for name, cls in ALL_PROBES.items()} == HOST_CPU
    for name, cls in ALL_PROBES.items():
        assert cls.name == name and issubclass(cls, Probe)
    declared = [f for cls in ALL_PROBES.values() for f in cls.fact_names]
    assert sorted(declared) == sorted(HostCpuFacts.model_fields)  # each fact, one probe


@pytest.mark.parametrize("name", list(ALL_PROBES))
def test_every_probe_records_its_own_facts_around_a_run(name: str) -> None:
    probe = ALL_PROBES[name]()  # the runner makes them without arguments
    probe.begin()
    _busy(0.8)  # long enough for the speed probe's MIN_SPEED_SAMPLES
    probe.end()
    facts = probe.facts()
    assert set(facts) == set(probe.fact_names), name
    HostCpuFacts.model_validate(facts)  # as the runner stores them: strictly


def test_the_loop_gives_the_facts_the_runner_always_stored() -> None:
    with probing() as found:
        assert found == {}  # filled once the block has ended
        _busy(0.8)
    assert list(found) == [f for names in HOST_CPU.values() for f in names]
    cpu = HostCpuFacts.model_validate(found)
    assert cpu.speed_probe_samples and cpu.speed_probe_samples >= 5
    assert cpu.idle_pct is not None and 0 <= cpu.idle_pct <= 100


class _Toy(Probe):
    name: ClassVar[str] = "toy"
    fact_names: ClassVar[tuple[str, ...]] = ("steal_pct",)
    calls: ClassVar[list[str]] = []

    def begin(self) -> None:
        self.calls.append("begin")

    def end(self) -> None:
        self.calls.append("end")

    def facts(self) -> dict[str, float]:
        return {"steal_pct": 42.0}


def test_a_probe_added_to_the_registry_runs_without_other_edits(monkeypatch) -> None:
    monkeypatch.setitem(ALL_PROBES, "toy", _Toy)
    _Toy.calls.clear()
    with probing() as found:
        assert _Toy.calls == ["begin"]
    assert _Toy.calls == ["begin", "end"] and found["steal_pct"] == 42.0  # registered last


class _Broken(_Toy):
    name: ClassVar[str] = "broken"

    def end(self) -> None:
        raise OSError("cannot read")


def test_a_failing_probe_is_left_out_and_the_others_end_even_when_the_run_fails() -> None:
    _Toy.calls.clear()
    with pytest.raises(RuntimeError, match="workload"), probing({"broken": _Broken, "toy": _Toy}):
        raise RuntimeError("workload")
    assert _Toy.calls == ["begin", "begin", "end"]  # the toy ended, the broken one raised


def test_a_probe_fact_the_store_does_not_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="steal_percent"):
        HostCpuFacts.model_validate({"steal_percent": 1.0})


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.01)
