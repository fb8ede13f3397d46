"""Store rows come back typed: the spec as the validated `Spec`, the host as
`HostFacts`, a point's facts as `PointFacts`; parsed once at the store border,
on campaigns recorded by fslab (tests/data, bench/spaced/data).

The rule that won where two disagreed: a spec's fingerprint is taken from the
validated spec (defaults filled in), so a campaign stored by an older fslab,
whose JSON lacks fields added since, matches the same spec stored today. It
used to be hashed from the stored JSON, and `fslab calibrate`/`series`, which
hash a freshly loaded spec, did not find the older campaigns.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.analyze.history.baselines import same_spec
from fslab.analyze.history.series import select_campaigns
from fslab.analyze.noise.model import spec_fingerprint
from fslab.base.errors import FslabError
from fslab.base.hostfacts import HostFacts
from fslab.cli import app
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec
from fslab.store.db import PlannedPoint, PointOutcome, Store
from fslab.store.exchange import export_campaign, import_campaign
from fslab.store.facts import FilesystemFacts, PointFacts

DATA = Path(__file__).parent / "data"
SPACED = Path(__file__).parent.parent / "bench" / "spaced" / "data"


def _spaced(n: int) -> dict:
    with gzip.open(SPACED / f"campaign-{n:03d}.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


def test_rows_are_typed_and_an_export_round_trips(tmp_path: Path) -> None:
    source = json.loads((DATA / "report_campaign_cached_write_quick.json").read_text())
    with Store(tmp_path / "r.db") as store:
        cid = import_campaign(store, source)
        campaign = store.campaign(cid)
        assert isinstance(campaign.spec, Spec) and isinstance(campaign.host, HostFacts)
        assert campaign.spec.workload.kind == "dd"
        assert campaign.host.nr_cpu_ids == source["campaign"]["host"]["nr_cpu_ids"]
        point = next(p for p in store.points(cid) if p.facts.fill)
        assert isinstance(point.facts, PointFacts)
        assert isinstance(point.facts.filesystem, FilesystemFacts)
        assert point.facts.filesystem.block_size_bytes == 4096
        assert point.facts.fill and point.facts.fill.bytes_filled > 0
        # facts the model does not name (the filesystem's uuid, raw dumpe2fs) are kept
        assert point.facts.filesystem.stored()["uuid"]
        exported = export_campaign(store, cid)
    for key in ("spec", "host", "device", "spec_toml", "overrides"):
        want = source["campaign"][key]
        if key == "overrides":
            want = {**want, "imported_from": source["campaign"]["id"]}
        assert exported["campaign"][key] == want, key
    assert [p["facts"] for p in exported["points"]] == [p["facts"] for p in source["points"]]


def test_a_host_fact_an_older_fslab_did_not_record_reads_as_not_recorded() -> None:
    stored = json.loads((DATA / "campaign_fsync_quick.json").read_text())["campaign"]["host"]
    assert "cpu_governor" not in stored  # recorded before fslab read the governor
    host = HostFacts.from_stored(stored)
    assert host.cpu_governor == "unknown" and host.fact("cpu_governor") is None
    assert host.fact("kernel_release") == stored["kernel_release"]
    assert host.to_dict() == stored


def test_an_older_campaign_matches_the_same_spec_stored_today(tmp_path: Path) -> None:
    old = _spaced(1)
    raw = old["campaign"]["spec"]
    assert "limits" not in raw["target"] and "vm" not in raw  # fields added since
    today = validate_spec(raw).model_dump(mode="json")
    assert today != raw
    with Store(tmp_path / "r.db") as store:
        a = import_campaign(store, old)
        again = {**old, "campaign": {**old["campaign"], "spec": today}}
        b = import_campaign(store, again)
        first, second = store.campaign(a), store.campaign(b)
        assert same_spec(first, second)
        found = select_campaigns(store, fingerprint=spec_fingerprint(validate_spec(raw)))
        assert [c.id for c in found] == [a, b]


def test_a_stored_spec_this_fslab_cannot_read_is_named_not_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.create_campaign(
            name="broken",
            spec={"name": "broken", "filesystems": []},
            spec_toml="",
            overrides={},
            host={"hostname": "box"},
            device=None,
            fslab_version="0",
            points=[PlannedPoint(0, "ext4", "ext4", {}, 0)],
        )
    result = CliRunner().invoke(app, ["list", "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "campaign 1 (stored spec): invalid spec" in result.output
    assert "filesystems" in result.output and "Traceback" not in result.output


def test_facts_that_do_not_read_back_name_the_point(tmp_path: Path) -> None:
    facts = {"filesystem": {"block_size_bytes": "big"}}
    spec = validate_spec(_spaced(1)["campaign"]["spec"]).model_dump(mode="json")
    with Store(tmp_path / "r.db") as store:
        cid = store.create_campaign(
            name="x",
            spec=spec,
            spec_toml="",
            overrides={},
            host={},
            device=None,
            fslab_version="0",
            points=[PlannedPoint(0, "ext4", "ext4", {}, 0)],
        )
        (point,) = store.points(cid)
        store.save_outcome(point.id, PointOutcome(status="ok"))
        with sqlite3.connect(tmp_path / "r.db") as conn:  # as a buggy older fslab stored them
            conn.execute("UPDATE points SET facts_json = ?", (json.dumps(facts),))
        wanted = rf"point {point.id}: stored PointFacts does not read back"
        with pytest.raises(FslabError, match=wanted):
            store.points(cid)
