"""A report is untrusted input: nothing in it runs a command or writes outside the scratch.

Each dangerous fio option is tried from a report (`fslab reproduce` drops it and
asks, naming the line) and from a spec (`fslab run` refuses it without
`workload.allow_commands = true`). Canary files say whether anything ran.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fslab.base.errors import SpecError, UsageError
from fslab.measure import plan
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.specwrite import build_spec
from fslab.spec.load import load_spec
from fslab.store.db import Store
from fslab.store.exchange import export_campaign, import_campaign
from fslab.workload import registry
from fslab.workload.base import RunShape
from fslab.workload.fio import trust as fio_trust
from tests import cli
from tests.conftest import DATA_DIR, requires_root

FIO_LISTS = DATA_DIR / "fio_options"
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)

# option -> value, each pointing at the canary where it names a path or a command
DANGEROUS = {
    "exec_prerun": "touch {canary}",
    "exec_postrun": "touch {canary}",
    "ioengine": "exec",
    "program": "/usr/bin/touch",
    "arguments": "{canary}",
    "trigger": "touch {canary}",
    "trigger-remote": "touch {canary}",
    "trigger-file": "{canary}",
    "write_iolog": "{canary}",
    "read_iolog": "{canary}",
    "replay_redirect": "/dev/sda",
    "write_bw_log": "{canary}",
    "write_lat_log": "{canary}",
    "write_iops_log": "{canary}",
    "write_hist_log": "{canary}",
    "verify_state_save": "1",
    "aux_path": "{canary}",
    "cgroup": "fslab-canary",
    "opendir": "/etc",
    "mem": "mmaphuge:{canary}",
    "profile": "act",
    "cpus_allowed": "0-127",
    "numa_mem_policy": "bind:1",
    "prio": "0",
}


def report_with(option: str, value: str, canary: Path) -> str:
    shown = value.format(canary=canary)
    return (
        "ext4 writes fall off with more jobs.\n"
        "\n"
        f"fio --name=t --rw=randwrite --bs=4k --size=16m --numjobs=4 --{option}='{shown}'\n"
    )


# --- the allowlist covers fio's own lists -------------------------------------------------


def _listed_options() -> set[str]:
    names = set()
    for line in (FIO_LISTS / "cmdhelp_all.txt").read_text().splitlines():
        name = line.split(":", 1)[0].strip()
        if name:
            names.add(name)
    for line in (FIO_LISTS / "aliases.txt").read_text().splitlines():
        names.update(line.split())
    for line in (FIO_LISTS / "help.txt").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            names.add(stripped[2:].split("=", 1)[0].split()[0])
    return names


def _engine_options() -> dict[str, set[str]]:
    engines: dict[str, set[str]] = {}
    current = ""
    for line in (FIO_LISTS / "engine_options.txt").read_text().splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            engines[current] = set()
        elif ":" in line and not line.startswith(" "):
            engines[current].add(line.split(":", 1)[0].strip())
    return engines


def test_every_option_fio_lists_is_classified():
    unknown = sorted(
        name
        for name in _listed_options() - {"ioengine"}  # judged by its value
        if (found := fio_trust.judge(name, None)) is not None and found.concern == "unknown"
    )
    assert unknown == []


def test_every_option_of_the_trusted_engines_is_classified():
    engines = _engine_options()
    assert fio_trust.SAFE_ENGINES & engines.keys() >= {"libaio", "io_uring", "psync"}
    unknown = sorted(
        f"{engine}:{name}"
        for engine in fio_trust.SAFE_ENGINES & engines.keys()
        for name in engines[engine]
        if (found := fio_trust.judge(name, None)) is not None and found.concern == "unknown"
    )
    assert unknown == []


@pytest.mark.parametrize(
    ("option", "value", "concern"),
    [
        ("exec_prerun", "x", "runs"),
        ("ioengine", "exec", "runs"),
        ("ioengine", "external:/tmp/e.so", "runs"),
        ("ioengine", "/tmp/e.so", "runs"),
        ("ioengine", "sg", "unknown"),
        ("ioengine", "net", "unknown"),
        ("write_iolog", "/x", "paths"),
        ("write-lat-log", "x", "paths"),
        ("iomem", "mmap:/x", "paths"),
        ("buffer_pattern", "'/etc/passwd'", "paths"),
        ("cpumask", "1", "host"),
        ("ss_dur", "10", None),
        ("ioengine", "libaio", None),
        ("iomem", "mmaphuge", None),
        ("buffer_pattern", "0xdeadbeef", None),
        ("readwrite", "randwrite", None),
    ],
)
def test_judge(option, value, concern):
    found = fio_trust.judge(option, value)
    assert (found.concern if found else None) == concern


# --- from a report: dropped, asked, with its line -----------------------------------------


@pytest.mark.parametrize("option", sorted(DANGEROUS))
def test_report_option_never_reaches_the_spec(option, tmp_path):
    canary = tmp_path / "CANARY"
    text = report_with(option, DANGEROUS[option], canary)
    facts = extract_facts(text)
    reproduction = build_spec(facts, source_name="r.txt", host=HOST)
    (job,) = facts.fio
    key = fio_trust.rule_name(option)
    assert key not in {fio_trust.rule_name(k) for k in job.options}
    options = tomllib.loads(reproduction.toml)["workload"]["options"]
    assert key not in {fio_trust.rule_name(k) for k in options}
    asked = [q for q in reproduction.questions if q.item == f"fio --{option}"]
    assert asked and asked[0].source is not None and asked[0].source.number == 3
    assert option in asked[0].question
    assert not canary.exists()


# fs_mark, sysbench, dbench and a shell command from a report: their allowlists
# (workload/<tool>/report.py) keep the options that act on the tool's own files only
TOOL_REPORTS = {
    "fs_mark -d / -n 10 -s 4096 -l {canary} -t 4": ("fs_mark", ("-d /", "-l {canary}")),
    "fs_mark -d {canary} -d /etc -n 10 -S 0 -F": ("fs_mark", ("-d {canary} /etc", "-F")),
    "dbench -D {canary} -c /etc/passwd -t 60 8": ("dbench", ("-D {canary}", "-c /etc/passwd")),
    "dbench -c ../../{canary} -B nfs 4": ("dbench", ("-c ../../{canary}", "-B nfs")),
    "sysbench --test=fileio --file-total-size=64M --config-file={canary} --threads=4 run": (
        "sysbench",
        ("--config-file={canary}",),
    ),
}


@pytest.mark.parametrize("command", sorted(TOOL_REPORTS))
def test_report_tool_option_naming_a_path_never_reaches_the_spec(command, tmp_path):
    canary = tmp_path / "CANARY"
    kind, dropped = TOOL_REPORTS[command]
    text = f"ext4 falls off with more threads.\n\n# {command.format(canary=canary)}\n"
    reproduction, data = _reproduced(text)
    workload = data["workload"]
    assert workload["kind"] == kind
    assert str(canary) not in json.dumps(workload) and "/etc" not in json.dumps(workload)
    assert workload.get("loadfile", "/usr/share/dbench/client.txt").startswith("/usr/share/")
    for option in dropped:
        shown = option.format(canary=canary)
        asked = [q for q in reproduction.questions if shown in q.question]
        assert asked, (shown, [q.question for q in reproduction.questions])
        assert asked[0].source is not None and asked[0].source.number == 3
    spec = load_spec_text(reproduction.toml, tmp_path)
    assert spec.workload.kind == kind
    assert not canary.exists()


def test_report_sysbench_other_than_fileio_is_refused_naming_its_line(tmp_path):
    text = "ext4.\n\nsysbench --test=/tmp/script.lua --threads=4 run\n"
    with pytest.raises(UsageError, match=r"r.txt: line 3: --test=/tmp/script.lua"):
        build_spec(extract_facts(text), source_name="r.txt", host=HOST)


def test_report_command_is_a_proposal_fslab_refuses_to_run(tmp_path):
    canary = tmp_path / "CANARY"
    text = f"ext4 is slow here.\n\n$ sync; time touch {canary}\n"
    reproduction, data = _reproduced(text)
    workload = data["workload"]
    assert workload["kind"] == "command" and workload["allow_commands"] is False
    assert workload["argv"][:2] == ["bash", "-c"] and f"time touch {canary}" in workload["argv"][2]
    assert "allow_commands = true" not in reproduction.toml
    (asked,) = [q for q in reproduction.questions if q.item.startswith("command ")]
    assert asked.source is not None and asked.source.number == 3
    assert f"touch {canary}" in asked.question and "review" in asked.question
    spec = load_spec_text(reproduction.toml, tmp_path)
    bench = registry.benchmark_for(spec.workload)
    shape = RunShape(1.0, 0.0, False)
    with pytest.raises(UsageError, match="allow_commands = true"):
        bench.check(spec.workload, {}, shape)
    with pytest.raises(UsageError, match="allow_commands = true"):
        bench.plan(spec.workload, {}, shape, str(tmp_path))
    assert not canary.exists()


def load_spec_text(toml: str, tmp_path: Path) -> Any:
    path = tmp_path / "written.toml"
    path.write_text(toml)
    return load_spec(str(path))[0]


def test_report_shell_loop_becomes_a_sweep():
    text = (
        "for jobs in 1 16 64; do\n"
        "  fio --name=x${jobs} --rw=randwrite --bs=4k --size=1g --numjobs=${jobs}\n"
        "done\n"
    )
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST)
    spec = tomllib.loads(reproduction.toml)
    assert spec["sweep"]["numjobs"] == [1, 16, 64]
    assert spec["workload"]["options"]["name"] == "x1"


def test_report_loop_over_a_dropped_option_sweeps_nothing(tmp_path):
    # bench/fuzz_inputs (seed 1) found a spec that did not load: a loop swept "umjobs"
    text = "for ((i=1; i<=3; i++)); do fio --name=x --n umjobs=$i; done\n"
    reproduction = build_spec(extract_facts(text), source_name="r", host=HOST)
    assert "umjobs" not in tomllib.loads(reproduction.toml).get("sweep", {})
    (tmp_path / "s.toml").write_text(reproduction.toml)
    load_spec(str(tmp_path / "s.toml"))


@pytest.mark.parametrize(
    "head",
    [
        "for jobs in {1..3}; do",
        "for jobs in $(seq 1 3); do",
        "for ((jobs=1; jobs<=3; jobs++)); do",
        "for jobs in 1 2 3",
    ],
)
def test_loop_forms(head):
    text = f"{head}\nfio --name=x --rw=write --bs=4k --size=1m --numjobs=$jobs\ndone\n"
    spec = tomllib.loads(build_spec(extract_facts(text), source_name="r", host=HOST).toml)
    assert spec["sweep"]["numjobs"] == [1, 2, 3]


def test_report_cpu_count_takes_this_hosts_with_a_question():
    text = "fio --name=x --rw=randwrite --bs=4k --size=1g --numjobs=$(nproc)\n"
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST)
    asked = [q for q in reproduction.questions if q.item == "fio --numjobs"]
    assert asked and "this host's 2" in asked[0].assumed
    assert tomllib.loads(reproduction.toml)["sweep"]["numjobs"] == [1, 2]


@pytest.mark.parametrize(
    "value",
    ["${SIZE}", "$(cat /etc/passwd)", "`id`", "$((4*N))m", "$((2**40))m", "$(nproc)x", "${jobs"],
)
def test_report_expansions_fslab_cannot_know_are_left_out(value):
    text = f"fio --name=x --rw=randwrite --bs=4k --numjobs=2 --size={value}\n"
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST)
    size = tomllib.loads(reproduction.toml)["workload"]["options"].get("size", "")
    assert "$" not in size and "`" not in size
    assert any(q.item == "fio --size" for q in reproduction.questions)


def test_report_arithmetic_on_literals_is_worked_out_never_run():
    text = "fio --name=x --rw=randwrite --bs=$((2*2048)) --numjobs=2 --size=$((4*1024))m\n"
    options = tomllib.loads(build_spec(extract_facts(text), source_name="r", host=HOST).toml)
    assert options["workload"]["options"]["bs"] == 4096


def test_report_assignment_gives_the_variable_its_value():
    text = "SIZE=2g\nfio --name=x --rw=randwrite --bs=4k --numjobs=2 --size=${SIZE}\n"
    facts = extract_facts(text)
    assert facts.fio[0].options["size"] == "2g"


def test_fio_keywords_stay_for_fio():
    text = "fio --name=x --rw=write --bs=4k --size=1m --filename_format=f.\\$jobnum\n"
    assert extract_facts(text).fio[0].options["filename_format"] == "f.$jobnum"


# --- from a spec: refused without the opt-in ---------------------------------------------


def spec_text(options: dict[str, str], *, allow: bool = False, form: str = "options") -> str:
    lines = [
        'name = "canary"',
        "[target]",
        'size = "1GiB"',
        "[[filesystems]]",
        'label = "ext4"',
        'type = "ext4"',
        "[workload]",
        'kind = "fio"',
    ]
    if allow:
        lines.append("allow_commands = true")
    base = {"name": "t", "rw": "write", "bs": "4k", "size": "4m", **options}
    if form == "options":
        lines.append("[workload.options]")
        lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in base.items()]
    else:
        command = " ".join(f"--{k}={v}" for k, v in base.items())
        lines.append(f"command_line = {json.dumps(command)}")
    lines += ["[run]", 'runtime = "1s"', 'ramp = "0s"', "repeat = 1"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("option", sorted(DANGEROUS))
def test_spec_option_is_refused_without_the_opt_in(option, tmp_path):
    canary = tmp_path / "CANARY"
    value = DANGEROUS[option].format(canary=canary)
    path = tmp_path / "s.toml"
    path.write_text(spec_text({option: value}))
    spec, _ = load_spec(str(path))
    found = fio_trust.judge(option, value)
    assert found is not None
    if option == "opendir":  # never, opt-in or not: fio would leave the scratch filesystem
        with pytest.raises(UsageError, match=r"workload\.options\.opendir: .*cannot be used"):
            plan.check_workload(spec)
    elif found.concern in fio_trust.NEEDS_OPT_IN:
        with pytest.raises(UsageError, match=rf"workload\.options\.{option}: .*allow_commands"):
            plan.check_workload(spec)
    else:  # the host's own settings: the user's spec may set them
        plan.check_workload(spec)
    assert not canary.exists()


def test_spec_command_line_and_sweep_are_refused_too(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(spec_text({"exec_prerun": "true"}, form="command_line"))
    with pytest.raises(UsageError, match=r"workload\.command_line: --exec_prerun=true"):
        plan.check_workload(load_spec(str(path))[0])
    path.write_text(spec_text({}) + '[sweep]\nwrite_iolog = ["/tmp/a", "/tmp/b"]\n')
    with pytest.raises(UsageError, match=r"sweep\.write_iolog"):
        plan.check_workload(load_spec(str(path))[0])


def test_spec_opt_in_lists_what_runs(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(spec_text({"exec_prerun": "true", "rw": "write"}, allow=True))
    spec, _ = load_spec(str(path))
    plan.check_workload(spec)
    assert [f.shown for f in plan.opted_in_commands(spec)] == ["--exec_prerun=true"]


def fslab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [sys.executable, "-m", "fslab", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=300,
    )


@requires_root
@pytest.mark.root
def test_run_refuses_before_anything_is_created_and_runs_with_the_opt_in(tmp_path):
    canary = tmp_path / "CANARY"
    path = tmp_path / "s.toml"
    path.write_text(spec_text({"exec_prerun": f"touch {canary}"}))
    db = str(tmp_path / "db.sqlite")
    for extra in ([], ["--no-preflight"]):
        refused = fslab("run", str(path), "--db", db, "--no-collect", *extra, cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert "workload.options.exec_prerun" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not canary.exists()
    assert Store(db).campaigns() == []
    path.write_text(spec_text({"exec_prerun": f"touch {canary}"}, allow=True))
    ran = fslab("run", str(path), "--db", db, "--no-collect", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "allow_commands: the workload runs --exec_prerun=" in ran.stderr
    assert canary.exists()  # the opt-in is real: the same spec ran the command


@requires_root
@pytest.mark.root
def test_reproduce_run_of_a_hostile_report_runs_nothing(tmp_path):
    canary = tmp_path / "CANARY"
    report = tmp_path / "r.txt"
    report.write_text(
        "ext4 writes.\n\n"
        f"fio --name=t --rw=write --bs=4k --size=4m --numjobs=2 --exec_prerun='touch {canary}' "
        f"--ioengine=exec --program=/usr/bin/touch --arguments={canary} "
        f"--write_iolog={canary}\n"
    )
    result = fslab(
        "reproduce",
        str(report),
        "--host",
        "--run",
        "--quick",
        "--no-collect",
        "--set",
        'run.runtime="1s"',
        "--set",
        'run.ramp="0s"',
        "--set",
        "run.repeat=1",
        "--db",
        str(tmp_path / "db.sqlite"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for option in ("exec_prerun", "ioengine", "program", "arguments", "write_iolog"):
        assert f"question: line 3: the report's fio option --{option}" in result.stderr
    assert not canary.exists()


def test_imported_campaign_is_never_run(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(spec_text({"exec_prerun": "true"}, allow=True))
    spec, text = load_spec(str(path))
    source = Store(str(tmp_path / "a.sqlite"))
    from fslab.run.campaign import RunOptions, run_campaign, start_campaign

    campaign_id = start_campaign(
        source, spec, text, overrides={}, options=RunOptions(collect="off")
    )
    exported = export_campaign(source, campaign_id)
    exported["campaign"].pop("id")
    target = Store(str(tmp_path / "b.sqlite"))
    imported = import_campaign(target, exported)
    with pytest.raises(UsageError, match="imported"):
        run_campaign(target, imported, options=RunOptions(collect="off"))


# --- what bench/fuzz_inputs.py found: each a refusal naming the field, never a traceback -----


def _reproduced(text: str) -> tuple[Any, dict[str, Any]]:
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST)
    return reproduction, tomllib.loads(reproduction.toml)


def test_report_terminal_escapes_and_control_characters_are_not_text():
    text = (
        "\x1b[1mext4\x1b[0m writes fall off.\x00\n\n"
        "fio --name=t --rw=randwrite --bs=4k --size=16m --numjobs=4\x1b]0;title\x07\x07\n"
    )
    reproduction, spec = _reproduced(text)  # a NUL in a comment used to end in a TOMLDecodeError
    assert "\x1b" not in reproduction.toml and "\x00" not in reproduction.toml
    assert spec["workload"]["options"]["rw"] == "randwrite"


@pytest.mark.parametrize(
    ("numjobs", "question", "swept"),
    [
        ("0", "is not a count of jobs", None),
        ("5000", "is more than fio runs (4096", 4096),
        ("1000000000", "is more than fio runs (4096", 4096),
    ],
)
def test_report_job_counts_fio_cannot_run_are_asked_about(numjobs, question, swept):
    text = f"ext4.\n\nfio --name=t --rw=randwrite --bs=4k --size=16m --numjobs={numjobs}\n"
    reproduction, spec = _reproduced(text)  # the written spec used to fail validation
    assert any(question in q.question for q in reproduction.questions)
    assert max(spec.get("sweep", {}).get("numjobs", [1])) == (swept or 1)


def test_report_lkp_parameters_pass_the_allowlist_and_zero_tasks_divide_nothing():
    text = (
        "ext4.\n\ntestcase: fio-basic\nrw: randwrite\nbs: 4k\nioengine: external:/tmp/e.so\n"
        "nr_task: 0\ntest_size: 1G\nruntime: `nproc`\n"
    )
    reproduction, spec = _reproduced(text)  # used to divide by zero, and pass any ioengine
    options = spec["workload"]["options"]
    assert "ioengine" not in options and "runtime" not in options
    items = {q.item for q in reproduction.questions}
    assert {"lkp ioengine", "lkp runtime", "fio --numjobs"} <= items


def test_report_dd_amounts_fslab_cannot_run_are_asked_about():
    text = "ext4.\n\n# dd if=/dev/zero of=/mnt/f bs=1E count=1E\n"
    reproduction, spec = _reproduced(text)  # int('1E') used to end in a ValueError
    assert (spec["workload"]["bs"], spec["workload"]["count"]) == ("1M", 1)
    assert {"dd bs", "dd count"} <= {q.item for q in reproduction.questions}


def test_report_of_too_many_lines_is_refused_at_once():
    from fslab.reproduce.extract import MAX_REPORT_LINES

    started = time.monotonic()
    with pytest.raises(UsageError, match="more than 100,000 lines"):
        extract_facts("\n" * MAX_REPORT_LINES + "fio --name=t --rw=write\n")
    assert time.monotonic() - started < 1.0  # 900,000 empty lines used to take 15 s


@pytest.mark.parametrize(
    "line",
    [
        "fio --name=t --rw=write --numjobs={n}",  # int(): ValueError past 4,300 digits
        "dd if=/dev/zero of=/mnt/f bs=1M count={n}",
        "fio --name=t --rw=write --size={n}",  # float to int: OverflowError past 308
        "{n}G of RAM",
    ],
)
def test_report_number_of_thousands_of_digits_is_refused_naming_its_line(line):
    text = "ext4.\n\nfio --name=t --rw=write\n" + line.format(n="1" * 5000) + "\n"
    with pytest.raises(UsageError, match="line 4: a number of more than 100 digits"):
        extract_facts(text)


def test_report_mount_of_thousands_of_options_is_asked_about_not_written():
    text = "ext4.\n\nmount -o " + "x," * 5000 + "noatime /dev/sdb /mnt\n"
    text += "fio --name=t --rw=write --bs=4k --size=16m\n"
    started = time.monotonic()
    reproduction, spec = _reproduced(text)  # 5,000 options took tomlkit 14 s to write
    assert time.monotonic() - started < 2.0
    assert "x" not in spec["filesystems"][0].get("mount_options", [])
    assert any("more than 64 options" in q.question for q in reproduction.questions)


def test_report_of_thousands_of_questions_lists_two_hundred():
    lines = [
        "fio --name=t --rw=write " + " ".join(f"--exec_prerun=x{j}_{i}" for i in range(500))
        for j in range(64)
    ]
    started = time.monotonic()
    reproduction, _ = _reproduced("ext4.\n\n" + "\n".join(lines))  # 32,000 took 16 s
    assert time.monotonic() - started < 5.0
    assert len(reproduction.questions) <= 210
    assert any("more questions about this report" in q.question for q in reproduction.questions)


@pytest.mark.parametrize("word", ["A" * 70000, "a-" * 30000, "9." * 30000, "1 " * 30000])
def test_report_long_words_are_read_in_linear_time(word):
    started = time.monotonic()
    extract_facts(f"ext4 slows down.\n\nThe cause is {word} here.\nfio --name=t --rw=write\n")
    assert time.monotonic() - started < 2.0  # 70,000 letters used to take 18 s


def test_report_of_unclosed_option_braces_is_read_in_linear_time():
    # bench/fuzz_inputs (seed 1): 660 kB of "{ --..." without "}" took over 30 s
    started = time.monotonic()
    extract_facts("fio --name=t --rw=write\n" + "{ --rw=write " + " " * 60000 + "x\n" * 3)
    assert time.monotonic() - started < 2.0


def test_spec_value_not_utf8_is_a_spec_error(tmp_path):
    # bench/fuzz_inputs (seed 1): pydantic could not spell the message and raised
    path = tmp_path / "s.toml"
    path.write_text(spec_text({}))
    with pytest.raises(SpecError, match="not UTF-8 text"):
        load_spec(str(path), overrides=["workload.kind=\udcff"])


@pytest.mark.parametrize(
    "line",
    [
        "mkdir /mnt/x" + " " * 60000 + "x",  # setup steps split on ; && ||
        "fs_mark -d /mnt/x " + "-n 1 " * 20000,  # a benchmark command read word by word
        "---- mount" + " " * 60000 + ". :0 ----",  # a harness's step marks
    ],
)
def test_report_long_command_lines_are_read_in_linear_time(line):
    started = time.monotonic()
    extract_facts(
        "mkfs.ext4 /dev/sdb\nmount /dev/sdb /mnt/x\n" + line + "\nfio --name=t --rw=write\n"
    )
    assert time.monotonic() - started < 3.0


def test_spec_size_of_hundreds_of_digits_is_a_spec_error(tmp_path):
    # bench/fuzz_inputs (seed 1): float("9" * 400) * 1024 is inf, and int(inf) raised
    path = tmp_path / "s.toml"
    path.write_text(spec_text({}))
    with pytest.raises(SpecError, match="is too large"):
        load_spec(str(path), overrides=['target.size="' + "9" * 400 + 'GiB"'])


def test_spec_integer_of_thousands_of_digits_is_a_spec_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(spec_text({}) + "x = " + "1" * 5000 + "\n")  # was int()'s ValueError
    with pytest.raises(SpecError, match="not valid TOML: Exceeds the limit"):
        load_spec(str(path))
    path.write_text(spec_text({}))
    with pytest.raises(SpecError, match=r"run\.repeat"):
        load_spec(str(path), overrides=["run.repeat=" + "1" * 5000])


def test_spec_job_file_path_too_long_is_a_usage_error(tmp_path):
    path = tmp_path / "s.toml"
    head = spec_text({}).split("[workload.options]")[0]
    path.write_text(f"{head}job_file = {json.dumps('j' * 5000)}\n")  # is_file(): OSError
    with pytest.raises(UsageError, match=r"workload\.job_file: cannot read"):
        plan.check_workload(load_spec(str(path))[0])


def test_spec_nested_deeper_than_toml_reads_is_a_spec_error(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(spec_text({}))
    with pytest.raises(SpecError, match=r"--set sweep\.bs: the value nests deeper"):
        load_spec(str(path), overrides=["sweep.bs=" + "[" * 5000])  # was a RecursionError
    path.write_text(spec_text({}) + "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SpecError, match="not valid TOML: nested deeper"):
        load_spec(str(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[j]\nrw=write\n\xff\n", "is not UTF-8 text"),  # was a UnicodeDecodeError
        (b"[j]\nrw=write\n" + b"#" * 1024**2, "is larger than 1 MiB"),
    ],
)
def test_spec_job_file_is_read_as_bounded_text(content, message, tmp_path):
    job = tmp_path / "job.fio"
    job.write_bytes(content)
    path = tmp_path / "s.toml"
    head = spec_text({}).split("[workload.options]")[0]
    path.write_text(f"{head}job_file = {json.dumps(str(job))}\n")
    spec, _ = load_spec(str(path))
    with pytest.raises(UsageError, match=rf"workload\.job_file: .*{message}"):
        plan.check_workload(spec)


def test_absurd_specs_are_refused_in_seconds_naming_the_limit(tmp_path):
    """A sweep of a million values, a job file of thousands of sections (issue 27, part 4)."""
    path = tmp_path / "s.toml"
    path.write_text(spec_text({}))
    million = "sweep.bs=[" + ",".join(f'"{i}k"' for i in range(10**6)) + "]"
    started = time.monotonic()
    with pytest.raises(SpecError, match="a campaign runs at most 10000"):
        load_spec(str(path), overrides=[million])
    assert time.monotonic() - started < 15.0
    job = tmp_path / "big.fio"
    job.write_text("".join(f"[job{i}]\nrw=write\n" for i in range(5000)))
    head = spec_text({}).split("[workload.options]")[0]
    path.write_text(f"{head}job_file = {json.dumps(str(job))}\n")
    with pytest.raises(UsageError, match="defines 5000 jobs") as refused:
        plan.check_workload(load_spec(str(path))[0])
    assert len(str(refused.value)) < 400  # the 5,000 names used to be listed


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("postgresql://u@[::1/x", "is neither a file path nor a URL"),  # ValueError
        ("~no-such-user-here/x.db", "no such home directory"),  # RuntimeError
        ("x\udcff.db", "not UTF-8 text"),  # a non-UTF-8 argv byte: UnicodeEncodeError
        ("postgresql://u@127.0.0.1:1/x?bogus=1", 'invalid connection option "bogus"'),
        ("postgresql://u@" + "a" * 70 + ":1/x", "not a host name"),  # IDNA UnicodeError
        ("sqlite://\n/x", "Invalid SQLite URL"),  # an ArgumentError from create_engine
        ("sqlite://", "an in-memory database keeps nothing"),
    ],
)
def test_database_url_a_driver_refuses_is_a_usage_error(location, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        Store(location)


def test_database_that_cannot_be_reached_is_a_message_for_every_command(tmp_path):
    from fslab.store.db import StoreUnavailable, upgrade_database

    with pytest.raises(StoreUnavailable, match="Connection refused"):
        upgrade_database("postgresql://u@127.0.0.1:1/x")  # `store migrate`: was a traceback
    with pytest.raises(StoreUnavailable, match="File name too long"):
        Store(str(tmp_path / ("d" * 300) / "x.db"))


def test_error_messages_quoting_markup_print_as_text(tmp_path):
    from typer.testing import CliRunner

    from fslab.cli import app

    db = str(tmp_path / "[/]x.db")
    listed = CliRunner().invoke(app, ["list", "--db", db])
    assert listed.exit_code == 0 and "[/]x.db" in listed.output  # was a MarkupError
    refused = CliRunner().invoke(app, ["show", "999", "--db", db])
    assert refused.exit_code == 1 and isinstance(refused.exception, SystemExit)
    assert "no campaign 999 in" in refused.output  # the message quoting it: was a MarkupError


# --- imports: checked whole, refused naming the field, nothing stored ----------------------


def _export() -> dict[str, Any]:
    data = json.loads((DATA_DIR / "campaign_fsync_nocollect.json").read_text())
    data["points"] = data["points"][:4]
    return data


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("campaign", 1, "campaign: Input should be a valid dictionary"),  # AttributeError
        ("campaign.name", "../../x", "campaign.name: String should match pattern"),
        ("campaign.name", "a\x00b", "campaign.name: a NUL character"),
        ("campaign.spec", {"name": "x"}, "campaign.spec: invalid spec"),
        ("campaign.status", "null", "campaign.status: Input should be"),
        ("campaign.host.online_cpus", "many", "campaign.host: invalid literal"),
        ("campaign.started_at", "yesterday", "campaign.started_at: Value error"),
        ("points.0.status", "null", "points.0.status: Input should be"),  # CHECK constraint
        ("points.1.seq", 0, "points.1.seq: 0 again"),  # UNIQUE constraint
        ("points.0.config", "[bold]x", "points.0.config: '[bold]x' is not a configuration"),
        ("points.0.metrics", {"fio.\x1b[31m": 1.0}, "a control character"),
        ("points.0.metrics", {"m" * 600: 1.0}, "a name longer than 512"),
        ("points.0.sweep", {"numjobs": 16, "x": 1}, "points.0.sweep: axes"),
        ("points.0.sweep.numjobs", "x", "points.0.sweep.numjobs: 'x' is not a int"),
        ("points.0.collectors", {"perf": ["gone", "x"]}, "points.0.collectors.perf.0"),
        ("points.0.facts", {"fill": 3}, "points.0.facts.fill"),
        ("points.0.error", "\udcff", "not UTF-8 text"),
        ("points.0.commands", [{"argv": ["x"], "returncode": 10**40, "seconds": 1.0}], "less than"),
    ],
)
def test_import_refuses_a_malformed_export_naming_the_field(path, value, message, tmp_path):
    data = _export()
    _set(data, path, value)
    with Store(str(tmp_path / "db.sqlite")) as store:
        with pytest.raises(UsageError, match=re.escape(message)):
            import_campaign(store, data)
        assert store.campaigns() == []  # nothing stored


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[" * 100000 + b"]" * 100000, "JSON nested too deeply"),  # was a RecursionError
        (b'{"format": "fslab-campaign", \xff}', "not UTF-8"),  # was a UnicodeDecodeError
        (b'{"format": ', "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"a": ' + b"1" * 5000 + b"}", "not JSON .Exceeds the limit"),  # was a ValueError
    ],
)
def test_import_reads_only_a_json_object(content, message, tmp_path):
    from fslab.store.exchange import read_export

    path = tmp_path / "e.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message):
        read_export(path)


def test_import_of_a_file_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    from fslab.store import exchange

    monkeypatch.setattr(exchange, "MAX_EXPORT_BYTES", 1000)
    path = tmp_path / "e.json"
    path.write_text(json.dumps(_export()))
    with pytest.raises(UsageError, match="larger than 0 MiB"):
        exchange.read_export(path)


def test_imported_names_print_as_text_in_every_table(tmp_path):
    from typer.testing import CliRunner

    from fslab.cli import app

    data = _export()
    data["campaign"]["host_name"] = "[/]box"
    data["campaign"]["host"]["kernel_release"] = "[bold]6.1"
    data["points"][0].update(status="failed", error="[/] no space")
    export = tmp_path / "e.json"
    export.write_text(json.dumps(data))
    db = ["--db", str(tmp_path / "db.sqlite")]
    assert CliRunner().invoke(app, ["import", str(export), *db]).exit_code == 0
    for argv in (["list"], ["show", "1"]):  # MarkupError in the tables, before
        result = CliRunner().invoke(app, [*argv, *db])
        assert result.exit_code == 0, result.output
    assert "[/]box" in CliRunner().invoke(app, ["list", *db]).output
    assert "[/] no space" in CliRunner().invoke(app, ["show", "1", *db]).output


def test_fleet_fetched_export_is_checked_and_one_bad_host_stops_no_other(tmp_path):
    from fslab.fleet.run import _import_fetched
    from fslab.fleet.state import HostOutcome

    fetched = tmp_path / "fetched"
    fetched.mkdir()
    (fetched / "alpha.json").write_text(json.dumps(_export()))
    (fetched / "beta.json").write_text('{"format": ')  # used to end the run in a traceback
    outcomes = [HostOutcome(h, "done", "run the campaign") for h in ("alpha", "beta")]
    _import_fetched(str(tmp_path / "db.sqlite"), fetched, outcomes, lambda line: None)
    assert outcomes[0].note.startswith("fetched back, imported as campaign")
    assert "refused" in outcomes[1].note and "not JSON" in outcomes[1].note
    assert (fetched / "beta.json").exists() and not (fetched / "alpha.json").exists()


def test_report_mkfs_device_paths_and_benchmark_commands_never_reach_the_spec():
    """An external log on a device the report names is never written (mkfs would format
    it here); a benchmark no machine fslab runs on has is refused (exit 2) with what was
    read; dbench's directory is fslab's; a shell command is written switched off."""
    text = (
        "$ mkfs.xfs -f -l logdev=/dev/sdz,size=1g /dev/sdy -n parent=0\n"
        "$ mount -o logdev=/dev/sdz /dev/sdy /mnt\n"
        "$ fio --name=x --rw=write --bs=4k --size=1g\n"
    )
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST)
    configs = json.dumps([fs.model_dump() for fs in reproduction.spec.filesystems])
    assert "/dev/sdz" not in configs and "logdev" not in configs
    report = "testcase: aim7\nparameters:\n\ttest: disk_rw\n\tload: 3000\n"
    with pytest.raises(UsageError) as raised:
        build_spec(extract_facts(report), source_name="r.txt", host=HOST)
    assert raised.value.exit_code == 2
    assert "# [workload]" in str(raised.value)
    reproduction, data = _reproduced("$ dbench -D /mnt -t 300 64\n")
    assert data["workload"] == {"kind": "dbench"} and data["sweep"]["clients"][-1] == 64
    assert any("'-D /mnt'" in q.question and q.source for q in reproduction.questions)
    reproduction, data = _reproduced("$ sync; time rm -rf /; time sync\n")
    assert data["workload"]["allow_commands"] is False
