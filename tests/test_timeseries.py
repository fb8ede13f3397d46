"""Campaigns over time: spec fingerprints, drift checks, list bisection, the robot table.

The statistics on real spaced campaigns (noise model, A/A and power, change
points, bisect decisions) are in test_noise.py; these are the parts that do
not need them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fslab.analyze.history.position import bisect_list
from fslab.analyze.noise.drift import host_drift, load_drift
from fslab.analyze.noise.model import fit_point_noise, spec_fingerprint
from fslab.base.hostfacts import HostFacts
from fslab.drive import bisection
from fslab.report.model import build_report
from fslab.report.text import render_text
from fslab.spec.load import load_spec
from fslab.spec.model import Spec
from fslab.store.db import Store
from fslab.store.exchange import import_campaign
from fslab.store.facts import PointFacts

DATA = Path(__file__).parent / "data"
SPACED = Path(__file__).parent.parent / "bench" / "spaced"


def _spec(path: Path, *overrides: str) -> Spec:
    spec, _ = load_spec(str(path), overrides=list(overrides))
    return spec


def test_fingerprint_ignores_names_and_repetitions_but_not_what_is_measured() -> None:
    base = spec_fingerprint(_spec(SPACED / "base.toml"))
    assert base == spec_fingerprint(_spec(SPACED / "base.toml", 'name="other"', "run.repeat=9"))
    assert base == spec_fingerprint(_spec(SPACED / "base.toml", 'description="reworded"'))
    assert base == spec_fingerprint(_spec(SPACED / "base.toml", "sweep.numjobs=[8]"))
    # a mount option, a block size, a runtime change what is measured
    assert base != spec_fingerprint(
        _spec(SPACED / "base.toml", 'filesystems.0.mount_options=["noatime","data=journal"]')
    )
    assert base != spec_fingerprint(_spec(SPACED / "cost.toml"))
    assert base != spec_fingerprint(_spec(SPACED / "base.toml", "run.runtime=5s"))


def _host(name: str) -> dict:
    return json.loads((DATA / name).read_text())["campaign"]["host"]


def test_drift_names_each_differing_fact_and_only_those() -> None:
    recorded = _host("campaign_fsync_quick.json")
    typed = HostFacts.from_stored
    assert host_drift(typed(recorded), typed(_host("campaign_fsync_dioread.json"))) == []
    other = {
        **recorded,
        "kernel_cmdline": recorded["kernel_cmdline"] + " mitigations=off",
        "perf_version": "perf version 6.1.187",
        "cpu_governor": "performance",
    }
    found = host_drift(typed(recorded), typed(other))
    assert [d.fact for d in found] == ["kernel_cmdline", "perf_version"]  # governor: one side
    assert "candidate only 'mitigations=off'" in found[0].describe()
    assert "'perf version 6.1.192' (baseline) vs 'perf version 6.1.187'" in found[1].describe()


def _runs_with_steal(*steal_pct: float) -> list[PointFacts]:
    """The recorded campaign's run facts, each with a steal share (older runs have none)."""
    points = json.loads((DATA / "campaign_fsync_quick.json").read_text())["points"]
    return [
        PointFacts.model_validate({**p["facts"], "host_cpu": {"steal_pct": s, "idle_pct": 1.0}})
        for p, s in zip(points, steal_pct, strict=False)
    ]


def test_load_drift_warns_only_when_the_sides_medians_are_far_apart() -> None:
    quiet, busy = _runs_with_steal(0.4, 0.6, 9.0), _runs_with_steal(6.0, 6.5, 0.5)
    assert load_drift(quiet, _runs_with_steal(1.0, 2.0, 2.5)) == []  # 0.6 vs 2.0: 1.4 points
    (found,) = load_drift(quiet, busy)  # medians 0.6 vs 6.0: one outlier run does not count
    assert (found.fact, found.baseline, found.candidate) == ("steal_pct", "0.6", "6.0")
    assert "0.6% of the CPUs in the baseline's runs vs 6.0% in the candidate's" in found.describe()
    # runs stored before fslab recorded steal: no difference claimed
    older = [PointFacts.model_validate(p.stored() | {"host_cpu": None}) for p in busy]
    assert load_drift(quiet, older) == []


@pytest.mark.parametrize("first_bad", range(1, 8))
def test_bisect_list_finds_the_first_bad_candidate(first_bad: int) -> None:
    asked: list[int] = []

    def judge(i: int) -> str:
        asked.append(i)
        return "bad" if i >= first_bad else "good"

    result = bisect_list(8, judge)
    assert result.first_bad == first_bad
    assert len(asked) <= 3  # log2 of the 6 candidates between the known ends, rounded up


def test_bisect_list_skips_around_undecided_candidates_and_says_when_they_hide_it() -> None:
    verdicts = {1: "good", 2: "good", 3: "undecided", 4: "good", 5: "bad", 6: "bad"}
    result = bisect_list(8, lambda i: verdicts[i])
    assert result.first_bad == 5 and result.tested[3] == "undecided"
    verdicts[4] = "undecided"  # as git bisect says: the first bad is one of the skipped or 5
    result = bisect_list(8, lambda i: verdicts[i])
    assert result.first_bad is None and result.candidates == [3, 4, 5]


def test_point_noise_needs_three_campaigns_of_two_runs() -> None:
    assert fit_point_noise({1: [10.0, 11.0], 2: [10.5, 10.7]}) is None
    assert fit_point_noise({1: [10.0, 11.0], 2: [10.5], 3: [9.0, 9.5]}) is None
    noise = fit_point_noise({1: [10.0, 10.2], 2: [12.0, 12.1], 3: [9.0, 9.1], 4: [11.0, 11.3]})
    assert noise is not None and noise.campaigns == 4 and noise.runs == 8
    # the levels differ by ~10%, runs inside a campaign by ~1%
    assert noise.between_cv_pct > 5 * noise.within_cv_pct


def test_text_report_compares_in_the_kernel_test_robot_form(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as store:
        cid = import_campaign(store, json.loads((DATA / "diagnose_fsync_quick.json").read_text()))
        text = render_text(build_report(store, cid))
    table = text[text.index("Comparisons") : text.index("base, new: means")]
    header = next(line for line in table.splitlines() if "%change" in line)
    assert header.split() == ["base", "%stddev", "%change", "new", "%stddev", "metric"]
    lines = table.splitlines()
    iops = next(line for line in lines if line.endswith("write IOPS"))
    assert "%" in iops.split()[1]  # %change of the means
    # call-chain shares: in percent of samples, change in percentage points
    share = next(line for line in lines if line.rstrip().endswith("ext4_do_writepages"))
    words = share.split()
    assert words[0].endswith("%") and not words[1].endswith("%") and words[2].endswith("%")
    assert all(len(line) <= 80 for line in text.splitlines())


def test_bisect_over_kernels_boots_guests_and_refuses_an_unknown_kernel(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fslab.cli import app

    args = ["bisect", str(SPACED / "base.toml"), "--db", str(tmp_path / "k.db")]
    kernels = ["--kernels", "vmlinuz-6.1", "--kernels", "vmlinuz-6.6", "--kernels", "vmlinuz-6.12"]
    result = CliRunner().invoke(app, [*args, *kernels, "--good", "vmlinuz-6.1", "--bad", "x"])
    assert result.exit_code == 2 and "--bad 'x' is not one of --kernels" in result.output
    result = CliRunner().invoke(
        app, [*args, *kernels, "--good", "vmlinuz-6.1", "--bad", "vmlinuz-6.12"]
    )
    # each candidate boots in a guest: a kernel that is neither cached nor a path is
    # refused before anything boots or any campaign is stored
    assert result.exit_code == 2, result.output
    assert "vmlinuz-6.1" in result.output and "Traceback" not in result.output
    assert bisection.on_kernel(load_spec(str(SPACED / "base.toml"))[0], "6.1").vm.kernel == "6.1"
