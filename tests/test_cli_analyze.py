"""`fslab compare`, `fslab scale`, `fslab profile` and `run --until-ci` option checks,
through the CLI, on real campaigns imported from tests/data (see test_comparisons.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.stacks.fold import parse_folded
from fslab.stacks.profile import Profile
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"
QUICK, DIOREAD, NOCOLLECT = "1", "2", "3"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("cli") / "r.db"
    with Store(path) as store:
        for name in ("quick", "dioread", "nocollect"):
            data = json.loads((DATA / f"campaign_fsync_{name}.json").read_text())
            import_campaign(store, data)
    return str(path)


def fslab(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _flat(text: str) -> str:
    """Error messages are wrapped at 80 columns; compare them as one line."""
    return " ".join(text.split())


def _narrow(text: str) -> bool:
    return all(len(line) <= 80 for line in text.splitlines())


# --- compare ------------------------------------------------------------------------


def test_compare_by_filesystem(db):
    result = fslab("compare", QUICK, "--by", "filesystem", "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "ext4-journal1g vs ext4-default (baseline)" in out
    assert "write IOPS" in out and "fsync p99" in out
    # numjobs=1024: fsync p99 2.20 s vs 227.54 ms, ratio 0.10 [0.06-0.13], BH p 0.070
    assert "2.20s 227.54ms  0.10  0.06-0.13 0.070 needs more runs" in out
    # 256 jobs: 0.97 [0.78-1.13]: a change of the gate's size is still possible
    assert "12 compared: 12 needs more runs" in out
    assert _narrow(out)


def test_compare_json(db):
    result = fslab("compare", QUICK, "--by", "filesystem", "--db", db, "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    (comparison,) = data["comparisons"]
    assert comparison["candidate"] == "ext4-journal1g"
    assert len(comparison["rows"]) == 12 and data["failed"] is False
    row = next(
        r
        for r in comparison["rows"]
        if r["point"] == {"numjobs": 1024} and r["metric"] == "fio.sync.lat_ns_p99"
    )
    assert row["verdict"] == "needs more runs" and row["ci_high"] < 0.2


def test_fail_on_regression_exit_code(db):
    # baseline: ext4-default with dioread_lock; candidate: without it
    args = ["compare", DIOREAD, QUICK, "--db", db]
    failing = fslab(*args, "--fail-on-regression", "50")
    assert failing.exit_code == 1
    assert "1 significant regression(s) worse than 50%" in _flat(failing.stderr)
    assert "fsync p99 at config=ext4-default numjobs=1024" in _flat(failing.stderr)
    assert fslab(*args, "--fail-on-regression", "5000").exit_code == 0
    assert fslab(*args).exit_code == 0
    assert fslab("compare", QUICK, DIOREAD, "--db", db, "--fail-on-regression", "0").exit_code == 0
    bad = fslab(*args, "--fail-on-regression", "-5")
    assert bad.exit_code == 2 and ">= 0" in _flat(bad.stderr)
    as_json = json.loads(fslab(*args, "--fail-on-regression", "50", "--json").stdout)
    assert as_json["failed"] is True
    assert len(as_json["comparisons"][0]["regressions"]) == 1


def test_compare_two_campaigns(db):
    result = fslab("compare", QUICK, DIOREAD, "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("campaign 1: ext4-fsync-storm, 6.18.44-fc-v782 on vm, ")
    assert "ext4-default: campaign 2 vs campaign 1 (baseline)" in out
    assert "ext4-journal1g: campaign 2 vs campaign 1 (baseline)" in out
    assert "better: fio.sync.lat_ns_p99 -92.8%" in out
    assert "24 compared: 1 better" in out
    assert _narrow(out)


def test_compare_adds_metrics_by_glob(db):
    result = fslab("compare", QUICK, "--by", "filesystem", "--metric", "jbd2.*", "--db", db)
    assert result.exit_code == 0
    # long evidence names get a table each, titled with the name: still 80 columns
    assert "\n  jbd2.avg_commit_ms\n" in result.stdout
    assert "\n  write IOPS\n" in result.stdout and _narrow(result.stdout)
    missing = fslab("compare", QUICK, "--by", "filesystem", "--metric", "nope.*", "--db", db)
    assert missing.exit_code == 2 and "matches no stored metric" in _flat(missing.stderr)


def test_compare_prints_call_chain_shares_as_the_report_does(db):
    """In percent, named by their function, with the report's legend (test_comparison_cells)."""
    glob = "profile.inclusive.ext4_do_writepages"
    result = fslab("compare", QUICK, "--by", "filesystem", "--metric", glob, "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\n  ext4_do_writepages\n" in out and "62.16%" in out and "0.622" not in out
    assert "Rows in % are perf-profile call-chain shares" in out and _narrow(out)
    plain = fslab("compare", QUICK, "--by", "filesystem", "--db", db).stdout
    assert "call-chain shares" not in plain


def test_compare_by_an_axis_compares_its_values_inside_one_campaign(db):
    """--by AXIS (how kernels and CPU counts of guests are compared): each value against
    the first, points matched by configuration and the other sweep values."""
    result = fslab("compare", QUICK, "--by", "numjobs", "--db", db)
    assert result.exit_code == 0, result.stderr
    out = _flat(result.stdout)
    assert "numjobs=1: on the host" in out and "numjobs=1024: on the host" in out
    assert "ext4-default: numjobs=1024 vs numjobs=1 (baseline)" in out
    assert "ext4-journal1g: numjobs=1024 vs numjobs=1 (baseline)" in out


def test_compare_one_run_per_point_says_what_to_do(db):
    result = fslab("compare", NOCOLLECT, "--by", "filesystem", "--db", db)
    assert result.exit_code == 0
    assert "only 1 run(s) per point" in result.stdout and "--until-ci" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((QUICK,), "give a second campaign id"),
        ((QUICK, DIOREAD, "--by", "filesystem"), "give one id"),
        ((QUICK, "--by", "kernel"), "does not sweep kernel"),
        (
            (QUICK, "--by", "numjobs", "--baseline", "3"),
            "--baseline '3': numjobs takes 1, 16, 64, 256, 512, 1024",
        ),
        ((QUICK, DIOREAD, "--baseline", "x"), "--baseline applies"),
        ((QUICK, "--by", "filesystem", "--baseline", "xfs"), "no configuration 'xfs'"),
        (("99", "--by", "filesystem"), "no campaign 99"),
    ],
)
def test_compare_usage_errors(db, args, message):
    result = fslab("compare", *args, "--db", db)
    assert result.exit_code in (1, 2)
    assert message in _flat(result.stderr)


# --- scale --------------------------------------------------------------------------


def test_scale_real_campaign(db):
    result = fslab("scale", QUICK, "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "campaign 1 ext4-fsync-storm: write IOPS over numjobs" in out
    assert out.count("USL fit over 6 points") == 2
    assert out.count("coherency-limited: throughput peaks and then falls") == 2
    assert "peak 13777 at N* = 15.6" in out  # ext4-default
    assert "knee at N=64" in out  # ext4-journal1g
    assert "which coefficient moved" in out
    assert _narrow(out)


def test_scale_shows_the_cliff(db):
    result = fslab("scale", NOCOLLECT, "--config", "ext4-default", "--db", db)
    assert result.exit_code == 0
    assert "cliff between numjobs=256 and numjobs=1024" in result.stdout
    assert "last before cliff" in result.stdout


def test_scale_json(db):
    data = json.loads(fslab("scale", QUICK, "--json", "--db", db).stdout)
    assert data["axis"] == "numjobs" and len(data["curves"]) == 2
    assert data["curves"][0]["fit"]["classification"] in (
        "coherency-limited",
        "contention-limited",
        "linear",
    )


def test_scale_refusals(db):
    latency = fslab("scale", QUICK, "--metric", "fio.sync.lat_ns_p99", "--db", db)
    assert latency.exit_code == 2 and "not a throughput" in _flat(latency.stderr)
    axis = fslab("scale", QUICK, "--axis", "iodepth", "--db", db)
    assert axis.exit_code == 2 and "does not sweep 'iodepth'" in _flat(axis.stderr)


# --- profile ------------------------------------------------------------------------


def test_profile_default_point(db):
    # the worst point (numjobs=1024, past the peak) kept only its off-CPU profile
    result = fslab("profile", QUICK, "--top", "8", "--db", db)
    assert result.exit_code == 1 and "stored no profile.oncpu.folded" in result.output
    result = fslab("profile", QUICK, "--sweep", "numjobs=512", "--top", "8", "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("campaign 1 #8 ext4-default numjobs=512 rep 0 (on-CPU)")
    assert "top 8 functions by inclusive share" in out
    assert "top 8 functions by self share" in out
    assert "add_transaction_credits" in out
    assert "[fio]" in out and "[unknown]" in out  # not eaten as markup
    assert _narrow(out)


def test_profile_exports(db, tmp_path):
    folded, speed, svg = tmp_path / "p.folded", tmp_path / "p.json", tmp_path / "p.svg"
    result = fslab(
        "profile", QUICK, "--point", "8", "--db", db,
        "--folded", str(folded), "--speedscope", str(speed), "--svg", str(svg),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    profile = Profile.from_folded(folded.read_text())
    assert profile.total == 2509
    doc = json.loads(speed.read_text())
    assert doc["profiles"][0]["unit"] == "seconds"  # 1 / 499 Hz per sample
    assert sum(doc["profiles"][0]["weights"]) == pytest.approx(2509 / 499)
    assert svg.read_text().startswith("<?xml") and "add_transaction_credits" in svg.read_text()
    assert f"wrote {svg} (svg)" in _flat(result.stderr)


def test_profile_offcpu_json(db):
    result = fslab("profile", QUICK, "--offcpu", "--json", "--db", db)
    data = json.loads(result.stdout)
    assert data["kind"] == "offcpu" and data["point"]["seq"] == 34  # worst: numjobs=1024
    assert data["top_self"][0]["name"] == "add_transaction_credits"
    assert data["states"]["[D]"] > 0.9


def test_profile_by_config_and_sweep(db):
    result = fslab(
        "profile", QUICK, "--config", "ext4-default", "--sweep", "numjobs=16", "--db", db
    )
    assert result.exit_code == 0
    assert result.stdout.startswith("campaign 1 #2 ext4-default numjobs=16 rep 0")


def test_profile_diff(db, tmp_path):
    svg, folded = tmp_path / "d.svg", tmp_path / "d.folded"
    result = fslab(
        "profile", QUICK, "--diff", "ext4-default:numjobs=16", "8",
        "--svg", str(svg), "--folded", str(folded), "--top", "5", "--db", db,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "A #2 ext4-default numjobs=16 rep 0" in out
    assert "B #8 ext4-default numjobs=512 rep 0" in out
    functions = out.split("functions\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert any("start_this_handle" in line for line in functions[1:4])
    assert "call chains" in out and "threads" in out
    assert _narrow(out)
    lines = folded.read_text().splitlines()
    assert lines and all(len(line.rsplit(" ", 2)) == 3 for line in lines)
    a_total = sum(int(line.rsplit(" ", 2)[1]) for line in lines)
    b_total = sum(int(line.rsplit(" ", 2)[2]) for line in lines)
    assert (a_total, b_total) == (2502, 2509)
    assert "red grew, blue shrank" in svg.read_text()


def test_profile_without_collectors_says_why(db):
    result = fslab("profile", NOCOLLECT, "--db", db)
    assert result.exit_code == 1
    assert "no collector ran" in _flat(result.stderr)
    assert "ext4-default numjobs=1024" in _flat(result.stderr)  # the worst point was chosen


def test_profile_trimmed_point_says_what_is_missing(db):
    result = fslab("profile", QUICK, "--point", "4", "--db", db)
    assert result.exit_code == 1
    assert "perf collector ran but stored no profile.oncpu.folded" in _flat(result.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--diff", "2", "8", "--speedscope", "x.json"), "--speedscope exports one profile"),
        (("--diff", "2", "8", "--point", "3"), "--diff A B names its points"),
        (("--point", "3", "--config", "ext4-default"), "--point names one point"),
        (("--config", "xfs"), "no configuration 'xfs'"),
        (("--sweep", "numjobs"), "is not axis=value"),
    ],
)
def test_profile_usage_errors(db, args, message):
    result = fslab("profile", QUICK, *args, "--db", db)
    assert result.exit_code == 2
    assert message in _flat(result.stderr)


def test_folded_export_round_trips(db, tmp_path):
    path = tmp_path / "p.folded"
    fslab("profile", QUICK, "--offcpu", "--folded", str(path), "--db", db)
    counts = parse_folded(path.read_text())
    assert counts and all(stack.startswith("fio;[") for stack in counts)


# --- run --until-ci, --collect: option checks happen before anything runs -------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--until-ci", "0"), "positive percentage"),
        (("--until-ci", "5", "--max-repeat", "2"), "at least 3"),
        (("--max-repeat", "5"), "only applies with --until-ci"),
        (("--collect", "sometimes"), "--collect must be one of separate, inline, off"),
        (("--collect", "inline", "--no-collect"), "--no-collect contradicts --collect=inline"),
    ],
)
def test_run_option_errors(tmp_path, args, message):
    db = tmp_path / "r.db"
    result = fslab("run", "ext4-fsync-storm", "--quick", *args, "--db", str(db))
    assert result.exit_code == 2
    assert message in _flat(result.stderr)
    with Store(db) as store:
        assert store.campaigns() == []


# --- run --collect: a resumed campaign keeps its mode ----------------------------------


def test_resume_keeps_the_mode_the_campaign_was_planned_with(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        data = json.loads((DATA / "campaign_fsync_separate.json").read_text())
        cid = import_campaign(store, data)
        before = [(p.id, p.status) for p in store.points(cid)]
    for args in (("--no-collect",), ("--collect", "inline")):
        result = fslab("run", "--resume", str(cid), *args, "--db", str(db))
        assert result.exit_code == 2
        assert "was planned with --collect=separate" in _flat(result.stderr)
    with Store(db) as store:
        assert [(p.id, p.status) for p in store.points(cid)] == before


# --- diagnose -----------------------------------------------------------------------


def test_diagnose_ranks_credits_first_and_rules_out_the_workqueue(db):
    result = fslab("diagnose", QUICK, "--db", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "1. ext4 journal reserved-credit exhaustion [jbd2-reserved-credits]" in out
    assert "confirms: ext4-journal1g at numjobs=1024: journal credits 0% of threads" in out
    assert "ruled out:" in out and "[workqueue-serialisation]" in out
    assert _narrow(out)


def test_diagnose_hypothesis(db):
    result = fslab("diagnose", QUICK, "--hypothesis", "workqueue-serialisation", "--db", db)
    assert result.exit_code == 0, result.output
    assert "ext4-default (ext4): hypothesis workqueue-serialisation" in result.stdout
    assert "verdict: ruled out: ext4-rsv-conversion" in _flat(result.stdout)
    data = json.loads(
        fslab("diagnose", QUICK, "--hypothesis", "jbd2-commit-wait", "--json", "--db", db).stdout
    )
    assert data["hypothesis"] == "jbd2-commit-wait"
    assert data["configs"][0]["hypothesis"]["mechanism"] == "jbd2-commit-wait"
    bad = fslab("diagnose", QUICK, "--hypothesis", "nonsense", "--db", db)
    assert bad.exit_code == 2 and "no such mechanism" in _flat(bad.stderr)
