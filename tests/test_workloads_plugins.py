"""fs_mark, sysbench, dbench and command as benchmarks: the commands each plans, the
quirks each respects, and what each refuses before anything is created."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fslab.base.errors import SpecError, UsageError
from fslab.measure import plan
from fslab.report.setup_facts import _workload_text
from fslab.spec.load import load_spec, validate_spec
from fslab.workload.base import Output, RunShape
from fslab.workload.command.parse import parse_figure
from fslab.workload.registry import BENCHMARKS, headline_metric

WORKLOADS = Path(__file__).resolve().parent / "data" / "workloads"
MNT = "/run/fslab/mnt-4194304-0123abcd"  # the longest mount fslab makes (pid_max 2^22)
RUN = RunShape(runtime_s=4.2, ramp_s=0.0, runtime_given=True)


def spec(workload: dict[str, Any], sweep: dict[str, Any] | None = None) -> Any:
    return validate_spec(
        {
            "name": "t",
            "filesystems": [{"label": "e", "type": "ext4"}],
            "workload": workload,
            "sweep": sweep or {},
            "run": {"runtime": "4.2s"},
        }
    )


def argvs(data: dict[str, Any], sweep: dict[str, Any], directory: str = MNT) -> dict[str, Any]:
    commands = plan.workload_plan(spec(data), sweep, directory).commands
    return {c.phase: list(c.argv) for c in commands}


# ------------------------------------------------------------------ fs_mark


def test_fs_mark_directories_are_short_and_in_the_scratch_fs():
    argv = argvs({"kind": "fs_mark", "dirs": 64, "threads": 64}, {})["run"]
    dirs = [argv[i + 1] for i, word in enumerate(argv) if word == "-d"]
    assert len(dirs) == 64 and all(d.startswith(MNT + "/") for d in dirs)
    assert max(len(d.encode()) for d in dirs) < 40  # fs_mark's limit
    assert argv[argv.index("-l") + 1].startswith(MNT + "/")  # its log, not in fslab's cwd
    assert argv[argv.index("-t") + 1] == "64"


def test_fs_mark_refuses_a_directory_it_would_refuse_naming_the_limit():
    with pytest.raises(ValueError, match="40 bytes"):
        argvs({"kind": "fs_mark"}, {}, directory="/tmp/a/directory/far/too/long/for/fs_mark")


def test_fs_mark_threads_must_fill_the_directories():
    fixed = spec({"kind": "fs_mark", "dirs": 2, "threads": 3})
    with pytest.raises(UsageError, match=r"^workload: threads \(3\) must be a multiple of dirs"):
        plan.check_workload(fixed)
    swept = spec({"kind": "fs_mark", "dirs": 2}, {"threads": [2, 4]})  # the sweep sets threads
    plan.check_workload(swept)
    swept = spec({"kind": "fs_mark", "dirs": 2}, {"threads": [2, 3]})
    with pytest.raises(UsageError, match=r"^sweep\.threads: threads \(3\) must be a multiple"):
        plan.check_workload(swept)
    with pytest.raises(SpecError, match=r"sweep\.threads: 65: .*less than or equal to 64"):
        spec({"kind": "fs_mark"}, {"threads": [1, 65]})
    with pytest.raises(SpecError, match=r"sweep\.files: True"):
        spec({"kind": "fs_mark"}, {"files": [True]})


def test_fs_mark_writes_what_its_iterations_keep():
    s = spec({"kind": "fs_mark", "files": 100, "size": 4096, "iterations": 3}, {"threads": [2]})
    needed, how = plan.files_bytes(s, {"threads": 2})
    assert needed == 3 * 2 * 100 * 4096 and "fs_mark" in how


# ------------------------------------------------------------------ sysbench


def test_sysbench_prepares_runs_and_cleans_up_in_the_scratch_fs():
    phases = argvs({"kind": "sysbench", "fsync_freq": 1}, {"threads": 4})
    assert set(phases) == {"prepare", "run", "cleanup"}
    for argv in phases.values():  # no directory option: its working directory is the mount
        assert argv[:5] == ["env", "-C", MNT, "sysbench", "fileio"]
        assert "--file-total-size=67108864" in argv and "--file-num=16" in argv
    assert phases["prepare"][-1] == "prepare" and phases["cleanup"][-1] == "cleanup"
    run = phases["run"]
    assert run[-1] == "run" and "--threads=4" in run and "--file-fsync-freq=1" in run
    assert "--time=5" in run  # whole seconds, rounded up
    assert "--percentile=99" in run


def test_sysbench_timing_and_size():
    s = spec({"kind": "sysbench", "file_total_size": "128MiB"})
    assert plan.runtime_and_ramp_s(s, {}) == (5.0, 0.0)
    assert plan.files_bytes(s, {})[0] == 128 * 1024**2
    with pytest.raises(SpecError, match="file_total_size"):
        spec({"kind": "sysbench", "file_total_size": "10k"})
    with pytest.raises(SpecError, match=r"sweep\.test_mode"):
        spec({"kind": "sysbench"}, {"test_mode": ["rndwr", "sideways"]})


def test_sysbench_fatal_is_the_error():
    bench = BENCHMARKS["sysbench"]
    stdout = (WORKLOADS / "sysbench" / "ext4_rndwr_unprepared.txt").read_text()
    outcome = bench.judge(Output(["env"], stdout, "", 1, False, 30.0))
    assert not outcome.ok and outcome.error.startswith("sysbench exited 1: FATAL: ")


# ------------------------------------------------------------------ dbench


def test_dbench_clients_loadfile_and_its_warmup():
    run = argvs({"kind": "dbench", "fsync": True}, {"clients": 8})["run"]
    assert run == ["dbench", "-D", MNT, "-t", "5", "-F", "-c", "/usr/share/dbench/client.txt", "8"]
    s = spec({"kind": "dbench"}, {"clients": [1, 8]})
    assert plan.runtime_and_ramp_s(s, {"clients": 1}) == (4.0, 1.0)  # -t 5: 1 s warm-up
    with pytest.raises(SpecError, match="loadfile dbench ships"):
        spec({"kind": "dbench", "loadfile": "/usr/share/dbench/../../../etc/passwd"})
    with pytest.raises(SpecError, match="loadfile dbench ships"):
        spec({"kind": "dbench", "loadfile": "/tmp/client.txt"})


def test_dbench_client_failure_on_stdout_is_the_error():
    stdout = (WORKLOADS / "dbench" / "fail_loadfile.txt").read_text()
    outcome = BENCHMARKS["dbench"].judge(Output(["dbench"], stdout, "", 1, False, 30.0))
    assert not outcome.ok and "exited 1" in outcome.error


# ------------------------------------------------------------------ command

COMMAND = {
    "kind": "command",
    "argv": ["sh", "-c", 'for i in $(seq "$N"); do : > "f$i.{size}"; done', "x"],
    "env": {"size": "small"},
    "allow_commands": True,
}


def test_command_runs_in_the_scratch_dir_with_the_sweep_in_env_and_argv():
    run = argvs(COMMAND, {"N": 3, "size": "big"})["run"]
    assert run[:4] == ["env", "-C", MNT, "--"]
    assert run[4:6] == ["size=big", "N=3"]  # the spec's env, the sweep overriding it
    assert run[6] == f"FSLAB_WORKLOAD={MNT}"  # the mark a cleanup finds its processes by
    assert run[7:9] == ["sh", "-c"]
    assert run[9] == 'for i in $(seq "$N"); do : > "f$i.big"; done'  # {size}; $N stays
    kept = argvs({**COMMAND, "argv": ["echo", "${N}", "{N}", "{other}"]}, {"N": 2.5})["run"]
    assert kept[-3:] == ["${N}", "2.5", "{other}"]


def test_command_is_refused_without_the_opt_in_naming_the_field():
    refused = spec({**COMMAND, "allow_commands": False}, {"N": [1, 2]})
    with pytest.raises(UsageError, match=r"^workload\.argv: sh -c .*allow_commands = true"):
        plan.check_workload(refused)
    with pytest.raises(UsageError):
        plan.workload_plan(refused, {"N": 1}, MNT)
    assert plan.opted_in_commands(refused) == []
    shown = [o.shown for o in plan.opted_in_commands(spec(COMMAND, {"N": [1, 2]}))]
    assert len(shown) == 2 and shown[0].startswith("size=small N=1 sh -c ")


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"argv": []}, "at least 1 item"),
        ({"argv": ["FOO=1", "sh"]}, "must name a program"),
        ({"env": {"1X": "a"}}, "not an environment variable name"),
        ({"figure": {"name": "r", "direction": "higher", "pattern": "("}}, "not a regular"),
        ({"figure": {"name": "r", "direction": "higher", "pattern": "(a)(b)"}}, "one group"),
        ({"figure": {"name": "r", "unit": "IO/s", "direction": "lower", "pattern": "x"}}, "IO/s"),
        ({"shell": True}, "unknown field"),
    ],
)
def test_command_spec_refusals(workload, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        spec({**COMMAND, **workload})


def test_command_sweeps_environment_names_only():
    with pytest.raises(SpecError, match="sweeps environment variables"):
        spec(COMMAND, {"not-a-name": [1, 2]})


def test_command_metric_is_its_time_or_its_figure():
    bench = BENCHMARKS["command"]
    sample = (WORKLOADS / "command" / "create_files.txt").read_text()
    timed = spec(COMMAND).workload
    out = Output(["env"], sample, "", 0, False, 30.0, seconds=1.25, workload=timed)
    assert bench.judge(out).metrics == {"command.seconds": 1.25}
    figure = {"name": "files/s", "unit": "1/s", "direction": "higher", "pattern": r"rate: (\S+)"}
    with_figure = spec({**COMMAND, "figure": figure}).workload
    out = Output(["env"], sample, "", 0, False, 30.0, seconds=1.25, workload=with_figure)
    outcome = bench.judge(out)
    assert outcome.ok and outcome.metrics["command.figure_per_s"] == 31756.5
    assert headline_metric([outcome.metrics]) == "command.figure_per_s"
    assert headline_metric([{"command.seconds": 1.0}]) == "command.seconds"
    failed = bench.judge(Output(["env", "-C", MNT, "--", "N=1", "sh"], "", "no\n", 3, False, 30))
    assert failed.error == "sh exited 3: no"
    missing = Output(["env"], "nothing here\n", "", 0, False, 30.0, workload=with_figure)
    assert "no match for its pattern" in bench.judge(missing).error
    assert any(
        "figure: files/s (1/s, higher is better)" in line for line in _workload_text(with_figure)
    )


@pytest.mark.parametrize(
    ("text", "pattern", "value"),
    [
        ("a 1\nb 2\n", r"^b (\d+)", 2.0),
        ("x 1\nx 3\n", r"x (\d+)", 3.0),  # the last match
        ("took 1,234.5 ms", r"took ([\d,.]+)", 1234.5),
        ("12e3", r"\S+", 12000.0),
    ],
)
def test_figure_parse(text, pattern, value):
    assert parse_figure(text, re.compile(pattern, re.M)) == value


# ------------------------------------------------------------------ the presets


@pytest.mark.parametrize(
    ("preset", "kind", "axis"),
    [
        ("fsmark-small-files", "fs_mark", "threads"),
        ("sysbench-fileio-fsync", "sysbench", "threads"),
        ("dbench-clients", "dbench", "clients"),
    ],
)
def test_presets_sweep_concurrency_and_plan_every_point(preset, kind, axis):
    for quick in (False, True):
        s, _ = load_spec(preset, quick=quick)
        assert s.workload.kind == kind and len(s.sweep[axis]) >= 2
        plan.check_workload(s)
        for value in s.sweep[axis]:
            assert plan.workload_plan(s, {axis: value}, MNT).run_argv
