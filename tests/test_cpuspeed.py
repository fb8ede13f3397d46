"""The CPU-speed probe the runner runs beside every workload (collect.cpuspeed)."""

import time

from fslab.collect.cpuspeed import MIN_SPEED_SAMPLES, SpeedProbe, fixed_work


def test_the_probe_times_its_loop_in_thread_cpu_time_and_states_its_cost() -> None:
    with SpeedProbe(interval_s=0.01) as probe:
        time.sleep(0.3)
    facts = probe.facts()
    assert facts["speed_probe_samples"] >= MIN_SPEED_SAMPLES
    assert facts["speed_probe_samples"] == len(probe.samples_ns)
    assert 0 < facts["speed_probe_us"] < 1e5
    assert 0 < facts["speed_probe_cpu_pct"] < 100


def test_more_work_takes_longer() -> None:
    with SpeedProbe(interval_s=0.01, loops=200) as short:
        time.sleep(0.3)
    with SpeedProbe(interval_s=0.01, loops=20000) as long:
        time.sleep(0.3)
    assert long.facts()["speed_probe_us"] > 5 * short.facts()["speed_probe_us"]


def test_a_window_too_short_for_the_probe_records_nothing() -> None:
    with SpeedProbe(interval_s=10) as probe:
        pass
    assert len(probe.samples_ns) <= 1 and probe.facts() == {}


def test_fixed_work_is_fixed() -> None:
    assert fixed_work(1000) == fixed_work(1000)
