"""`fslab report --format reply`: the answer to a bug report, on real recorded campaigns (no root).

The campaigns are `fslab export`s of real runs on this kind of 2-CPU VM:
tests/data/reply_campaign_*.json, each founding report reproduced by
`fslab reproduce REPORT --run --quick` (tests/data/reply_capture.sh), the
demo-shaped campaigns tests/test_report.py renders (no [reported] table:
a plain "here is what fslab found" reply; failed points; a single point),
and the diagnosis corpus (tests/data/corpus). The assertions are on
substance: the mechanism named first, the reporter's figure beside fslab's,
the hypothesis verdict, the remedy's verdict, 72 columns and nothing a mail
client would take for a quote.
"""

from __future__ import annotations

import copy
import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from bench.diagnosis_accuracy import CORPUS, manifest
from typer.testing import CliRunner

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.versus.reported import match_figures, reporter_point
from fslab.analyze.versus.within import verdicts_at
from fslab.cli import app
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.diagnose.hypotheses import judge_hypothesis
from fslab.diagnose.mechanisms import blamed_mechanism, load_rules
from fslab.report.reply import WIDTH, render_reply
from fslab.report.reply_model import Reply, build_reply
from fslab.reproduce.extract import extract_facts
from fslab.spec.comments import spec_comments
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from tests.conftest import DATA_DIR

REPORTS = DATA_DIR / "reports"
FSYNC = "reply_campaign_fsync_storm.json"
CACHED = "reply_campaign_cached_write.json"
PLAIN = {
    "fsync": "report_campaign_fsync_quick.json",
    "cached": "report_campaign_cached_write_quick.json",
    "failed": "report_campaign_failed_points.json",
    "single": "report_campaign_single_point.json",
}
ALL = [FSYNC, CACHED, *PLAIN.values(), *(f"corpus/{p.name}" for p in sorted(CORPUS.glob("*.json")))]
ALL.remove("corpus/manifest.json")
RAW: dict[str, dict[str, Any]] = {}


def _raw(name: str) -> dict[str, Any]:
    if name not in RAW:
        RAW[name] = json.loads((DATA_DIR / name).read_text())
    return copy.deepcopy(RAW[name])


def _store(tmp_path: Path, name: str, mutate=None) -> tuple[Store, int]:
    data = _raw(name)
    if mutate is not None:
        mutate(data)
    store = Store(tmp_path / f"{Path(name).stem}.db")
    return store, import_campaign(store, data)


def _reply(tmp_path: Path, name: str, mutate=None) -> tuple[Reply, str]:
    store, cid = _store(tmp_path, name, mutate)
    reply = build_reply(store, cid)
    return reply, render_reply(reply)


def _section(text: str, title: str) -> str:
    """The body of one underlined section of the reply ('' when absent)."""
    match = re.search(
        rf"^{re.escape(title)}\n-+\n(.*?)(?=\n\n[^ \n][^\n]*\n-+\n|\Z)", text, re.S | re.M
    )
    return match.group(1) if match else ""


def _first_mechanism(text: str) -> str | None:
    found = re.search(r"\[([a-z0-9-]+)\]", text)
    return found.group(1) if found else None


@pytest.fixture(scope="module")
def fsync(tmp_path_factory: pytest.TempPathFactory) -> tuple[Reply, str]:
    return _reply(tmp_path_factory.mktemp("fsync"), FSYNC)


# ------------------------------------------------------------------ every campaign


@pytest.mark.parametrize("name", ALL)
def test_reply_fits_72_columns_and_quotes_cleanly(tmp_path, name):
    _, text = _reply(tmp_path, name)
    lines = text.splitlines()
    assert len(lines) > 20
    for line in lines:
        assert len(line) <= WIDTH, line
        assert not line.startswith(">"), line
        assert line == line.rstrip() and "\t" not in line and "\x1b" not in line
    assert "In short:" in text and "What I ran" in text


def _truths_by_file() -> dict[str, dict[str, str]]:
    """Corpus file -> {configuration: its true mechanism}, from the corpus manifest."""
    truths: dict[str, dict[str, str]] = {}
    for case in manifest():
        truths.setdefault(case["file"], {})[case["config"]] = case["truth"]
    return truths


@pytest.mark.parametrize("file, truths", sorted(_truths_by_file().items()))
def test_corpus_reply_names_the_true_mechanism_first(tmp_path, file, truths):
    """The reply centres on the configuration with the deepest falloff, one the corpus
    knows the truth of, and names that configuration's true mechanism before any other."""
    reply, text = _reply(tmp_path, f"corpus/{file}")
    assert reply.focus is not None
    assert reply.focus.config in truths, f"the reply centres on {reply.focus.config}"
    truth = truths[reply.focus.config]
    why = _section(text, "Why it falls off") or _section(text, "Diagnosis")
    if truth == "none":
        assert "Nothing falls off" in why
        assert _first_mechanism(why) is None
    elif truth == "unknown":  # outside the rule base: said so, with the frames that grew
        assert "no mechanism in fslab's rule base explains the change" in " ".join(why.split())
        assert _first_mechanism(why) is None
        focus = reply.focus.config
        frames = next(c["frames"] for c in manifest() if (c["file"], c["config"]) == (file, focus))
        assert any(frame in why for frame in frames), why
    else:
        assert _first_mechanism(why) == truth, why
        assert _first_mechanism(text.split("In short:", 1)[1]) == truth


# ------------------------------------------------------------------ the fsync storm, reproduced


def test_fsync_reply_names_credit_exhaustion_first_with_evidence(fsync):
    reply, text = fsync
    assert text.startswith("Subject: Re: fio IOPS collapse on ext4 after moving from 4.14 to 5.10")
    assert reply.focus is not None and reply.focus.top == "jbd2-reserved-credits"
    why = _section(text, "Why it falls off")
    assert _first_mechanism(why) == "jbd2-reserved-credits"
    assert "credit waiters (threads)" in why  # its metric, with numbers
    assert "confirms: ext4-journal1g" in why  # the counterfactual
    assert "[workqueue-serialisation]" in why.split("Ruled out:", 1)[1]


def test_fsync_reply_puts_the_reporters_figures_beside_fslabs(fsync):
    reply, text = fsync
    figures = _section(text, "Your figures and mine")
    measured = {m.figure.text: m for m in reply.figures if m.figure is not None}
    ours = measured["22K"]
    assert ours.config == "ext4-reported" and ours.point is not None
    assert ours.point.reporter == "numjobs=2048" and ours.point.label == "numjobs=1024"
    assert not ours.point.exact  # --quick stops at 1024: the nearest measured
    figure = format_value("fio.write.iops", ours.measured)
    row = next(line for line in figures.splitlines() if "22K on 4.14" in line)
    assert row.split()[0] == "ext4-reported" and row.rstrip().endswith(figure)
    assert "less than 1K on 5.10" in figures
    assert "numjobs=1024 is the point measured nearest yours (numjobs=2048)" in " ".join(
        figures.split()
    )
    remedy = next(line for line in figures.splitlines() if line.split()[:1] == ["ext4-journal1g"])
    other = next(m for m in reply.figures if m.config == "ext4-journal1g")
    assert remedy.rstrip().endswith(format_value("fio.write.iops", other.measured))


def test_fsync_reply_judges_the_workqueue_hypothesis_as_the_diagnosis_does(tmp_path, fsync):
    reply, text = fsync
    (hypothesis,) = reply.hypotheses
    assert hypothesis.blamed is not None and hypothesis.blamed.name == "rsv_conversion_wq"
    assert hypothesis.blamed.rule.id == "workqueue-serialisation"
    store, cid = _store(tmp_path, FSYNC)
    focus = {d.config: d for d in diagnose_campaign(store, cid)}["ext4-reported"]
    judged = judge_hypothesis(focus, "workqueue-serialisation")
    assert judged.verdict == "ruled out"  # not the bottleneck: busy a fraction of the time
    section = " ".join(_section(text, "Your hypothesis").split())
    assert f"Verdict on ext4-reported: ruled out: {judged.text}" in section
    assert re.search(r"busy \d+% of the time", section)
    assert "commit 244adf6426ee" in section  # what could not be tested, said


def test_fsync_reply_gives_the_remedy_a_verdict_from_the_comparison(tmp_path, fsync):
    _, text = fsync
    store, cid = _store(tmp_path, FSYNC)
    data = load_campaign(store, cid)
    (verdict,) = verdicts_at(data, "ext4-reported", (("numjobs", 1024),))
    assert verdict.candidate == "ext4-journal1g"
    helps = " ".join(_section(text, "What helps").split())
    assert "against ext4-reported at numjobs=1024" in helps
    remedy = 'ext4-journal1g (the remedy the report names: "increase the journal size" (line 12))'
    assert f"{remedy}: {verdict.row.verdict}, {verdict.row.change_pct:+.0f}%" in helps
    assert verdict.row.n_baseline >= 3 and verdict.row.n_candidate >= 3  # --quick: 4 a point
    assert "mkfs.ext4 -J size=1024" in helps  # the diagnosis's remedy


def test_fsync_reply_says_how_it_ran_and_what_could_not_be_reproduced(fsync):
    _, text = fsync
    ran = " ".join(_section(text, "What I ran").split())
    assert "# fslab reproduce ext4-fsync-storm.txt --run --quick" in ran
    assert "scaled: the reporter's 27.5MiB per job x 2048 jobs = 54.9GiB" in ran
    assert (
        "sweep.numjobs = [16, 256, 1024] (--quick; the spec: [1, 4, 16, 64, 256, 1024, 2048])"
        in ran
    )
    assert "# mkfs.ext4" in ran and "# fio" in ran  # the worst point's commands
    missing = " ".join(_section(text, "What I could not reproduce here").split())
    assert "kernel 5.10 (line 5)" in missing and "cpus 64 (line 5)" in missing
    assert "assumed: 64,000 IOPS" in missing


def test_reply_follows_the_reporters_point(tmp_path):
    """A reporter's point that was measured is matched exactly, and the figures follow it."""

    def at_256(data):
        data["campaign"]["spec"]["reported"]["point"] = {"numjobs": 256}

    store, cid = _store(tmp_path, FSYNC, at_256)
    data = load_campaign(store, cid)
    reported = data.campaign.spec.reported
    assert reported is not None
    point, _ = reporter_point(data, "ext4-reported", reported.point)
    assert point is not None and point.exact and point.label == "numjobs=256"
    (first, *_) = match_figures(data, reported)
    values = data.values("fio.write.iops", "ext4-reported")[(("numjobs", 256),)]
    assert first.measured == statistics.median(values) and first.runs == len(values)
    text = render_reply(build_reply(store, cid))
    assert "nearest yours" not in text and "here (2 CPUs), numjobs=256" in text


# ------------------------------------------------------------------ campaigns without [reported]


def test_plain_reply_is_what_fslab_found(tmp_path):
    reply, text = _reply(tmp_path, PLAIN["fsync"])
    assert reply.reported is None
    assert text.startswith("Hi,\n\nhere is what fslab")
    assert "Your figures and mine" not in text and "Your hypothesis" not in text
    measured = _section(text, "What fslab measured")
    assert "ext4-default" in measured and "numjobs" in measured
    assert "# fslab run ext4-fsync-storm --quick --set run.runtime=2s" in text


def test_reply_with_failed_points_says_which_and_why(tmp_path):
    _, text = _reply(tmp_path, PLAIN["failed"])
    measured = " ".join(_section(text, "What fslab measured").split())
    # the re-recorded campaign runs an evidence run a point: each point is named once
    assert "xfs-badopt: 6 runs failed (numjobs=4, numjobs=16, numjobs=64): mounting" in measured
    assert "ext4: 1 run failed (numjobs=16): fio exited -9" in measured
    assert "7 of 12 runs failed" in _section(text, "What I could not reproduce here")


def test_single_point_reply_has_nothing_to_explain(tmp_path):
    _, text = _reply(tmp_path, PLAIN["single"])
    assert "Nothing falls off" in _section(text, "Diagnosis")
    assert "What helps" not in text  # one configuration: nothing to compare


def test_cli_writes_the_reply(tmp_path):
    store, cid = _store(tmp_path, FSYNC)
    store.close()
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(cid),
            "--format",
            "reply",
            "--db",
            str(tmp_path / "reply_campaign_fsync_storm.db"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Your hypothesis" in result.output and "[jbd2-reserved-credits]" in result.output


# ------------------------------------------------------------------ the pieces


@pytest.mark.parametrize(
    ("report", "mechanism"),
    [
        ("ext4-fsync-storm.txt", "workqueue-serialisation"),
        ("ext4-cached-write-1728.txt", "percpu-counter-watermark"),
        ("ext4-unaligned-dio-overwrite.txt", "lock-contention"),
        ("btrfs-async-buffered-writes.txt", None),  # io_uring: no mechanism for it
        ("btrfs-lkp-metadata-writepages.txt", None),  # a commit alone
    ],
)
def test_reporters_hypothesis_maps_to_a_mechanism(report, mechanism):
    facts = extract_facts((REPORTS / report).read_text())
    (hypothesis, *_) = facts.hypotheses
    blamed = blamed_mechanism([(n.kind, n.name) for n in hypothesis.names], load_rules())
    assert (blamed.rule.id if blamed else None) == mechanism


def test_spec_comments_keep_the_scaling_reasons():
    comments = {c.dotted: c.reason for c in spec_comments(_raw(FSYNC)["campaign"]["spec_toml"])}
    assert comments["workload.options.filesize"].startswith("scaled: the reporter's 27.5MiB")
    assert comments["target.size"].endswith("as a sparse RAM-backed image")
    assert "4 runs a point" in comments["quick.set"]
    assert spec_comments("not = [toml") == []


def test_reply_says_why_a_figure_or_a_hypothesis_has_nothing_beside_it(tmp_path):
    def elsewhere(data):
        reported = data["campaign"]["spec"]["reported"]
        reported["expected"][0]["config"] = "ext4-default"  # in the spec, not in --quick
        reported["hypotheses"][0]["names"] = [{"kind": "name", "name": "io_uring"}]

    reply, text = _reply(tmp_path, FSYNC, elsewhere)
    first = reply.figures[0]
    assert first.measured is None and first.why_none == "ext4-default did not run in this campaign"
    figures = " ".join(_section(text, "Your figures and mine").split())
    assert "ext4-default, 22K on 4.14: ext4-default did not run in this campaign" in figures
    hypothesis = " ".join(_section(text, "Your hypothesis").split())
    assert "Not judged: fslab has no mechanism for what it names (name io_uring)." in hypothesis
    assert "Your hypothesis (" not in text.split("What I ran", 1)[0]  # not in the summary


# ------------------------------------------------------------- the cached-write report, in a guest


def test_cached_write_reply_in_a_1728_cpu_guest_names_the_watermark(tmp_path):
    """`fslab reproduce` ran the report in a 6.1 guest with possible_cpus 1728 (the
    reporter's CPU count; watermark 864 MiB): near-full ext4 falls off, the reply names
    percpu-counter-watermark and supports the reporter's hypothesis, and only what a
    guest cannot give (kernel 3.13.9, 4.5 TB of memory) is left unreproduced."""
    _, text = _reply(tmp_path, CACHED)
    opening = " ".join(text.split("What I ran", 1)[0].split())
    assert "in qemu guests (6.1.0-57-amd64, nr_cpu_ids 1728, 2 online, tcg)" in opening
    assert "the cause is per-CPU counter summation below ext4's free-cluster watermark" in opening
    why = " ".join(_section(text, "Why it falls off").split())
    assert why.startswith("ext4: per-CPU counter summation below ext4's free-cluster watermark")
    assert "below_ext4_watermark = True" in why
    hypothesis = " ".join(_section(text, "Your hypothesis").split())
    assert "Verdict on ext4: supported: ranked first" in hypothesis
    missing = " ".join(_section(text, "What I could not reproduce here").split())
    assert "kernel 3.13.9" in missing and "memory 4.5TB" in missing
    assert "cpus 1728" not in missing  # the guest had them
