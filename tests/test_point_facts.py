"""A point's facts typed both ways (store/facts.py): written strictly, so a misspelt key
fails where it is written; read leniently, so what another fslab stored still reads,
renders and exports unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from fslab.store.db import PointOutcome, Store
from fslab.store.exchange import export_campaign, import_campaign
from fslab.store.facts import FilesystemFacts, HostCpuFacts, PointFacts
from fslab.target import fs

DATA = Path(__file__).parent / "data"
RECORDED = sorted(p for p in DATA.rglob("*.json") if '"fslab-campaign"' in p.read_text()[:200])
TOOL_OUTPUT = {
    "ext4": [
        "target_dumpe2fs_ext4_default_16g.txt",
        "target_dumpe2fs_ext4_journal1024_16g.txt",
        "target_dumpe2fs_ext4_bigalloc_16g.txt",
        "target_dumpe2fs_ext4_used_16g.txt",
    ],
    "xfs": ["target_xfs_info_default_16g_device.txt", "target_xfs_info_default_16g_mounted.txt"],
    "btrfs": ["target_btrfs_show_16g.txt"],
}
PARSERS = {"ext4": fs.parse_dumpe2fs, "xfs": fs.parse_xfs_info, "btrfs": fs.parse_btrfs_show}


def test_a_misspelt_fact_raises_where_it_is_written() -> None:
    with pytest.raises(ValidationError, match="mount_option_effective"):
        PointFacts(mount_option_effective="rw")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="steal_pc"):
        PointFacts.model_validate({"host_cpu": {"steal_pc": 1.0}})  # nested too
    with pytest.raises(ValidationError, match="guest_points_s"):
        PointFacts(config="ext4").updated(guest_points_s=1.0)
    with pytest.raises(ValidationError, match="timing"):
        PointFacts().updated(timing="slow")  # a known name with a wrong type


def test_updated_sets_what_it_names_and_keeps_the_rest() -> None:
    facts = PointFacts(config="ext4").updated(host_cpu=HostCpuFacts(steal_pct=0.5))
    facts = facts.updated(guest_point_s=1.25)
    assert facts.stored() == {
        "config": "ext4",
        "host_cpu": {"steal_pct": 0.5},
        "guest_point_s": 1.25,
    }


def test_the_read_path_keeps_what_it_does_not_know() -> None:
    stored = {"config": "ext4", "future_fact": [1, 2], "host_cpu": {"steal_pct": 1.0, "new": 3}}
    for facts in (PointFacts.read(stored), PointFacts.read_json(json.dumps(stored))):
        assert facts.config == "ext4" and facts.host_cpu and facts.host_cpu.steal_pct == 1.0
        assert facts.stored() == stored  # an export round-trips
    with pytest.raises(ValidationError):  # lenient with names, not with types
        PointFacts.read({"host_cpu": {"steal_pct": "high"}})


def _extras(model: BaseModel, where: str = "facts") -> list[str]:
    found = [f"{where}.{k}" for k in model.model_extra or {}]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            found += _extras(value, f"{where}.{name}")
    return found


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_every_recorded_fact_is_modelled_and_reads_back_as_stored(path: Path) -> None:
    """The campaigns in tests/data, recorded by earlier fslab versions, carry no key the
    models do not name: the strict write path accepts them as they are."""
    points: list[dict[str, Any]] = json.loads(path.read_text())["points"]
    assert points
    for point in points:
        facts = PointFacts.read(point["facts"])
        assert _extras(facts) == [], point["seq"]
        assert facts.stored() == point["facts"]
        assert PointFacts.model_validate(point["facts"]) == facts  # strictly, as written


@pytest.mark.parametrize(
    ("fs_type", "name"), [(t, n) for t, names in TOOL_OUTPUT.items() for n in names]
)
def test_what_describe_filesystem_writes_is_modelled(fs_type: str, name: str) -> None:
    text = (DATA / name).read_text()
    described = {"fs_type": fs_type, **PARSERS[fs_type](text), "raw": text}
    assert FilesystemFacts.model_validate(described).stored() == json.loads(json.dumps(described))


def test_an_export_with_facts_this_fslab_does_not_know_imports_and_exports_unchanged(
    tmp_path: Path,
) -> None:
    data = json.loads((DATA / "report_campaign_single_point.json").read_text())
    (point, *_) = data["points"]
    point["facts"]["from_a_newer_fslab"] = {"x": 1}
    point["facts"]["filesystem"]["new_field"] = "kept"
    with Store(tmp_path / "r.db") as store:
        cid = import_campaign(store, data)
        (row, *_) = store.points(cid)
        assert row.facts.stored()["from_a_newer_fslab"] == {"x": 1}
        exported = export_campaign(store, cid)
    assert exported["points"][0]["facts"] == point["facts"]


def test_an_outcome_holds_typed_facts() -> None:
    outcome = PointOutcome(status="ok", facts=PointFacts(config="ext4"))
    assert outcome.facts.config == "ext4" and PointOutcome(status="ok").facts == PointFacts()
