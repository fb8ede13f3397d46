"""fio json+ parsing, on outputs captured from real fio runs (tests/data/capture_workload.py)."""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from fslab.base.errors import FslabError, ToolError
from fslab.workload.fio.parse import (
    FioOutputError,
    merge_bins,
    parse_fio_json,
    percentiles_from_bins,
)
from fslab.workload.registry import headline_metric

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99_9": 0.999}
FIO_KEYS = {"p50": "50.000000", "p90": "90.000000", "p99": "99.000000", "p99_9": "99.900000"}


def load_text(data_dir: Path, name: str) -> str:
    return (data_dir / name).read_text()


def load_json(data_dir: Path, name: str) -> dict:
    return json.loads(load_text(data_dir, name))


def nearest_rank_percentile(bins: dict[str, int], q: float) -> float:
    """Independent check: expand the histogram into samples, sort, take rank ceil(q*N)."""
    values = np.array([int(k) for k in bins], dtype=np.int64)
    counts = np.array(list(bins.values()), dtype=np.int64)
    samples = np.sort(np.repeat(values, counts))
    rank = math.ceil(Fraction(str(q)) * len(samples))
    return float(samples[rank - 1])


def merged_raw_bins(jobs: list[dict], direction: str, section: str) -> dict[str, int]:
    merged: dict[str, int] = {}
    for job in jobs:
        for key, count in job[direction][section].get("bins", {}).items():
            merged[key] = merged.get(key, 0) + count
    return merged


# --- the seed shape, grouped (fio merged the 8 jobs itself) ------------------------------


def test_grouped_percentiles_equal_fios_own(data_dir):
    raw = load_json(data_dir, "fio_seed_grouped.json")
    job = raw["jobs"][0]
    result = parse_fio_json(load_text(data_dir, "fio_seed_grouped.json"))
    for suffix, key in FIO_KEYS.items():
        assert (
            result.metrics[f"fio.write.clat_ns_{suffix}"]
            == job["write"]["clat_ns"]["percentile"][key]
        )
        assert (
            result.metrics[f"fio.sync.lat_ns_{suffix}"] == job["sync"]["lat_ns"]["percentile"][key]
        )


def test_grouped_headline_figures(data_dir):
    job = load_json(data_dir, "fio_seed_grouped.json")["jobs"][0]
    result = parse_fio_json(load_text(data_dir, "fio_seed_grouped.json"))
    m = result.metrics
    assert result.jobs == 1
    assert result.error == 0
    assert m["fio.jobs"] == 8  # numjobs=8 under group_reporting is one entry
    assert m["fio.write.iops"] == pytest.approx(job["write"]["iops"])
    assert m["fio.write.bw_bytes_s"] == job["write"]["bw_bytes"]
    assert m["fio.write.io_bytes"] == job["write"]["io_bytes"]
    assert m["fio.write.clat_ns_max"] == job["write"]["clat_ns"]["max"]
    assert m["fio.sync.count"] == job["sync"]["total_ios"] > 0
    assert m["fio.cpu.usr_pct"] == pytest.approx(job["usr_cpu"])
    assert m["fio.cpu.sys_pct"] == pytest.approx(job["sys_cpu"])
    assert m["fio.cpu.ctx"] == job["ctx"]
    assert m["fio.runtime_s"] == pytest.approx(job["write"]["runtime"] / 1000)
    assert headline_metric([m]) == "fio.write.iops"
    assert not any(name.startswith(("fio.read.", "fio.trim.", "fio.total.")) for name in m)
    assert all(isinstance(v, float) for v in m.values())


def test_fio_group_iops_is_total_ios_over_longest_runtime(data_dir):
    """The formula fio uses for a group's IOPS, checked on fio's own grouped figure."""
    write = load_json(data_dir, "fio_seed_grouped.json")["jobs"][0]["write"]
    assert write["iops"] == pytest.approx(write["total_ios"] / (write["runtime"] / 1000), rel=1e-6)


# --- the seed shape, not grouped: fslab merges 4 jobs ------------------------------------


def test_merged_percentiles_match_an_independent_computation(data_dir):
    jobs = load_json(data_dir, "fio_seed_pertask.json")["jobs"]
    assert len(jobs) == 4
    metrics = parse_fio_json(load_text(data_dir, "fio_seed_pertask.json")).metrics
    for direction, section, prefix in (
        ("write", "clat_ns", "fio.write.clat_ns"),
        ("sync", "lat_ns", "fio.sync.lat_ns"),
    ):
        bins = merged_raw_bins(jobs, direction, section)
        for suffix, q in QUANTILES.items():
            assert metrics[f"{prefix}_{suffix}"] == nearest_rank_percentile(bins, q)


def test_merged_p99_lies_within_per_job_p99s(data_dir):
    jobs = load_json(data_dir, "fio_seed_pertask.json")["jobs"]
    metrics = parse_fio_json(load_text(data_dir, "fio_seed_pertask.json")).metrics
    for direction, section, name in (
        ("write", "clat_ns", "fio.write.clat_ns_p99"),
        ("sync", "lat_ns", "fio.sync.lat_ns_p99"),
    ):
        per_job = [job[direction][section]["percentile"]["99.000000"] for job in jobs]
        assert min(per_job) <= metrics[name] <= max(per_job)
        # and it is not the average of per-job percentiles (which has no meaning)
        assert metrics[name] != pytest.approx(sum(per_job) / len(per_job))


def test_summed_iops_match_fios_group_figure(data_dir):
    jobs = load_json(data_dir, "fio_seed_pertask.json")["jobs"]
    result = parse_fio_json(load_text(data_dir, "fio_seed_pertask.json"))
    m = result.metrics
    assert result.jobs == 4
    assert m["fio.jobs"] == 4
    assert m["fio.write.iops"] == pytest.approx(sum(j["write"]["iops"] for j in jobs))
    total_ios = sum(j["write"]["total_ios"] for j in jobs)
    longest_s = max(j["write"]["runtime"] for j in jobs) / 1000
    assert m["fio.write.iops"] == pytest.approx(total_ios / longest_s, rel=0.01)
    assert m["fio.write.bw_bytes_s"] == sum(j["write"]["bw_bytes"] for j in jobs)
    assert m["fio.write.io_bytes"] == sum(j["write"]["io_bytes"] for j in jobs)
    assert m["fio.sync.count"] == sum(j["sync"]["total_ios"] for j in jobs)
    assert m["fio.runtime_s"] == pytest.approx(longest_s)


def test_merged_mean_max_and_cpu(data_dir):
    jobs = load_json(data_dir, "fio_seed_pertask.json")["jobs"]
    m = parse_fio_json(load_text(data_dir, "fio_seed_pertask.json")).metrics
    stats = [j["write"]["clat_ns"] for j in jobs]
    mean = sum(s["mean"] * s["N"] for s in stats) / sum(s["N"] for s in stats)
    assert m["fio.write.clat_ns_mean"] == pytest.approx(mean)
    assert m["fio.write.clat_ns_max"] == max(s["max"] for s in stats)
    # the mean of the merged histogram agrees (bins are ~1.5 % wide)
    bins = merged_raw_bins(jobs, "write", "clat_ns")
    bin_mean = sum(int(k) * c for k, c in bins.items()) / sum(bins.values())
    assert bin_mean == pytest.approx(mean, rel=0.03)
    runtime = [j["job_runtime"] for j in jobs]
    usr = sum(j["usr_cpu"] * r for j, r in zip(jobs, runtime, strict=True)) / sum(runtime)
    assert m["fio.cpu.usr_pct"] == pytest.approx(usr)
    assert (
        min(j["sys_cpu"] for j in jobs) <= m["fio.cpu.sys_pct"] <= max(j["sys_cpu"] for j in jobs)
    )
    assert m["fio.cpu.ctx"] == sum(j["ctx"] for j in jobs)


# --- other shapes -------------------------------------------------------------------------


def test_randread_has_read_metrics_only(data_dir):
    m = parse_fio_json(load_text(data_dir, "fio_randread.json")).metrics
    assert m["fio.read.iops"] > 0
    assert m["fio.jobs"] == 2
    assert headline_metric([m]) == "fio.read.iops"
    assert not any(name.startswith(("fio.write.", "fio.sync.", "fio.total.")) for name in m)
    assert m["fio.read.clat_ns_p50"] <= m["fio.read.clat_ns_p90"] <= m["fio.read.clat_ns_p99"]
    assert m["fio.read.clat_ns_p99"] <= m["fio.read.clat_ns_p99_9"]


def test_randrw_adds_total_iops_as_headline(data_dir):
    m = parse_fio_json(load_text(data_dir, "fio_randrw.json")).metrics
    assert m["fio.total.iops"] == pytest.approx(m["fio.read.iops"] + m["fio.write.iops"])
    assert m["fio.total.bw_bytes_s"] == m["fio.read.bw_bytes_s"] + m["fio.write.bw_bytes_s"]
    assert headline_metric([m]) == "fio.total.iops"
    assert "fio.sync.count" not in m


def test_failed_job_is_parsed_with_its_error_code(data_dir):
    # fio printed "fio: pid=..., err=28/..." on stdout before the JSON
    text = load_text(data_dir, "fio_fail_enospc.stdout.txt")
    assert text.startswith("fio: ")
    result = parse_fio_json(text)
    assert result.error == 28  # ENOSPC
    assert result.jobs == 1


def test_output_without_a_report_is_refused_with_fios_words(data_dir):
    with pytest.raises(FioOutputError, match="unparsable fio output") as info:
        parse_fio_json(load_text(data_dir, "fio_fail_badopt.stdout.txt"))
    assert isinstance(info.value, ToolError)
    stderr = load_text(data_dir, "fio_fail_badopt.stderr.txt")
    with pytest.raises(FioOutputError, match=r"fio said: fio: failed parsing rw=sideways"):
        parse_fio_json(stderr)
    with pytest.raises(FslabError, match="unparsable"):
        parse_fio_json("")


def test_report_is_found_among_other_lines(data_dir):
    text = load_text(data_dir, "fio_randread.json")
    wrapped = "fio: some note\n{not json\n" + text + "\nfio: file hash not empty on exit\n"
    assert parse_fio_json(wrapped).metrics == parse_fio_json(text).metrics


def test_status_interval_dumps_take_the_last_report(data_dir):
    first = load_text(data_dir, "fio_randread.json")
    last = load_text(data_dir, "fio_randrw.json")
    assert parse_fio_json(first + last).metrics == parse_fio_json(last).metrics


def test_plain_json_without_bins(data_dir):
    grouped = load_json(data_dir, "fio_seed_grouped.json")
    stripped = copy.deepcopy(grouped)
    del stripped["jobs"][0]["write"]["clat_ns"]["bins"]
    del stripped["jobs"][0]["sync"]["lat_ns"]["bins"]
    m = parse_fio_json(json.dumps(stripped)).metrics
    assert (
        m["fio.write.clat_ns_p99"]
        == grouped["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"]
    )

    pertask = load_json(data_dir, "fio_seed_pertask.json")
    for job in pertask["jobs"]:
        del job["write"]["clat_ns"]["bins"]
    result = parse_fio_json(json.dumps(pertask))
    assert "fio.write.clat_ns_p99" not in result.metrics
    assert "fio.write.clat_ns_mean" in result.metrics
    assert "fio.sync.lat_ns_p99" in result.metrics  # sync bins were kept
    assert any("fio.write.clat_ns percentiles left out" in note for note in result.notes)


# --- percentiles_from_bins ----------------------------------------------------------------


def test_percentiles_from_bins_nearest_rank():
    bins = {100: 1, 200: 1, 300: 2}
    assert percentiles_from_bins(bins, [0.25, 0.5, 0.75, 1.0]) == [100.0, 200.0, 300.0, 300.0]
    assert percentiles_from_bins({100: 999, 900: 1}, [0.999, 1.0]) == [100.0, 900.0]
    assert percentiles_from_bins({5: 1}, [0.01]) == [5.0]


def test_percentiles_from_bins_accepts_json_keys_and_unsorted_input():
    assert percentiles_from_bins({"300": 1, "100": 3}, [0.5, 0.9]) == [100.0, 300.0]


def test_percentiles_from_bins_rejects_bad_input():
    with pytest.raises(ValueError, match="no samples"):
        percentiles_from_bins({}, [0.5])
    with pytest.raises(ValueError, match="quantile"):
        percentiles_from_bins({1: 1}, [99.0])
    with pytest.raises(ValueError, match="quantile"):
        percentiles_from_bins({1: 1}, [0.0])


def test_merge_bins_sums_counts():
    assert merge_bins([{"10": 1, "20": 2}, {20: 3, 30: 1}]) == {10: 1, 20: 5, 30: 1}


def test_no_headline_without_io():
    assert headline_metric([{"fio.runtime_s": 1.0}]) is None
