"""`fslab report` on real recorded campaigns: text, HTML and JSON (no root).

The campaigns in tests/data/report_campaign_*.json were recorded by
tests/data/report_capture.sh (`fslab run ...` then `fslab export`): the two
seed presets in their --quick form with 2 s runs and every collector, a
campaign with failed points (an XFS mount option that fails, and one fio
killed by fault injection), and a one-point campaign without a sweep.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.versus.within import config_comparisons
from fslab.cli import app
from fslab.report.html import inline_svg, render_html
from fslab.report.json_report import render_json, report_data
from fslab.report.model import build_report
from fslab.report.text import render_text
from fslab.report.text_blocks import shell_lines
from fslab.report.tree import Report
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"
DOC = Path(__file__).parent.parent / "docs" / "report-json.md"
CAMPAIGNS = {
    "fsync": "report_campaign_fsync_quick.json",
    "cached": "report_campaign_cached_write_quick.json",
    "failed": "report_campaign_failed_points.json",
    "single": "report_campaign_single_point.json",
}
ANSI = re.compile(r"\x1b\[")
# the only URLs allowed: XML namespace names, which browsers never fetch
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


class Rendered:
    """One campaign imported into a fresh store, its model and the three renderings."""

    def __init__(self, store: Store, campaign_id: int) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.report: Report = build_report(store, campaign_id)
        self.text = render_text(self.report)
        self.html = render_html(self.report)
        self.json = json.loads(render_json(self.report))


def _import(tmp: Path, data: dict[str, Any]) -> tuple[Store, int]:
    store = Store(tmp / "results.db")
    return store, import_campaign(store, data)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    out = {}
    for key, name in CAMPAIGNS.items():
        store, cid = _import(tmp_path_factory.mktemp(key), json.loads((DATA / name).read_text()))
        out[key] = Rendered(store, cid)
    return out


# ------------------------------------------------------------------ text


TEXT_SECTIONS = (
    "Setup",
    "Reproduce one point by hand",
    "Results",
    "Comparisons",
    "Hottest kernel call chains at the worst point",
    "Contention evidence: best vs worst point",
    "Diagnosis",
)


@pytest.mark.parametrize("key", list(CAMPAIGNS))
def test_text_is_mailing_list_plain(rendered: dict[str, Rendered], key: str) -> None:
    text = rendered[key].text
    too_long = [line for line in text.splitlines() if len(line) > 80]
    assert not too_long, too_long
    assert not ANSI.search(text)
    assert "\t" not in text
    for title in TEXT_SECTIONS:
        assert re.search(rf"\n{re.escape(title)}[^\n]*\n-+\n", text), title


def test_text_fsync_shows_setup_results_and_evidence(rendered: dict[str, Rendered]) -> None:
    r = rendered["fsync"]
    text = r.text
    host = r.report.setup.host
    assert f"kernel    {host.kernel_release}" in text
    assert f"nr_cpu_ids {host.nr_cpu_ids}" in text
    # effective mkfs, mount options read back, and the journal sizes the preset contrasts
    assert "mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 -J" in text
    assert "in effect  rw,noatime,nodiratime / rw,data=ordered" in text
    assert "journal    128.0MiB" in text and "journal    1.0GiB" in text
    # results: every configuration and sweep value with the median as the table prints it
    for row in r.report.results.rows:
        assert format_value(r.report.results.headline, row.median) in text
    assert "Scaling over numjobs (Universal Scalability Law)" in text
    assert "no USL fit: 3 numjobs value(s)" in text and "observed peak" in text
    # comparisons with verdict marks, perf-style chains, contention tables, diagnosis
    assert "ext4-journal1g vs ext4-default:" in text
    # the kernel test robot's form: base ± %stddev, %change, new ± %stddev, mark, metric
    assert re.search(r"^ +\S+ +.*[+-]\d+\.\d% +\S+ .*\?  write IOPS$", text, re.MULTILINE)
    assert re.search(r"^#1 +\d+\.\d\d%  \[fio\]", text, re.MULTILINE)
    assert re.search(r"^ +\d+\.\d\d%  --- \S+$", text, re.MULTILINE)
    assert "add_transaction_credits" in text
    assert "ext4-rsv-conversion" in text and "commits per second" in text
    assert "blocked in (wchan)" in text
    for entry in r.report.diagnosis.entries:
        assert entry.lines[0] in text


def test_reproduction_commands_paste_back_to_the_stored_argv(
    rendered: dict[str, Rendered],
) -> None:
    for key in ("fsync", "cached"):
        r = rendered[key]
        point = r.report.reproduce.point
        assert point is not None
        section = r.text.split("Reproduce one point by hand\n")[1].split("\nResults\n")[0]
        shown = [step.argv for step in r.report.reproduce.steps if step.argv]
        for argv in r.store.commands(point.point_id):
            assert argv in shown, argv
        for argv in shown:
            lines = shell_lines(argv)
            assert "\n".join(lines) in section
            # what a shell reads: backslash-newline removed, then words split
            assert shlex.split("\n".join(lines).replace("\\\n", "")[2:]) == argv


def test_shell_lines_wrap_within_80_columns_and_keep_words() -> None:
    argv = ["fio", "--directory=/run/fslab/" + "x" * 150, "--name=it's here", *["--opt=1"] * 20]
    lines = shell_lines(argv)
    assert all(len(line) <= 80 for line in lines)
    assert shlex.split("\n".join(lines).replace("\\\n", "")[2:]) == argv


# ------------------------------------------------------------------ degraded campaigns


def test_dd_campaign_says_why_latency_and_scaling_are_missing(
    rendered: dict[str, Rendered],
) -> None:
    r = rendered["cached"]
    assert "(dd reports only a rate: no latency percentiles)" in r.text
    assert "no concurrency axis" in r.text
    assert "watermark" in r.text.split("Results\n")[1]
    assert r.json["latency"]["cdfs"] == []
    assert any("dd reports only a rate" in n for n in r.json["latency"]["notes"])
    assert 'id="plot-bars"' in r.html and 'id="plot-cdf"' not in r.html
    assert "dd if=/dev/zero" in r.text
    reproduced = r.report.reproduce.point
    assert reproduced is not None
    point = next(p for p in r.store.points(r.campaign_id) if p.id == reproduced.point_id)
    assert ("fallocate -l" in r.text) == bool(point.facts.fill and point.facts.fill.bytes_filled)
    # a pre-filled point's recipe fills it the same way
    from fslab.analyze.campaign.dataset import load_campaign
    from fslab.report.evidence import point_ref
    from fslab.report.recipe import build_reproduce

    data = load_campaign(r.store, r.campaign_id)
    filled = next(p for p in data.ok_points() if p.facts.fill and p.facts.fill.bytes_filled)
    recipe = build_reproduce(r.store, data, point_ref(data, filled))
    steps = [step.argv for step in recipe.steps if step.argv]
    names = [argv[0] for argv in steps]
    assert names[0] == "truncate" and names.index("fallocate") == names.index("mount") + 1


def test_failed_points_are_listed_with_reasons(rendered: dict[str, Rendered]) -> None:
    r = rendered["failed"]
    failures = r.report.results.failures
    assert {f.config for f in failures} == {"xfs-badopt", "ext4"}
    assert "failed points:" in r.text
    assert "#1 xfs-badopt numjobs=4: mounting" in r.text
    assert "fio exited -9" in r.text
    assert "(xfs-badopt: no successful point, not compared)" in r.text
    xfs = next(fs for fs in r.report.setup.filesystems if fs.config == "xfs-badopt")
    assert xfs.notes and "no point succeeded" in xfs.notes[0] and "mounting" in xfs.notes[0]
    assert "<h3>Failed points</h3>" in r.html
    assert len(r.json["results"]["failures"]) == len(failures)


def test_report_and_compare_name_one_baseline_when_the_first_configuration_failed(
    tmp_path: Path,
) -> None:
    """The recorded campaign with its configurations' order swapped: xfs-badopt, whose every
    point failed, comes first. `compare --by filesystem` and the report both compare against
    ext4 (CampaignData.baseline_config); compare used to take xfs-badopt and compare nothing."""
    data = json.loads((DATA / CAMPAIGNS["failed"]).read_text())
    for point in data["points"]:
        point["seq"] ^= 1  # ext4 ran at even seqs, xfs-badopt at odd ones
    store, cid = _import(tmp_path, data)
    campaign = load_campaign(store, cid)
    assert campaign.configs() == ["xfs-badopt", "ext4"]
    assert campaign.baseline_config() == "ext4"
    report = build_report(store, cid)
    (comparison,) = config_comparisons(campaign)
    assert report.comparisons.baseline == comparison.baseline == "ext4"
    assert comparison.candidate == "xfs-badopt"
    flat = " ".join(render_text(report).split())
    assert "the first configuration, xfs-badopt, has no successful point; ext4 is the" in flat
    result = CliRunner().invoke(
        app,
        ["compare", str(cid), "--by", "filesystem", "--json", "--db", str(tmp_path / "results.db")],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["comparisons"][0]["baseline"] == "ext4"


def test_single_point_without_sweep(rendered: dict[str, Rendered]) -> None:
    r = rendered["single"]
    assert r.report.profiles.best is None
    assert "(one configuration (ext4): nothing to compare)" in r.text
    assert "(a single sweep point: no best-vs-worst difference)" in r.text
    assert "no concurrency axis" in r.text
    assert "sweep     none: every configuration runs one point" in r.text
    assert r.json["scaling"]["curves"] == []
    assert len(r.json["latency"]["cdfs"]) == 1  # the one point's distribution


def test_campaign_that_never_ran(tmp_path: Path) -> None:
    """Interrupted before its first point: every section says so, nothing crashes."""
    data = json.loads((DATA / CAMPAIGNS["failed"]).read_text())
    data["campaign"]["status"] = "interrupted"
    for point in data["points"]:
        point["status"] = "pending"  # import stores pending points without outcomes
    store, cid = _import(tmp_path, data)
    report = build_report(store, cid)
    text = render_text(report)
    assert "12 points: 0 ok, 0 failed, 12 not run" in text
    assert "(12 point(s) not run yet: fslab run --resume" in text
    assert "no configuration has a successful point" in " ".join(text.split())
    assert all(len(line) <= 80 for line in text.splitlines())
    assert render_html(report).endswith("</html>\n")
    assert report_data(report)["profiles"]["worst"] is None


def test_campaign_without_collectors_says_so(tmp_path: Path) -> None:
    data = json.loads((DATA / CAMPAIGNS["single"]).read_text())
    bare = _without_collectors(data)
    store, cid = _import(tmp_path, bare)
    report = build_report(store, cid)
    text = render_text(report)
    flat = " ".join(text.split())
    assert "no collector ran (the campaign was run with --no-collect" in flat
    assert "no collector metrics at the worst point" in flat
    assert report.profiles.oncpu.profile is None and report.contention.workqueues == []
    assert all(len(line) <= 80 for line in text.splitlines())
    html = render_html(report)
    assert "flame-worst" not in html and 'id="plot-cdf"' in html  # fio.json is kept


def _without_collectors(data: dict[str, Any]) -> dict[str, Any]:
    """The same recorded campaign as `--no-collect` stores it: no collector output."""
    bare = copy.deepcopy(data)
    workload_artifacts = {"fio.json", "fio.stderr", "dd.seconds_each.json"}
    for point in bare["points"]:
        point["collectors"] = {}
        point["artifacts"] = {
            k: v for k, v in point["artifacts"].items() if k in workload_artifacts
        }
        point["metrics"] = {
            k: v for k, v in point["metrics"].items() if k.split(".")[0] in ("fio", "dd", "fs")
        }
    return bare


def test_a_failing_diagnosis_is_reported_not_fatal(
    rendered: dict[str, Rendered], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("rule base unreadable")

    monkeypatch.setattr("fslab.report.model.diagnose_campaign", broken)
    r = rendered["single"]
    report = build_report(r.store, r.campaign_id)
    assert not report.diagnosis.available
    assert "diagnosis unavailable:" in render_text(report)
    assert report_data(report)["diagnosis"]["notes"][0].startswith("diagnosis unavailable:")


# ------------------------------------------------------------------ HTML


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs


@pytest.mark.parametrize("key", list(CAMPAIGNS))
def test_html_parses_and_fetches_nothing(rendered: dict[str, Rendered], key: str) -> None:
    html = rendered[key].html
    parser = _Collector()
    parser.feed(html)
    parser.close()
    assert parser.tags[:3] == ["html", "head", "meta"]
    for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.DOTALL):
        ET.fromstring(svg)  # every SVG is well-formed XML
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= NAMESPACES, urls - NAMESPACES
    assert "<script" not in html and "<link" not in html and "<iframe" not in html
    assert not [a for a in parser.attrs if a[0] in ("src", "srcset", "data")]
    assert "@import" not in html and "url(http" not in html


def test_html_fsync_has_the_plots_and_flame_graphs(rendered: dict[str, Rendered]) -> None:
    html = rendered["fsync"].html
    for plot in ("throughput", "latency", "cdf", "bars"):
        assert f'id="plot-{plot}"' in html, plot
    assert 'id="flame-worst-frames"' in html and 'id="flame-diff-frames"' in html
    for section in ("diagnosis", "setup", "reproduce", "results", "scaling", "latency"):
        assert f"<section id='{section}'>" in html
    assert "<h3 id='contention-workqueues'>Workqueues</h3>" in html
    assert "<h3 id='contention-jbd2'>jbd2 journal</h3>" in html


def test_html_lays_the_diagnosis_out_as_html(rendered: dict[str, Rendered]) -> None:
    html = rendered["fsync"].html
    section = html[html.index("<section id='diagnosis'>") : html.index("<section id='results'>")]
    assert "<pre>" not in section
    assert "<table class='evidence'>" in section and "good: numjobs=" in section
    assert "Counterfactual: configurations that held up" in section
    assert "<h4>Ruled out</h4>" in section and "workqueue-serialisation" in section
    assert "href='#flame-graph'" in section and "href='#contention-wchan'" in section
    ET.fromstring(f"<root>{section.replace('<br>', '')}</root>")  # well-formed
    # the same cells as the text report
    for row in rendered["fsync"].report.results.rows:
        assert format_value(rendered["fsync"].report.results.headline, row.median) in html


def test_inline_svg_prefixes_ids_and_drops_the_script() -> None:
    svg = (
        '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="init()">'
        "<style>#title { font-size: 15px; }</style><script><![CDATA[init()]]></script>"
        '<text id="title">t</text></svg>'
    )
    out = inline_svg(svg, "fg")
    assert out.startswith("<svg") and "script" not in out and "onload" not in out
    assert 'id="fg-title"' in out and "#fg-title {" in out
    ET.fromstring(out)


# ------------------------------------------------------------------ JSON


def _documented() -> dict[str, set[str]]:
    """{path: keys} from docs/report-json.md: "### `path`" headings and key tables."""
    documented: dict[str, set[str]] = {}
    paths: list[str] = []
    for line in DOC.read_text().splitlines():
        if line.startswith("### "):
            paths = re.findall(r"`([^`]+)`", line)
            for path in paths:
                documented.setdefault(path, set())
        elif line.startswith("| `") and paths:
            key = re.match(r"\| `([^`]+)`", line)
            assert key
            for path in paths:
                documented[path].add(key.group(1))
    return documented


def _at(data: Any, path: str) -> list[Any]:
    """Every value at a documented path (`a.b[]` walks each element of list b)."""
    values = [data]
    if path == "$":
        return values
    for part in path.split("."):
        is_list = part.endswith("[]")
        key = part[:-2] if is_list else part
        nxt = []
        for value in values:
            if isinstance(value, dict) and value.get(key) is not None:
                item = value[key]
                nxt += item if is_list else [item]
        values = nxt
    return values


@pytest.mark.parametrize("key", list(CAMPAIGNS))
def test_json_keys_match_the_documented_schema(rendered: dict[str, Rendered], key: str) -> None:
    data = rendered[key].json
    assert data["format"] == "fslab-report" and data["version"] == 1
    for path, keys in _documented().items():
        assert keys, f"{path}: no keys documented"
        for obj in _at(data, path):
            assert isinstance(obj, dict), path
            assert set(obj) == keys, (path, set(obj) ^ keys)


def test_json_covers_every_documented_object_on_the_fsync_report(
    rendered: dict[str, Rendered],
) -> None:
    data = rendered["fsync"].json
    missing = [path for path in _documented() if not _at(data, path)]
    # the fsync campaign has one run per point and no failure, and 3 sweep points: too
    # few for a USL fit (analyze.campaign_scaling), so these stay empty there
    fits = {p for p in _documented() if p.startswith(("scaling.curves[].fit", "scaling.moves"))}
    assert set(missing) <= {"results.failures[]", *fits}, missing


def test_json_and_text_agree(rendered: dict[str, Rendered]) -> None:
    r = rendered["fsync"]
    rows = r.json["results"]["rows"]
    assert [row["median"] for row in rows] == [row.median for row in r.report.results.rows]
    worst = r.json["profiles"]["worst"]
    assert f"{worst['label']}: " in r.text
    assert r.json["profiles"]["oncpu"]["chains_text"].splitlines()[0] in r.text


# ------------------------------------------------------------------ CLI


def test_cli_report_formats_and_latest_campaign(tmp_path: Path) -> None:
    store, cid = _import(tmp_path, json.loads((DATA / CAMPAIGNS["single"]).read_text()))
    store.close()
    db = str(tmp_path / "results.db")
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--db", db])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"fslab report: campaign {cid}, report-single-point")
    out_file = tmp_path / "r.html"
    result = runner.invoke(
        app, ["report", str(cid), "--format", "html", "-o", str(out_file), "--db", db]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out_file.resolve())
    assert out_file.read_text().startswith("<!DOCTYPE html>")
    result = runner.invoke(app, ["report", str(cid), "-f", "json", "--db", db])
    assert json.loads(result.output)["campaign"]["id"] == cid
    result = runner.invoke(app, ["report", "99", "--db", db])
    assert result.exit_code == 1 and "no campaign 99" in result.output
