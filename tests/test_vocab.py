"""fslab.base.vocab: one name, one unit, one headline for every table, report and command.

Where two places used to answer differently, these tests say which rule won.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fslab.analyze.campaign.metrics_catalog import CATALOG, format_value, metric_def
from fslab.base.format import format_ns
from fslab.base.vocab import point_key, point_label, value_label
from fslab.workload.fio.parse import parse_fio_json
from fslab.workload.registry import headline_metric, latency_metric, metric_label

DATA = Path(__file__).parent / "data"


def _recorded_metric_names() -> dict[str, str]:
    """Every metric name in the recorded campaign exports under tests/data/, with its file."""
    names: dict[str, str] = {}
    paths = sorted(DATA.rglob("*.json")) + sorted(DATA.rglob("*.json.gz"))
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            try:
                doc = json.load(fh)
            except json.JSONDecodeError:
                continue
        if isinstance(doc, dict) and doc.get("format") == "fslab-campaign":
            for point in doc["points"]:
                for name in point.get("metrics", {}):
                    names.setdefault(name, path.name)
    for path in sorted(DATA.glob("fio_*.json")):
        if '"fio version"' not in path.read_text():
            continue  # fio_dd_manifest.json says how the captures were made
        for name in parse_fio_json(path.read_text()).metrics:
            names.setdefault(name, path.name)
    return names


def test_every_recorded_metric_is_in_the_catalog():
    names = _recorded_metric_names()
    families = {name.split(".")[0] for name in names}
    # the recordings cover the workload, the runner and every collector's family
    assert {"fio", "dd", "fs", "wq", "jbd2", "blk", "tp", "sys", "vm", "profile"} <= families
    missing = {name: where for name, where in names.items() if not CATALOG.covers(name)}
    assert not missing, f"metrics without a catalog entry: {sorted(missing.items())[:10]}"


def test_a_family_without_an_entry_is_caught():
    assert not CATALOG.covers("newcollector.thing_per_s")
    assert metric_def("newcollector.thing_per_s").direction == "none"


def test_directions_come_from_the_catalog():
    assert metric_def("fio.write.iops").direction == "higher"
    assert metric_def("fio.sync.lat_ns_p99").direction == "lower"
    assert metric_def("vm.dirtied_pages_per_s").direction == "none"
    assert metric_def("profile.inclusive.foo.isra.0").unit == "share"


# --- the headline: one rule (analyze.summary's), not the progress line's ------------------


def test_randrw_run_headline_is_total_iops(data_dir):
    """The progress line used to print write IOPS for a randrw job; the campaign used total."""
    metrics = parse_fio_json((data_dir / "fio_randrw.json").read_text()).metrics
    assert "fio.write.iops" in metrics and "fio.read.iops" in metrics
    assert headline_metric([metrics]) == "fio.total.iops"


def test_trim_only_has_a_headline():
    """fio_json's rule named trim IOPS, the campaign's had no trim: trim is a candidate now."""
    assert headline_metric([{"fio.trim.iops": 10.0}]) == "fio.trim.iops"


def test_one_headline_for_the_campaign():
    """A campaign with one randrw point and one write point is judged by total IOPS."""
    sets = [{"fio.write.iops": 1.0}, {"fio.total.iops": 3.0, "fio.write.iops": 2.0}]
    assert headline_metric(sets) == "fio.total.iops"
    assert headline_metric([{"dd.bw_bytes_s": 1e6}]) == "dd.bw_bytes_s"
    assert latency_metric([{"fio.sync.lat_ns_p99": 1.0, "fio.write.clat_ns_p99": 2.0}]) == (
        "fio.sync.lat_ns_p99"
    )


# --- labels: one table --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "label"),
    [
        ("fio.total.iops", "IOPS"),
        ("fio.write.iops", "write IOPS"),
        ("dd.bw_bytes_s", "dd rate"),
        ("fio.sync.lat_ns_p99", "fsync p99"),
        ("fio.write.clat_ns_p99_9", "write p99.9"),
        ("fio.sync.lat_ns", "fsync latency"),
        ("wq.ext4-rsv-conversion.items_per_s", "wq.ext4-rsv-conversion.items_per_s"),
    ],
)
def test_metric_labels(metric, label):
    assert metric_label(metric) == label


def test_missing_metric_label():
    assert metric_label(None) == "-"
    assert metric_label(None, missing="result") == "result"


# --- latency: one unit switch, at 1 ms (text.fmt_ns's), not at 100 us --------------------


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (500_000.0, "500us"),  # units.format_metric_value printed "0.50ms"
        (999_000.0, "999us"),
        (1_200_000.0, "1.20ms"),
        (2.5e9, "2.50s"),
        (None, "-"),
        (float("nan"), "-"),
    ],
)
def test_latency_switches_to_ms_at_one_ms(ns, text):
    assert format_ns(ns) == text
    assert format_value("fio.sync.lat_ns_p99", ns) == text


def test_values_with_units():
    assert format_value("fio.write.iops", 22_000.0) == "22.0K"
    assert format_value("fio.write.iops", 950.0) == "950"
    assert format_value("dd.bw_bytes_s", 602_000.0) == "602kB/s"
    assert format_value("dd.bw_bytes_s", 43.8e6) == "43.8MB/s"


# --- sweep points: one key, one label -----------------------------------------------------


def test_empty_sweep_value_is_none_everywhere():
    """The reply printed "fill_leave_free=", the text report's header "(none)": "(none)" won."""
    assert value_label("") == "(none)"
    assert point_label({"fill_leave_free": "", "numjobs": 1}) == "fill_leave_free=(none) numjobs=1"
    assert point_label(point_key({"fill_leave_free": "2GiB"})) == "fill_leave_free=2GiB"


def test_point_without_axes():
    assert point_label(()) == "(no sweep)"
    assert point_label({}, empty="") == ""


def test_point_key_keeps_spec_order_and_drops_axes():
    sweep = {"numjobs": 8, "bs": "16k", "fill_percent": 90}
    assert point_key(sweep) == (("numjobs", 8), ("bs", "16k"), ("fill_percent", 90))
    assert point_key(sweep, drop=["numjobs"]) == (("bs", "16k"), ("fill_percent", 90))
