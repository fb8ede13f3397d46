"""Importing fio workloads as pasted from bug reports, and building fslab's fio argv."""

from __future__ import annotations

import json
import shlex
import shutil

import pytest

from fslab.base.errors import UsageError
from fslab.base.proc import run
from fslab.workload.fio.options import (
    FSLAB_OWNED,
    build_fio_argv,
    fio_job_text,
    parse_fio_command_line,
    parse_fio_job_file,
    parse_fio_options,
    validate_with_fio,
)

# Verbatim from the report in docs/cases/ext4-fsync-storm.md, braces included.
SEED_COMMAND = (
    "{ --name=16kb_rand_write_only_2048_jobs --directory=/rdsdbdata1 --rw=randwrite "
    "--ioengine=sync --buffered=1 --bs=16k --max-jobs=2048 --numjobs=2048 --runtime=60 "
    "--time_based --thread --filesize=28800000 --fsync=1 --group_reporting }"
)
SEED_OPTIONS = {
    "name": "16kb_rand_write_only_2048_jobs",
    "rw": "randwrite",
    "ioengine": "sync",
    "buffered": "1",
    "bs": "16k",
    "max-jobs": "2048",
    "numjobs": "2048",
    "runtime": "60",
    "time_based": None,
    "thread": None,
    "filesize": "28800000",
    "fsync": "1",
    "group_reporting": None,
}

requires_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


# --- command lines ------------------------------------------------------------------------


def test_seed_command_line_verbatim():
    imported = parse_fio_command_line(SEED_COMMAND)
    assert imported.options == SEED_OPTIONS
    assert list(imported.options) == list(SEED_OPTIONS)
    assert len(imported.notes) == 1
    assert "--directory=/rdsdbdata1" in imported.notes[0]
    assert "fslab sets it itself" in imported.notes[0]


def test_seed_command_line_with_the_sentence_period():
    assert parse_fio_command_line(SEED_COMMAND + ".").options == SEED_OPTIONS


def test_sudo_path_and_backslash_continuations():
    text = (
        "sudo /usr/local/bin/fio --name=job1 \\\n"
        "    --rw=randwrite --bs=16k \\  \n"
        "    --time_based --runtime=30\n"
    )
    imported = parse_fio_command_line(text)
    assert imported.options == {
        "name": "job1",
        "rw": "randwrite",
        "bs": "16k",
        "time_based": None,
        "runtime": "30",
    }
    assert imported.notes == []


def test_words_before_fio_are_noted_not_silently_dropped():
    imported = parse_fio_command_line("taskset -c 0-3 fio --name=a --rw=read")
    assert imported.options == {"name": "a", "rw": "read"}
    assert any("taskset -c 0-3" in note for note in imported.notes)


def test_quoted_values_survive():
    imported = parse_fio_command_line("fio --name=a '--description=two words' --rw=read")
    assert imported.options["description"] == "two words"


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("--output-format=normal", "--output-format=normal"),
        ("--output=/tmp/fio.out", "--output=/tmp/fio.out"),
        ("--minimal", "--minimal"),
        ("--status-interval=1", "--status-interval=1"),
    ],
)
def test_output_options_are_taken_over_with_a_note(option, words):
    imported = parse_fio_command_line(f"fio --name=a --rw=read {option}")
    assert imported.options == {"name": "a", "rw": "read"}
    assert len(imported.notes) == 1
    assert words in imported.notes[0]


@pytest.mark.parametrize(
    "option",
    [
        "--filename=/dev/sda",
        "--filename_format=/data/$jobnum",
        "--opendir=/home",
        "--client=host1",
        "--server",
        "--parse-only",
    ],
)
def test_conflicting_options_are_refused_by_name(option):
    name = option.split("=")[0]
    with pytest.raises(UsageError, match=f"fio option {name} cannot be used with fslab"):
        parse_fio_command_line(f"fio --name=a --rw=write {option}")


def test_filename_message_says_why():
    with pytest.raises(UsageError, match="outside the scratch filesystem"):
        parse_fio_command_line("fio --name=a --filename=/dev/nvme0n1")


def test_two_jobs_are_refused():
    with pytest.raises(UsageError, match=r"--name given 2 times.*one job per point"):
        parse_fio_command_line("fio --name=a --rw=read --name=b --rw=write")


def test_stray_value_after_a_flag_names_it():
    with pytest.raises(UsageError, match=r"stray word '16k' after --bs: write --bs=16k"):
        parse_fio_command_line("fio --name=a --bs 16k")


def test_job_file_word_is_refused_with_advice():
    with pytest.raises(UsageError, match=r"'seq\.fio' looks like a job file"):
        parse_fio_command_line("fio seq.fio")
    with pytest.raises(UsageError, match=r"'/root/jobs/w' looks like a job file"):
        parse_fio_command_line("fio --eta=never /root/jobs/w")


def test_other_stray_words_and_short_options():
    with pytest.raises(UsageError, match="stray word 'please'"):
        parse_fio_command_line("please --name=a")
    with pytest.raises(UsageError, match="long options only"):
        parse_fio_command_line("fio --name=a -v")


def test_empty_command_line():
    for text in ("", "sudo fio", "{ }"):
        with pytest.raises(UsageError, match="no options"):
            parse_fio_command_line(text)


def test_unbalanced_wrappers():
    with pytest.raises(UsageError, match="closing '}'"):
        parse_fio_command_line("{ --name=a --rw=read")
    with pytest.raises(UsageError, match="cannot split"):
        parse_fio_command_line("fio --name='a --rw=read")


def test_repeated_option_is_noted():
    imported = parse_fio_command_line("fio --bs=4k --name=a --bs=16k")
    assert imported.options == {"name": "a", "bs": "16k"}
    assert any("--bs=16k" in note and "last" in note for note in imported.notes)


def test_missing_name_is_supplied_with_a_note():
    imported = parse_fio_command_line("fio --rw=read --bs=4k")
    assert imported.options == {"name": "fslab", "rw": "read", "bs": "4k"}
    assert any("names no job" in note for note in imported.notes)


def test_options_table_follows_the_same_rules():
    imported = parse_fio_options(
        {"name": "t", "numjobs": 4, "time_based": True, "thread": None, "verify": False}
    )
    assert imported.options == {"name": "t", "numjobs": "4", "time_based": None, "thread": None}
    with pytest.raises(UsageError, match="--filename"):
        parse_fio_options({"name": "t", "filename": "/dev/sdb"})
    assert "dropped" in parse_fio_options({"name": "t", "directory": "/x"}).notes[0]


# --- job files ----------------------------------------------------------------------------

JOB_FILE = """\
; seed workload as a job file
[global]
directory=/rdsdbdata1
ioengine=sync
bs=4k
# fio allows both comment styles
thread
group_reporting

[16kb_rand_write]
rw=randwrite
bs = 16k
numjobs=2048
time_based
runtime=60
fsync=1
"""


def test_job_file_global_and_one_job():
    imported = parse_fio_job_file(JOB_FILE)
    assert imported.options == {
        "name": "16kb_rand_write",
        "ioengine": "sync",
        "bs": "16k",  # the job section overrides [global]
        "thread": None,
        "group_reporting": None,
        "rw": "randwrite",
        "numjobs": "2048",
        "time_based": None,
        "runtime": "60",
        "fsync": "1",
    }
    assert len(imported.notes) == 1
    assert "directory=/rdsdbdata1" in imported.notes[0]


def test_job_file_with_two_jobs_is_refused():
    text = "[global]\nbs=4k\n[a]\nrw=read\n[b]\nrw=write\n"
    with pytest.raises(UsageError, match=r"2 jobs \(\[a\], \[b\]\).*one job per"):
        parse_fio_job_file(text)


def test_job_file_conflicts_and_shape_errors():
    with pytest.raises(UsageError, match="--filename"):
        parse_fio_job_file("[a]\nfilename=/dev/sdb\nrw=write\n")
    with pytest.raises(UsageError, match="no job section"):
        parse_fio_job_file("[global]\nbs=4k\n")
    with pytest.raises(UsageError, match="before any"):
        parse_fio_job_file("bs=4k\n[a]\n")
    with pytest.raises(UsageError, match="include"):
        parse_fio_job_file("include common.fio\n[a]\nrw=read\n")


def test_job_file_late_global_and_name_key_are_noted():
    imported = parse_fio_job_file("[a]\nname=other\nrw=read\n[global]\nbs=64k\n")
    assert imported.options == {"name": "a", "rw": "read"}
    assert any("name=other" in note for note in imported.notes)
    assert any("does not apply" in note and "bs=64k" in note for note in imported.notes)


# --- building -----------------------------------------------------------------------------


def test_build_argv_with_sweep_overrides():
    argv = build_fio_argv(
        SEED_OPTIONS, directory="/mnt/fslab", overrides={"numjobs": 64, "runtime": 5, "nrfiles": 2}
    )
    assert argv == [
        "fio",
        "--output-format=json+",
        "--directory=/mnt/fslab",
        "--name=16kb_rand_write_only_2048_jobs",
        "--rw=randwrite",
        "--ioengine=sync",
        "--buffered=1",
        "--bs=16k",
        "--max-jobs=2048",
        "--numjobs=64",
        "--runtime=5",
        "--time_based",
        "--thread",
        "--filesize=28800000",
        "--fsync=1",
        "--group_reporting",
        "--nrfiles=2",
    ]


def test_build_argv_refuses_owned_and_conflicting_keys():
    for key in FSLAB_OWNED:
        with pytest.raises(UsageError, match=key):
            build_fio_argv({"name": "a"}, directory="/m", overrides={key: "x"})
        with pytest.raises(UsageError, match=key):
            build_fio_argv({"name": "a", key: "x"}, directory="/m")
    with pytest.raises(UsageError, match="--filename"):
        build_fio_argv({"name": "a"}, directory="/m", overrides={"filename": "/dev/sda"})


def test_override_can_add_a_flag():
    argv = build_fio_argv({"name": "a"}, directory="/m", overrides={"end_fsync": None})
    assert argv[-1] == "--end_fsync"


def test_argv_round_trip():
    argv = build_fio_argv(SEED_OPTIONS, directory="/mnt/fslab")
    imported = parse_fio_command_line(shlex.join(argv))
    assert imported.options == SEED_OPTIONS
    assert list(imported.options) == list(SEED_OPTIONS)
    assert len(imported.notes) == 2  # --output-format and --directory taken over, said so


def test_capture_argvs_round_trip(data_dir):
    """The commands that made tests/data/fio_* rebuild exactly from their own import."""
    manifest = json.loads((data_dir / "fio_dd_manifest.json").read_text())
    for name, entry in manifest.items():
        if not name.startswith("fio_"):
            continue
        argv = entry["argv"]
        directory = argv[2].split("=", 1)[1]
        imported = parse_fio_command_line(shlex.join(argv))
        assert build_fio_argv(imported.options, directory=directory) == argv


def test_job_text_round_trip():
    text = fio_job_text(SEED_OPTIONS, directory="/mnt/fslab")
    assert "[16kb_rand_write_only_2048_jobs]\ndirectory=/mnt/fslab\n" in text
    assert "fio --output-format=json+ --max-jobs=2048 job.fio" in text
    imported = parse_fio_job_file(text)
    expected = {k: v for k, v in SEED_OPTIONS.items() if k != "max-jobs"}
    assert imported.options == expected


# --- fio itself ---------------------------------------------------------------------------


@requires_fio
def test_fio_accepts_the_seed_options():
    assert validate_with_fio(SEED_OPTIONS) is None


@requires_fio
def test_fio_rejects_a_bogus_value():
    complaint = validate_with_fio(SEED_OPTIONS, overrides={"bs": "sixteen"})
    assert complaint is not None
    assert "bs=sixteen" in complaint
    complaint = validate_with_fio({"name": "a", "rw": "sideways"})
    assert complaint is not None
    assert "rw=sideways" in complaint
    assert "randwrite" in complaint  # fio lists the valid values


@requires_fio
def test_fio_rejects_an_unknown_option_once():
    complaint = validate_with_fio({"name": "a", "bogus_option": "1"})
    assert complaint is not None
    assert complaint.count("unrecognized option '--bogus_option=1'") == 1


@requires_fio
def test_fio_parses_the_job_text(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text(fio_job_text(SEED_OPTIONS, directory=str(tmp_path)))
    record = run(["fio", "--parse-only", "--max-jobs=2048", str(job)], check=False)
    assert record.returncode == 0, record.stderr


# --- relative file names and job file comments (fio's own rules) ---------------------------


def test_relative_filename_is_kept_inside_the_directory():
    imported = parse_fio_command_line("fio --name=a --filename=testfile --rw=write")
    assert imported.options["filename"] == "testfile"
    argv = build_fio_argv(imported.options, directory="/m")
    assert "--filename=testfile" in argv and "--directory=/m" in argv


@pytest.mark.parametrize("value", ["/mnt/fio", "../x", "..", "a/b", "a:b", ""])
def test_filename_that_could_leave_the_directory_is_refused(value):
    with pytest.raises(UsageError, match="--filename"):
        parse_fio_command_line(f"fio --name=a --filename={value}")


def test_relative_filename_format_is_kept():
    imported = parse_fio_command_line("fio --name=a --filename_format=FioWorkloads.$jobnum")
    assert imported.options["filename_format"] == "FioWorkloads.$jobnum"


def test_job_file_comments_are_cut_where_fio_cuts_them():
    # fio --showcmd on this job prints --numjobs=1 --filename=a: '#' and ';' end a line
    imported = parse_fio_job_file("[j]\nnumjobs=1 # 2 4\nrw=write ; seq\nfilename=a#b\n")
    assert imported.options == {"name": "j", "numjobs": "1", "rw": "write", "filename": "a"}
