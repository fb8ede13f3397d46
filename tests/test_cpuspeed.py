"""The CPU-speed probe the runner runs beside every workload (collect.cpuspeed)."""

import time

from fslab.collect.cpuspeed import MAX_SPEED_DUTY, MIN_SPEED_SAMPLES, SpeedProbe, fixed_work


def test_the_probe_times_its_loop_in_thread_cpu_time_and_states_its_cost() -> None:
    with SpeedProbe(interval_s=0.01) as probe:  # at most every ~75 ms: the duty cap
        time.sleep(1.0)
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
    assert min(long.samples_ns) > 5 * min(short.samples_ns)


def test_a_slow_sample_makes_the_probe_back_off_to_its_duty_cap() -> None:
    with SpeedProbe(interval_s=0.001, loops=20000) as probe:  # ~2 ms a sample, 1 ms asked
        time.sleep(1.0)
    share_of_one_cpu = sum(probe.samples_ns) / 1e9 / 1.0
    assert share_of_one_cpu < 2 * MAX_SPEED_DUTY  # 1.2%, not the ~70% of asking every 1 ms
    assert len(probe.samples_ns) >= 2


def test_a_window_too_short_for_the_probe_records_nothing() -> None:
    with SpeedProbe(interval_s=10) as probe:
        pass
    assert len(probe.samples_ns) <= 1 and probe.facts() == {}


def test_fixed_work_is_fixed() -> None:
    assert fixed_work(1000) == fixed_work(1000)
