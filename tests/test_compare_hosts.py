"""`fslab compare ID --by host` on a shared store (SQLite and PostgreSQL): the
machines side by side first, then the verdicts; the recorded campaign of
tests/data stored as run on two hosts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fslab.cli import app
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"


def _two_hosts(location: str) -> tuple[int, int]:
    data = json.loads((DATA / "campaign_fsync_quick.json").read_text())
    with Store(location) as store:
        a = import_campaign(store, {**data, "campaign": {**data["campaign"], "host_name": "box-a"}})
        b = import_campaign(store, {**data, "campaign": {**data["campaign"], "host_name": "box-b"}})
    return a, b


def test_compare_by_host_shows_the_machines_before_any_verdict(new_db):
    location = new_db()
    a, _ = _two_hosts(location)
    result = CliRunner().invoke(app, ["compare", str(a), "--by", "host", "--db", location])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    words = [(line.split(), line) for line in lines if len(line.split()) >= 2]
    rows = {w[1] if w[0] == "≠" else w[0]: line for w, line in words}
    assert "box-a" in rows["host"] and "box-b" in rows["host"] and "≠" in rows["host"]
    for fact in ("CPU", "online", "nr_cpu_ids", "memory", "kernel", "device"):
        assert fact in rows and "≠" not in rows[fact]  # one recording: the same machine
    first_verdict = next(i for i, line in enumerate(lines) if "verdict" in line)
    assert lines.index(rows["nr_cpu_ids"]) < first_verdict

    as_json = CliRunner().invoke(
        app, ["compare", str(a), "--by", "host", "--db", location, "--json"]
    )
    data = json.loads(as_json.output)
    facts = {f["fact"]: f for f in data["hosts"]}
    assert facts["host"]["values"] == ["box-a", "box-b"] and facts["host"]["differs"]
    assert not facts["nr_cpu_ids"]["differs"]
    assert len(data["comparisons"]) >= 1


def test_compare_by_host_without_another_host_says_so(new_db):
    location = new_db()
    data = json.loads((DATA / "campaign_fsync_quick.json").read_text())
    with Store(location) as store:
        a = import_campaign(store, data)
    result = CliRunner().invoke(app, ["compare", str(a), "--by", "host", "--db", location])
    assert result.exit_code == 1
    assert "no other host" in " ".join(result.output.split())
    two = CliRunner().invoke(app, ["compare", str(a), str(a), "--by", "host", "--db", location])
    assert two.exit_code == 2 and "give one id" in " ".join(two.output.split())
