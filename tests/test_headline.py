"""A campaign's headline: IOPS, unless it sweeps how much one I/O moves (fio's bs), where
bytes per second compare and operations do not. The case is a reproduced report run
--quick on this host (tests/data/headline, with the script that made it)."""

from __future__ import annotations

import json

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.versus.within import verdicts_at
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from fslab.workload.registry import headline_metric
from tests.conftest import DATA_DIR

CASE = DATA_DIR / "headline" / "bs-sweep.json"
COLD = DATA_DIR / "coldstart" / "coldstart-20261203-0922-vm.json"


def _data(tmp_path, case):
    store = Store(tmp_path / "h.db")
    return store, load_campaign(store, import_campaign(store, json.loads(case.read_text())))


def test_a_block_size_sweep_is_judged_in_bytes_per_second(tmp_path):
    store, data = _data(tmp_path, CASE)
    with store:
        assert data.headline == "fio.write.bw_bytes_s"  # 1m against 1024m writes
        assert data.axes() == ["bs"]


def test_a_job_count_sweep_keeps_iops(tmp_path):
    store, data = _data(tmp_path, COLD)
    with store:
        assert data.headline == "fio.write.iops"
        (verdict,) = verdicts_at(data, "ext4-default", (("numjobs", 1024),))
        assert verdict.row.metric == "fio.write.iops"  # the comparison table's too


def test_one_runs_headline_follows_its_points_axes():
    metrics = {"fio.write.iops": 3.0, "fio.write.bw_bytes_s": 3.2e9}
    assert headline_metric([metrics]) == "fio.write.iops"
    assert headline_metric([metrics], {"bs": "1024m"}) == "fio.write.bw_bytes_s"
