"""The benchmark registry: every built-in benchmark keeps the contract, and a benchmark
defined here (stat, a real and harmless binary) needs no edit elsewhere to be a kind."""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from typer.testing import CliRunner

from fslab import cli
from fslab.analyze.campaign.metrics_catalog import CATALOG
from fslab.base.errors import SpecError, ToolError
from fslab.base.proc import CommandLog
from fslab.base.vocab import ScalarValue
from fslab.measure import plan
from fslab.report.setup_facts import _workload_text
from fslab.run.doctor import run_checks
from fslab.spec.load import validate_spec
from fslab.spec.points import expand_points
from fslab.workload import registry
from fslab.workload.base import (
    Benchmark,
    Command,
    Metric,
    Output,
    Plan,
    RunShape,
    Sweep,
    WorkloadSpec,
)

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the built-in ones


@pytest.mark.parametrize("kind", [b.kind for b in registry.BUILTIN])
def test_a_benchmark_is_one_folder(kind):
    bench = registry.BENCHMARKS[kind]
    folder = ROOT / "src" / "fslab" / "workload" / kind
    assert type(bench).__module__ == f"fslab.workload.{kind}.benchmark"
    assert (folder / "parse.py").is_file()
    assert bench.Spec.model_fields["kind"].annotation == Literal[kind]
    assert bench.Spec.model_config.get("extra") == "forbid"
    assert bench.package and bench.binary and bench.summary and bench.metrics


@pytest.mark.parametrize("kind", [b.kind for b in registry.BUILTIN])
def test_the_parser_names_its_captured_sample_and_the_script(kind):
    """The parser's docstring opens with its sample under tests/data and its capture."""
    source = (ROOT / "src" / "fslab" / "workload" / kind / "parse.py").read_text()
    docstring = ast.get_docstring(ast.parse(source)) or ""
    head = "\n".join(docstring.split("\n\n")[:2])
    named = [p.rstrip(".,") for p in re.findall(r"tests/data/[\w./-]+", head)]
    assert len(named) >= 2, head
    for path in named:
        assert (ROOT / path).is_file(), path
    assert any(p.endswith((".py", ".sh")) for p in named)


@pytest.mark.parametrize("kind", [b.kind for b in registry.BUILTIN])
def test_metrics_and_headline_are_in_the_catalog(kind):
    bench = registry.BENCHMARKS[kind]
    for metric in bench.metrics:
        assert CATALOG.lookup(metric.name.replace("*", "x")).unit == metric.unit
    for name in (*bench.headline, *bench.latency, *bench.labels):
        assert CATALOG.covers(name) or any(name.startswith(f) for f in bench.percentile_words)
    for name in bench.headline:
        assert CATALOG.lookup(name).direction in ("higher", "lower")


def test_the_makefile_installs_every_benchmarks_package():
    text = (ROOT / "Makefile").read_text()
    packages = re.search(r"^DEB_PACKAGES = (.*)$", text, re.M)
    assert packages is not None
    assert set(registry.packages()) <= set(packages.group(1).split())


def test_workloads_command_lists_the_registry():
    result = CliRunner().invoke(cli.app, ["workloads", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["kind"]: row for row in json.loads(result.stdout)["workloads"]}
    assert list(rows) == list(registry.BENCHMARKS)
    assert rows["dd"]["axes"] == ["bs", "count", "conv", "oflag", "iflag"]
    assert rows["fio"]["package"] == "fio"
    assert {"name", "unit", "direction"} <= set(rows["dd"]["metrics"][0])
    table = CliRunner().invoke(cli.app, ["workloads"])
    assert table.exit_code == 0 and "coreutils" in table.stdout


# ------------------------------------------------------------------ a new one, here


class StatWorkload(WorkloadSpec):
    """stat -f on the scratch mount: free space as the filesystem reports it."""

    kind: Literal["statfs"]
    dereference: bool = False


def parse_statfs(stdout: str) -> dict[str, float]:
    """`stat -f -c '%S %b %a'`: fundamental block size, total and available blocks."""
    try:
        block, total, available = (int(word) for word in stdout.split())
    except ValueError:
        raise ToolError(f"not stat -f's three numbers: {stdout!r}") from None
    return {
        "statfs.free_bytes": float(block * available),
        "statfs.size_bytes": float(block * total),
    }


class StatBenchmark(Benchmark):
    kind = "statfs"
    Spec = StatWorkload
    summary = "stat -f: what the filesystem says it has free"
    package = "coreutils"
    binary = "stat"
    axes = ("dereference",)
    metrics = (
        Metric("statfs.free_bytes", "B", "higher", "bytes free to unprivileged users"),
        Metric("statfs.size_bytes", "B", "none", "the filesystem's size"),
    )
    headline = ("statfs.free_bytes",)
    labels = {"statfs.free_bytes": "free space"}  # noqa: RUF012

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        spec = self.swept(workload, sweep)
        assert isinstance(spec, StatWorkload)
        follow = ("-L",) if spec.dereference else ()
        argv = ("stat", "-f", *follow, "-c", "%S %b %a", directory)
        return Plan((Command("run", argv),))

    def parse(self, out: Output) -> dict[str, float]:
        return parse_statfs(out.stdout)


@pytest.fixture
def statfs() -> Iterator[Benchmark]:
    bench = registry.register(StatBenchmark())
    try:
        yield bench
    finally:
        registry.unregister("statfs")


SPEC = {
    "name": "statfs",
    "filesystems": [{"label": "a", "type": "ext4"}],
    "workload": {"kind": "statfs"},
    "sweep": {"dereference": [False, True]},
    "run": {"runtime": "1s"},
}


def test_a_new_kind_needs_no_edit_elsewhere(statfs, tmp_path):
    kinds = ", ".join(repr(k) for k in registry.BENCHMARKS)  # the built-in ones, then statfs
    assert kinds.endswith("'command', 'statfs'")
    with pytest.raises(SpecError, match=rf"workload\.kind: must be one of {re.escape(kinds)}$"):
        validate_spec({**SPEC, "workload": {"kind": "nope"}})
    spec = validate_spec(SPEC)
    assert isinstance(spec.workload, StatWorkload)
    # the stored spec reads back (the store keeps it as JSON)
    assert validate_spec(json.loads(spec.model_dump_json())) == spec
    with pytest.raises(SpecError, match=r"workload\.flag: unknown field"):
        validate_spec({**SPEC, "workload": {"kind": "statfs", "flag": 1}})
    with pytest.raises(SpecError, match="a statfs workload can sweep dereference"):
        validate_spec({**SPEC, "sweep": {"numjobs": [1, 2]}})

    points = expand_points(spec)
    distinct = {tuple(p.sweep_dict.items()): p.sweep_dict for p in points}
    sweeps: list[dict[str, ScalarValue]] = sorted(distinct.values(), key=str)
    assert sweeps == [{"dereference": False}, {"dereference": True}]
    plan.check_workload(spec)
    assert plan.runtime_and_ramp_s(spec, sweeps[0]) == (1.0, 0.0)
    assert plan.workload_plan(spec, sweeps[1], str(tmp_path)).run_argv == [
        "stat", "-f", "-L", "-c", "%S %b %a", str(tmp_path)
    ]  # fmt: skip

    log = CommandLog()
    commands = plan.workload_plan(spec, sweeps[0], str(tmp_path))
    outcome = plan.run_measured(statfs, commands, runtime_s=1.0, timeout_s=30.0, log=log)
    assert outcome.ok, outcome.error
    assert outcome.metrics["statfs.free_bytes"] > 0
    assert set(outcome.artifacts) == {"statfs.stdout"}
    assert [r.argv[0] for r in log.records] == ["stat"]

    # its metrics land in the catalog, the headline and the labels
    assert CATALOG.lookup("statfs.free_bytes").direction == "higher"
    assert registry.headline_metric([outcome.metrics]) == "statfs.free_bytes"
    assert registry.metric_label("statfs.free_bytes") == "free space"
    # doctor checks its binary, `fslab workloads` lists it, the report shows its setup
    assert any(c.name == "stat (statfs)" and c.ok for c in run_checks(1024**3))
    listed = CliRunner().invoke(cli.app, ["workloads", "--json"])
    assert "statfs" in {row["kind"] for row in json.loads(listed.stdout)["workloads"]}
    shown = validate_spec({**SPEC, "workload": {"kind": "statfs", "dereference": True}})
    assert _workload_text(shown.workload) == ["stat dereference=True"]


def test_a_failing_run_is_data(statfs, tmp_path):
    spec = validate_spec(SPEC)
    missing = str(tmp_path / "absent")
    commands = plan.workload_plan(spec, {}, missing)
    outcome = plan.run_measured(statfs, commands, runtime_s=1.0, timeout_s=30.0, log=CommandLog())
    assert not outcome.ok and outcome.error.startswith("stat exited 1: ")


def test_registered_kinds_leave_with_their_test():
    assert "statfs" not in registry.BENCHMARKS
    with pytest.raises(ValueError, match="built in"):
        registry.unregister("dd")
    with pytest.raises(ValueError, match="registered already"):
        registry.register(importlib.import_module("fslab.workload.dd.benchmark").DdBenchmark())
