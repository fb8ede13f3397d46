"""Shapes from reports fslab had not seen (the corpus's batches 25 and 26), each through
what `fslab reproduce` reads or writes: a script that builds fs_mark's options in a
variable, a robot's side table of another machine, a pasted job file's `-->` note and a
chart's thread axis, fio's running status line, a kernel tarball's directory, a dd
operand dd refuses, and a fio file named by digits; then batches 30 to 32: a dd continued
by a backslash in a timed subshell, fio quoted in a sentence, a backtick inside a quoted
value, GNU time by its path, numbered steps before the mkfs, will-it-scale, a mount-option
label per result, a placeholder with a space, and a misspelt rw pattern; and batches 33
and 34: a dd stopped by hand, a sync timed after a dd, btrfs-progs' version, an option's
values in prose, and headings' punctuation; and batches 35 and 36: a dd that lays out the
fio job's file, a harness's step marks, dbench clients from a script's argument, an image
file as the device, and iozone named in prose; and batch 38: a program's pull request that
is not a kernel change, and pgbench; and batch 37: a btrfs profile with its device count
after it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fslab.base.errors import UsageError
from fslab.reproduce.experiment import experiment_of
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.specwrite import build_spec

REPORTS = Path(__file__).parent / "data" / "reports"
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)


def _facts(name: str):
    return extract_facts((REPORTS / name).read_text())


def _spec(name: str, *, guests: bool = True) -> tuple[dict, list]:
    reproduction = build_spec(_facts(name), source_name=name, host=HOST, guests=guests)
    return tomllib.loads(reproduction.toml), reproduction.questions


def test_fs_mark_options_built_in_a_script_variable_are_the_command():
    """`OPTS="-S 0 -L 10 -n $FILES ..."`, appended to in a loop, then `fs_mark $OPTS`:
    before, fslab took the results table's first row (-n 1200000) for the command."""
    (tool,) = _facts("btrfs-fsmark-nproc-dirs-unlock-parent-early.txt").tools
    assert tool.tool == "fs_mark" and tool.source.number == 41
    options = dict(tool.options)
    assert options["-n"] == "100000" and options["-L"] == "10" and options["-s"] == "0"
    spec, _ = _spec("btrfs-fsmark-nproc-dirs-unlock-parent-early.txt")
    assert spec["workload"]["files"] == 100000 and spec["workload"]["iterations"] == 10


def test_the_reporters_cpus_are_the_first_machine_not_a_side_table():
    spec, _ = _spec("xfs-lkp-fsmark-32dirs-alloc-trylock-xfs-debug.txt")
    assert spec["vm"]["possible_cpus"] == 96
    assert spec["reported"]["cpus"] == 96  # the side table's machine has 224


def test_a_job_file_note_and_a_charts_axis_give_the_sweep():
    spec, _ = _spec("ext4-dax-overwrite-jobfile-numjobs-barchart.txt", guests=False)
    assert spec["sweep"]["numjobs"] == [1, 2, 4, 8, 12, 16]
    assert "numjobs" not in spec["workload"]["options"]  # not "16 --> changed this ..."


def test_fios_running_status_line_is_not_a_figure():
    figures = _facts("ext4-vs-ext3-fio-randwrite-fsync3-32jobs.txt").figures
    assert figures and all(f.value > 0 for f in figures if f.metric.endswith("iops"))


def test_a_kernel_trees_directory_is_not_a_kernel():
    kernels = [
        k.version for k in _facts("ext4-discard-data-writeback-rm-rf-kernel-tree.txt").kernels
    ]
    assert kernels == ["5.10.1"]  # "vanilla 5.10.1." ends a sentence; `rm -rf linux-5.10`


def test_a_dd_operand_dd_refuses_is_asked_about():
    spec, questions = _spec("ext4-cfq-blkio-cgroup-dd-512-dsync.txt", guests=False)
    assert "oflag" not in spec["workload"]
    (asked,) = [q for q in questions if q.item == "dd oflags"]
    assert "not an operand dd takes" in asked.question


def test_a_fio_file_named_by_digits_stays_a_string():
    spec, _ = _spec("xfs-reflink-always-cow-ramdisk-fio-iops-5-runs.txt", guests=False)
    assert spec["workload"]["options"]["filename"] == "1"


def test_the_run_on_the_filesystem_comes_before_the_raw_devices():
    (first, *_) = _facts("xfs-md-raid5-5nvme-fio-1m-write-vs-raw.txt").fio
    assert "filename" not in dict(first.written) and first.source.number > 40


def test_a_benchmark_count_set_to_the_reporters_cpus_takes_this_hosts():
    """`THREADS=$(nproc --all)` ... `-t $THREADS`: this host's CPUs, asked about, not an
    option left out as "not a valid integer"."""
    spec, questions = _spec("btrfs-fsmark-nproc-dirs-unlock-parent-early.txt")
    (asked,) = [q for q in questions if q.item == "fs_mark -t"]
    assert "counts the reporter's CPUs" in asked.question and asked.assumed == "this host's 2"
    assert spec["sweep"]["threads"][-1] == 2


def test_a_job_that_ends_by_its_size_is_not_made_time_based():
    """The reflink report's job writes its 1G once (no time_based): fslab's runtime only
    caps it, and no warm-up is cut from a figure the reporter's first seconds are in."""
    spec, _ = _spec("xfs-reflink-always-cow-ramdisk-fio-iops-5-runs.txt", guests=False)
    assert spec["workload"]["options"]["time_based"] == 0
    assert spec["run"]["ramp"] == "0s" and spec["quick"]["set"]["run.ramp"] == "0s"
    founding, _ = _spec("ext4-fsync-storm.txt", guests=False)  # --time_based: unchanged
    assert founding["workload"]["options"]["time_based"] is True
    assert founding["run"]["ramp"] == "5s"


def test_a_suse_prompt_and_a_parenthesis_a_mailer_left_open():
    spec, _ = _spec("btrfs-vs-ext4-rm-64gib-files-time-for-loop-md-raid0.txt", guests=False)
    command = "time (for i in {1..10}; do time (rm test$i; sync); done)"
    assert spec["workload"]["argv"] == ["bash", "-c", command]


def test_fios_per_sample_statistics_are_not_a_figure():
    figures = _facts("ext4-data-journal-vs-ordered-fio-optane-rate-iops-latency.txt").figures
    assert figures and not any("max=" in f.text or f.value == 155_000_000 for f in figures)


def test_a_backslash_continued_mkfs_keeps_its_words_whole():
    made = [
        f
        for f in _facts("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt").filesystems
        if f.how == "mkfs"
    ]
    assert made and "-d" in made[0].mkfs_options and " -d" not in made[0].mkfs_options


def test_a_job_files_underlined_title_is_not_an_option():
    _, questions = _spec("ext4-dioread-nolock-vs-default-fio-jobfiles-threads.txt", guests=False)
    assert not any(".fio" in q.item for q in questions)


def test_time_in_a_sentence_after_a_semicolon_is_not_a_command():
    facts = _facts("xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt")
    assert not facts.tools  # "...; time goes to the AGI buffer lock"


def test_dd_arithmetic_and_count_bytes_give_the_blocks_written():
    spec, _ = _spec("xfs-fallocate-vs-overwrite-dd-direct-dsync-4096-count-bytes.txt", guests=False)
    assert spec["workload"]["bs"] == "4096" and spec["workload"]["count"] == 262144


# --- batch 30-32 -------------------------------------------------------------------------


def test_a_dd_continued_by_a_backslash_inside_a_timed_subshell_keeps_its_operands():
    """`time ( ./fallocate ...; dd ... of=/mnt/test \\` / `bs=1M ... oflag=direct,dsync)`:
    the operands below the backslash are dd's, up to the subshell's `)`; conv=nocreat
    (the file made before dd) is asked about, as fslab's dd makes its own file."""
    spec, questions = _spec("xfs-fallocate-write-zeroes-vs-unwritten-dd-dsync-time-subshell.txt")
    workload = spec["workload"]
    assert (workload["bs"], workload["count"], workload["oflag"]) == ("1M", 360, "direct,dsync")
    assert workload["conv"] == "notrunc"
    assert any(q.item == "dd conv" and "nocreat" in q.question for q in questions)


def test_fio_quoted_inside_a_sentence_is_the_command_up_to_its_closing_quote():
    """After running "fio --name=test ... --rw=randwrite / --size=4G" for about 30 mins."""
    spec, _ = _spec("xfs-sparse-vdisk-randwrite-extsize-hint-seq-read-reflink-prose.txt")
    options = spec["workload"]["options"]
    assert (options["rw"], options["size"]) == ("randwrite", "4G")


def test_a_backtick_inside_a_quoted_value_does_not_end_the_command():
    """`--name "`uname -r`-${TYPE}-..."` then `--runtime=100`; the prose's "4k/8k/12k/16k
    blocksizes" gives $BS its values."""
    spec, questions = _spec("ext4-iomap-aio-dio-4k-16k-fio-terse-defer-completion.txt")
    assert spec["workload"]["options"]["runtime"] == 100
    assert spec["sweep"]["bs"] == ["4k", "8k", "12k", "16k"]
    assert any("uname -r" in q.question and "never runs it" in q.question for q in questions)


def test_gnu_time_by_its_path_with_a_format_is_a_timed_command():
    (tool,) = _facts("ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt").tools
    assert tool.tool == "command" and "tar xjf linux.tar.bz2" in tool.text


def test_numbered_steps_before_the_mkfs_give_the_setup_and_the_journal_the_report_names():
    """Steps 1-3 (a --create_only fio, drop caches, the run) come before the mkfs and
    mount lines; "large the journal size from 128MB to 2GB" is the remedy, at 2GB, in place
    of the reporter's -J size=128; the volume's 64000 IOPS is its limit, not a figure."""
    name = "ext4-journal-128m-vs-2g-fio-2048-jobs-numbered-steps.txt"
    facts = _facts(name)
    assert [s.kind for s in facts.setup] == ["fio layout", "drop caches"]
    assert facts.setup[0].text.startswith("/usr/bin/fio --name=")
    assert not any(f.value in (0, 10_000, 64_000) for f in facts.figures)
    spec, questions = _spec(name)
    big = next(c for c in spec["filesystems"] if c["label"] == "ext4-journal2g")
    assert big["mkfs_options"].count("-J") == 1 and "size=2048" in big["mkfs_options"]
    assert not any(q.item == "journal size" for q in questions)


def test_will_it_scale_is_named_and_refused_with_its_test():
    facts = _facts("ext4-vs-btrfs-xfs-will-it-scale-vfsmix2-o-trunc-idle.txt")
    (named,) = facts.other_tools
    assert named.tool == "will-it-scale" and "vfsmix2_processes" in named.why


def test_a_mount_option_label_over_each_result_is_the_sweep():
    spec, _ = _spec("btrfs-dio-dd-4096m-nodatasum-bounce-vs-buffered-fallback.txt")
    assert [c["mount_options"] for c in spec["filesystems"]] == [["defaults"], ["nodatasum"]]


def test_a_placeholder_with_a_space_is_one_word_and_a_hyphenated_option_is_read():
    facts = _facts("btrfs-fsperf-emptyfiles500k-filecreate-clat-p99-nohz-5.16.txt")
    assert dict(facts.fio[0].written)["directory"] == "<mount point>"
    compressed = _facts("btrfs-compressed-dd-bs-4k-vs-128k-readahead-expand-fsperf.txt")
    assert any("compress-force=zstd:3" in f.mount_options for f in compressed.filesystems)


def test_a_misspelt_rw_pattern_is_asked_about_and_run_as_meant():
    spec, questions = _spec(
        "ext4-data-journal-vs-ordered-fio-optane-rate-iops-latency.txt", guests=False
    )
    assert spec["workload"]["options"]["rw"] == "randwrite"
    assert any("randomwrite" in q.question for q in questions)


# --- batches 33 and 34 -------------------------------------------------------------------


def test_a_dd_stopped_by_hand_runs_the_blocks_its_output_copied():
    spec, questions = _spec("ext4-dd-bs32-subdir-vs-partition-root-ctrl-c-ssd.txt", guests=False)
    assert spec["workload"]["count"] == 4921834  # ^C4921834+0 records in, no count=
    assert any(q.item == "dd count" and "until stopped" in q.question for q in questions)


def test_a_sync_timed_after_the_dd_is_in_its_figure():
    spec, questions = _spec(
        "ext4-usb-key-dd-raw-partition-vs-ext4-file-time-sync.txt", guests=False
    )
    assert spec["workload"]["conv"] == "fsync"
    assert any(q.item == "dd conv" and "sync after" in q.question for q in questions)


def test_btrfs_progs_version_is_not_a_kernel():
    facts = _facts("btrfs-vs-ext4-cp-arl-hardlink-backup-usb-hdd-53-minutes.txt")
    assert "3.17" not in [k.version for k in facts.kernels]  # "and Btrfs v3.17"


def test_an_options_values_said_in_prose_are_the_sweep_not_the_bare_name():
    """ "mounted max_inline=0 and max_inline=64K"; "without max_inline=64K" is a value."""
    spec, _ = _spec("btrfs-dio-read-max-inline-0-vs-64k-dashed-step-lines-wrapped-fio.txt")
    assert [c["mount_options"] for c in spec["filesystems"]] == [
        ["max_inline=0"],
        ["max_inline=64K"],
    ]


def test_values_under_headings_lose_the_headings_punctuation():
    spec, _ = _spec(
        "ext4-dio-randrw-dioread-nolock-vs-default-ilock-rfc-nested-quote-bs-tables.txt"
    )
    assert spec["sweep"]["bs"] == ["4k", "16k", "64k", "512k", "1M"]  # `bs=4k:` headings


def test_a_dd_that_writes_the_fio_jobs_own_file_is_its_prefill():
    """`dd ... of=/mnt/testfile bs=1M count=128`, then `fio --filename=/mnt/testfile` with
    no size: the dd lays the file out (an illustrative dd of another file above is not it),
    and fio, given no size, takes the file's."""
    name = "xfs-64k-page-4k-block-fsync-randwrite-subpage-dirty-vs-ext4-fenced-fio-output.txt"
    (step,) = _facts(name).setup
    assert step.kind == "dd" and step.source.number == 38
    spec, _ = _spec(name)
    assert spec["setup"] == [
        {
            "kind": "file",
            "path": "testfile",
            "size": "134217728",
            "how": "write",
            "note": "line 38: dd if=/dev/zero of=/mnt/testfile bs=1M count=128",
        }
    ]
    assert spec["workload"]["options"]["filename"] == "testfile"
    assert "size" not in spec["workload"]["options"]


def test_a_harness_logs_step_lines_are_its_commands_and_its_run_is_measured():
    """`---- mount -o max_inline=0 /dev/vdb /btrfs ..... :0 ----`, the fio step wrapped by
    the mailer before its `..... :0 ----`: the marks come off, and the fio typed after the
    mkfs is measured, not the earlier run quoted above it on /mnt/test."""
    name = "btrfs-dio-read-max-inline-0-vs-64k-dashed-step-lines-wrapped-fio.txt"
    facts = _facts(name)
    assert [(fs.how, fs.source.number) for fs in facts.filesystems if fs.how != "prose"][:2] == [
        ("mkfs", 49),
        ("mount", 50),
    ]
    assert facts.fio[0].source.number == 51
    assert dict(facts.fio[0].written)["directory"] == "/btrfs"
    spec, _ = _spec(name)
    assert [fs["mount_options"] for fs in spec["filesystems"]] == [
        ["max_inline=0"],
        ["max_inline=64K"],
    ]


def test_dbench_clients_from_a_scripts_argument_are_the_sweeps():
    """`dbench -D $MNT -t 120 $NUM_JOBS` in a script run with 8 and with 16: the clients
    are the variable, swept, not dropped."""
    name = "btrfs-dbench-8-vs-16-clients-positional-num-jobs-delayed-inode-logging.txt"
    (tool,) = _facts(name).tools
    assert dict(tool.options)["clients"] == "$NUM_JOBS"
    spec, _ = _spec(name)
    assert spec["sweep"]["clients"] == [8, 16]


def test_an_image_file_made_then_formatted_is_the_reporters_device():
    """`truncate -s 20T sparse1.img`, `mkfs.ext4 sparse1.img`, `mount -o discard sparse1.img
    /mnt/`: the image is the device (its size the reporter's), not a setup step, and the
    mount's discard is the reporter's option."""
    name = "ext4-fstrim-20t-sparse-image-mount-discard-time-quoted-patch-claim.txt"
    facts = _facts(name)
    assert [(fs.how, fs.device) for fs in facts.filesystems if fs.how != "prose"] == [
        ("mkfs", "sparse1.img"),
        ("mount", "sparse1.img"),
    ]
    assert facts.setup == []
    assert [d.size_bytes for d in facts.devices] == [20 * 1024**4]
    spec, _ = _spec(name)
    assert spec["filesystems"][0]["mount_options"] == ["discard"]
    assert spec["target"]["size"] == "16GiB"  # the 20TiB capped by this host's memory


@pytest.mark.parametrize(
    ("name", "tool", "why"),
    [
        (
            "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt",
            "iozone",
            "iozone: iozone is not a workload fslab runs",
        ),
        (
            "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt",
            "pgbench",
            "pgbench drives a PostgreSQL server",
        ),
    ],
)
def test_a_benchmark_fslab_does_not_run_is_named_with_why(name, tool, why):
    """iozone named only in prose (the report shows no command), pgbench as a command:
    exit 2 names the tool and why, and the reading records it as one fslab does not run."""
    found = experiment_of(_facts(name))
    assert (found.tool, found.runnable) == (tool, False)
    with pytest.raises(UsageError, match=why):
        _spec(name)


def test_quick_lays_out_a_smaller_file_set_than_the_reporters():
    """sysbench's 8G over 4096 files is prepared at every point: --quick at 8G ran past
    the bench's ten minutes (a minute a point); it prepares 1 GiB instead, saying so."""
    spec, _ = _spec("btrfs-sysbench-file-extent-replace.txt", guests=False)
    assert spec["workload"]["file_total_size"] == "8G"
    assert spec["quick"]["set"]["workload.file_total_size"] == "1024MiB"
    small, _ = _spec("ext4-sysbench-seqwr-file-num.txt", guests=False)
    assert not any(k.startswith("workload.") for k in small["quick"]["set"])


def test_a_programs_pull_request_is_not_a_kernel_change():
    """A GitHub pull request to fuse-overlayfs, "gocryptfs commit 024511d9c7", "the
    patched mkfs.btrfs": each a program's change; fslab no longer sweeps kernels for them
    (this host would have asked for a guest kernel with a commit Linux never had)."""
    for name in (
        "xfs-reflink-fuse-overlayfs-copyup-chown-r-time-v-elapsed.txt",
        "btrfs-vs-ext4-hdd-gocryptfs-encfs-benchmark-bash-write-untar-decimal-comma.txt",
        "btrfs-block-group-tree-btrfstune-convert-mount-50s-to-5s-network-disk.txt",
    ):
        assert not any(s.axis == "kernel" for s in _facts(name).sweeps), name
    # a kernel patch is still one: the commit a review thread is about
    name = "btrfs-dio-read-max-inline-0-vs-64k-dashed-step-lines-wrapped-fio.txt"
    assert any(s.axis == "kernel" for s in _facts(name).sweeps)


def test_a_second_command_that_changes_more_than_the_sweep_is_asked_about():
    """Two sysbench runs, the second with --file-num and --file-block-size left at their
    defaults: fslab measures the first and says so, where it dropped the second without a
    word; fs_mark's two runs differ in how many -d directories, not just in -n."""
    _, questions = _spec("ext4-sysbench-seqwr-file-num.txt", guests=False)
    (asked,) = [q for q in questions if q.item == "sysbench workload"]
    assert asked.question == (
        "the report's sysbench at line 17 differs from line 12's in file-block-size, file-num"
    )
    _, questions = _spec("xfs-fsmark-single-allocation-workqueue-3.4.txt")
    assert any(q.question.endswith("differs from line 21's in -d, -n") for q in questions)


def test_a_btrfs_profile_with_its_device_count_after_it_is_the_layout():
    """ "raid1c3 with 3 HDDs": the level before its count, and the c3 profile."""
    name = "btrfs-raid1c3-roundrobin-vs-pid-sysfs-echo-fio-jobfiles-numjobs-1-8.txt"
    assert experiment_of(_facts(name)).devices == 3


def test_a_results_row_that_starts_with_the_tools_name_is_not_a_command():
    """`fs_mark<TAB>223 seconds<TAB>197 seconds<TAB>-11.65%` in a cover letter's table was
    read as a second fs_mark, and asked about as one that changes every option."""
    name = "btrfs-tree-lock-rwsem-dbench-200-fsmark-glob-dirs-time-output-tab-table.txt"
    assert [t.source.number for t in _facts(name).tools] == [25]
    _, questions = _spec(name)
    assert not [q for q in questions if q.item == "fs_mark workload"]
