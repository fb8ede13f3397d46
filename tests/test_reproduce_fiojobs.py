"""fio as job files and command lines really run it: several jobs one after another,
blank lines and comments between sections, bare flags, bools with a separate value,
shell arithmetic. Each shape is read through the spec `fslab reproduce` writes."""

from __future__ import annotations

import tomllib

from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.shell import arithmetic
from fslab.reproduce.specwrite import build_spec

HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)

IN_TURN = """ext4: random reads fall behind sequential ones on 6.8

The job file:

[global]
ioengine=libaio
direct=1
bs=4k
size=1g
norandommap
; each job waits for the one before it

# reads first
[seq-read]
rw=read
stonewall

[rand-read]
rw=randread
stonewall

6.8 gives 510 MiB/s sequential and 95 MiB/s random.
"""


def _spec(text: str) -> tuple[dict, list]:
    reproduction = build_spec(extract_facts(text), source_name="r.txt", host=HOST, guests=False)
    return tomllib.loads(reproduction.toml), reproduction.questions


def test_jobs_run_in_turn_are_a_sweep_of_the_option_they_differ_in():
    spec, questions = _spec(IN_TURN)
    options = spec["workload"]["options"]
    assert options["norandommap"] is True and options["bs"] == "4k" and options["direct"] == 1
    assert "stonewall" not in options  # one job per point: nothing to wait for
    assert spec["sweep"]["rw"] == ["read", "randread"]
    assert not [q for q in questions if q.item == "fio workload"]


def test_jobs_that_run_at_once_stay_whole_and_are_refused_saying_why():
    facts = extract_facts(IN_TURN.replace("stonewall\n", ""))
    assert not facts.fio
    (asked,) = [q for q in facts.questions if q.item == "fio workload"]
    assert "defines 2 jobs ([seq-read], [rand-read])" in asked.question


def test_a_third_job_that_changes_two_options_is_left_out_and_asked_about():
    text = IN_TURN.replace(
        "6.8 gives", "[rand-write]\nrw=randwrite\nbs=64k\nstonewall\n\n6.8 gives"
    )
    spec, questions = _spec(text)
    assert spec["sweep"]["rw"] == ["read", "randread"]
    (asked,) = [q for q in questions if q.item == "fio workload"]
    assert "[rand-write] changes more than rw from [seq-read]" in asked.question


def test_a_command_line_of_named_jobs_in_turn_with_separate_values():
    text = (
        "xfs: dsync writes into a fallocated file\n\n"
        "fio --filesize=32MB --fallocate=1 --rw write --bs=$((4*2048)) --sync dsync "
        "--name over --overwrite 1 --name noover --overwrite 0 --stonewall\n"
    )
    spec, _ = _spec(text)
    options = spec["workload"]["options"]
    assert options["sync"] == "dsync" and options["bs"] == 8192 and options["rw"] == "write"
    assert spec["sweep"]["overwrite"] == [1, 0]


def test_shell_arithmetic_on_literals_only():
    assert arithmetic("$((8192))") == "8192"
    assert arithmetic("$(( 4 * 1024 - 1 ))") == "4095"
    assert arithmetic("$((x + 1))") is None  # a variable: asked about, never guessed
    assert arithmetic("$((1 / 0))") is None
    assert arithmetic("$((2 ** 10))") is None
    assert arithmetic("$(rm -rf /)") is None
