"""Report shapes the corpus's later reports brought, each through the spec `fslab reproduce`
writes: a #-prompt fio with an abbreviated option, a mounts-table line with options the
kernel dropped, fio options in a shell variable inside two loops, a filesystem made again
with other profiles, a robot's fs_mark parameters without a command, and a dd read."""

from __future__ import annotations

import time
import tomllib
from pathlib import Path

from fslab.reproduce.extract import extract_facts
from fslab.reproduce.pending import guest_fields
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.specwrite import build_spec

REPORTS = Path(__file__).parent / "data" / "reports"
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)


def _spec(name: str) -> tuple[dict, list]:
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST, guests=False
    )
    return tomllib.loads(reproduction.toml), reproduction.questions


def test_a_prompt_fio_with_a_prefix_option_and_a_proc_mounts_line():
    spec, questions = _spec("xfs-buffered-randrw-32jobs.txt")
    reported = spec["filesystems"][0]
    assert reported["mkfs_options"] == ["-d", "su=256k,sw=5"]
    assert reported["mount_options"] == ["noatime", "logbsize=256k"]
    dropped = {q.question.split(":")[0] for q in questions if q.item == "mount options"}
    assert dropped == {"the report's mount option delaylog", "the report's mount option nobarrier"}
    options = spec["workload"]["options"]
    assert options["time_based"] is True and options["rwmixread"] == 60
    assert spec["sweep"]["direct"] == [1, 0]
    # --quick shows the report's variable at the reporter's 32 jobs, not fslab's ladder too
    assert spec["quick"]["set"]["sweep.numjobs"] == [32]


def test_fio_options_in_a_variable_inside_two_loops_sweep_the_outer_loop_first():
    spec, _ = _spec("ext4-iodrive-randwrite-numjobs.txt")
    assert list(spec["sweep"]) == ["numjobs", "bs"]
    assert spec["sweep"]["numjobs"] == [1, 2, 4, 8, 16, 32]
    assert spec["sweep"]["bs"][:2] == ["1k", "2k"] and len(spec["sweep"]["bs"]) == 14
    assert spec["workload"]["options"]["direct"] == 1
    assert [fs["mount_options"] for fs in spec["filesystems"]] == [["noatime"], ["noatime"]]


def test_a_btrfs_made_again_with_other_profiles_is_one_configuration_each():
    spec, questions = _spec("btrfs-raid5-4disk-dd-write.txt")
    assert spec["target"]["devices"] == 4
    assert [fs["mkfs_options"] for fs in spec["filesystems"]] == [
        ["-d", "raid5", "-m", "raid1c4"],
        ["-d", "raid6", "-m", "raid1c4"],
        ["-d", "raid5", "-m", "raid1c3"],
    ]
    assert any("spans 3 devices" in q.question for q in questions)
    assert "sweep" not in spec  # btrfs-progs v5.18 is not a kernel to compare


def test_a_robot_fsmark_block_without_its_command_gives_fs_mark_options():
    spec, _ = _spec("ext4-lkp-fsmark-large-folio-4m.txt")
    workload = spec["workload"]
    assert workload["kind"] == "fs_mark" and workload["size"] == 4 * 1024**2
    assert workload["sync_method"] == 0 and workload["iterations"] == 1
    assert [fs["label"] for fs in spec["filesystems"]] == ["ext4"]  # no twin of defaults


def test_a_dd_read_of_a_file_the_report_wrote_reads_it_cold_at_each_block_size():
    spec, _ = _spec("btrfs-compressed-read-8k-bs.txt")
    workload = spec["workload"]
    assert workload["read"] is True and workload["size"] == "2GiB"
    assert spec["sweep"]["bs"] == ["8k", "32k", "512k"]
    assert spec["filesystems"][0]["mount_options"] == ["compress=zstd:3"]


def test_a_remount_workaround_is_the_variable_against_the_reporters_own_mount():
    spec, questions = _spec("ext4-stripe-mount-option-flush-cpu.txt")
    # the reporter's mount(8) line, not a second user's array mounted elsewhere
    assert [f["mount_options"] for f in spec["filesystems"]] == [["stripe=32745"], ["stripe=0"]]
    assert spec["workload"]["kind"] == "command" and spec["workload"]["allow_commands"] is False
    asked = next(q for q in questions if q.item.startswith("command "))
    assert "no do/done" in asked.question


def test_a_boot_option_switched_off_is_the_variable_with_its_other_value():
    facts = extract_facts((REPORTS / "ext4-mb-optimize-scan-sdcard.txt").read_text())
    sweep = facts.sweeps[0]
    assert (sweep.axis, sweep.values) == (
        "mount_options",
        ("mb_optimize_scan=1", "mb_optimize_scan=0"),
    )
    assert sweep.source.text.startswith('rootflags="mb_optimize_scan=0"')


def test_a_loop_at_a_prompt_that_writes_files_is_the_command_and_one_over_sys_is_not():
    loop = "# for d in a b c; do mkdir $d; touch $d/x; done"
    facts = extract_facts(f"ext4: mkdir slows down\n\nOn ext4 he ran\n\n{loop}\n")
    assert [(t.tool, t.text) for t in facts.tools] == [("command", loop[2:])]
    sysfs = "# for q in /sys/block/sd*/queue/nr_requests; do echo 4 > $q; done"
    assert extract_facts(f"ext4: writes slow\n\nOn ext4 he ran\n\n{sysfs}\n").tools == []


def test_mkfs_and_mount_lines_a_mailer_wrapped_are_joined_and_mount_o_loop_dropped():
    facts = extract_facts((REPORTS / "xfs-hot-tracking-ffsb-loopdev.txt").read_text())
    made = [(f.how, f.mkfs_options, f.mount_options) for f in facts.filesystems if f.how != "prose"]
    assert made == [
        ("mkfs", ("-l", "size=1310b,sunit=8"), ()),
        ("mount", (), ("logbsize=256k",)),
    ]


def test_a_robot_benchmark_over_nfs_runs_on_the_filesystem_and_says_so():
    spec, questions = _spec("btrfs-lkp-dbench-nfs-max-latency.txt")
    assert spec["workload"]["kind"] == "dbench" and spec["sweep"]["clients"][-1] == 224
    asked = [q for q in questions if q.item == "network filesystem"]
    assert asked and "through nfs" in asked[0].question and asked[0].source.number == 23


def test_a_dd_gets_a_device_that_holds_its_file_or_a_count_that_fits_one():
    spec, _ = _spec("ext4-dioread-nolock-nodelalloc-dd.txt")  # 1000 x 10M, no size given
    assert spec["target"]["size"] == "16GiB" and spec["workload"]["count"] == 819  # 8 GiB
    spec, questions = _spec("btrfs-send-after-sparse-overwrites.txt")  # 65536 x 1M
    assert spec["workload"]["count"] == 8192  # the budget: half the 16GiB image
    assert any(q.item == "dd count" and q.source.number == 22 for q in questions)


def test_an_option_current_kernels_refuse_alone_gets_what_it_needs_everywhere():
    spec, questions = _spec("ext4-journal-async-commit-fsmark.txt")
    mounts = [f.get("mount_options", []) for f in spec["filesystems"]]
    assert mounts == [["data=writeback"], ["journal_async_commit", "data=writeback"]]
    assert any("data=ordered" in q.question for q in questions if q.item == "mount options")


def test_the_robots_test_machine_sets_the_guests_cpus_not_a_side_tables():
    spec, _ = _spec("btrfs-lkp-fio-falloc-new-mount-api.txt")  # 64 threads; a side test 128
    assert "vm" not in spec  # guests=False here; the fact is the first machine's
    facts = extract_facts((REPORTS / "btrfs-lkp-fio-falloc-new-mount-api.txt").read_text())
    assert guest_fields(facts)["possible_cpus"] == 64


def test_a_robot_fsmark_block_with_a_share_of_the_cpus_counts_them():
    text = (
        "[ext4] abc: fsmark.files_per_sec -5% regression\n\n"
        "testcase: fsmark\n"
        "test machine: 8 threads 1 sockets Intel(R) Core(TM) with 16G memory\n"
        "parameters:\n\n"
        "\tnr_threads: 100%\n\tfilesize: 4K\n\ttest_size: 64M\n\tsync_method: NoSync\n"
    )
    (tool,) = extract_facts(text).tools
    assert dict(tool.options)["-d"] == "(8 directories)"


def test_long_runs_a_mutated_report_can_hold_are_read_in_linear_time():
    # each took minutes when a pattern backtracked or a line re-read the whole report
    shapes = [
        "mount" + " " * 200_000 + "x\n",
        "ext4\n" + "mke2fs /dev/sda\n" * 20_000,
        "mkfs.xfs -f -l\n" * 20_000,
        "X=1\n" + "dbench -t $X 4\n" * 20_000,
        # flags that could be values, operands that could split at any '='
        "xfs was formatted with mkfs.xfs" + " -a" * 3_000 + " X!\n",
        "Before doing fio, use dd (" + "a=" * 3_000 + "\n",
        "dd if=/dev/zero of=f\n" + "a=" * 5_000 + " x\n",
        "fio -name x -rw=write\n" + "-a-a" * 3_000 + " x\n",
    ]
    for text in shapes:
        started = time.monotonic()
        extract_facts(text)
        assert time.monotonic() - started < 15, text[:20]


def test_an_ext4_feature_with_and_without_is_one_mkfs_list_each_way():
    spec, _ = _spec("ext4-bigalloc-nodelalloc-dd-1g.txt")
    made = [fs["mkfs_options"][2:] for fs in spec["filesystems"]]  # after fslab's -E
    # the cluster size goes with bigalloc; the journal stays off both ways
    assert made == [["-C", "1048576", "-O", "^has_journal,bigalloc"], ["-O", "^has_journal"]]
    spec, _ = _spec("ext4-fast-commit-fsmark-8-threads.txt")  # named in prose only
    assert [fs["mkfs_options"][2:] for fs in spec["filesystems"]] == [[], ["-O", "fast_commit"]]


def test_a_warm_up_the_prose_puts_before_the_run_is_a_setup_step():
    spec, _ = _spec("xfs-buffered-randwrite-64k-page-filesize.txt")
    (step,) = spec["setup"]
    assert step["kind"] == "file" and step["path"] == "testfile" and step["how"] == "write"


def test_option_variables_of_a_script_without_its_mkfs_line_are_its_configurations():
    spec, _ = _spec("ext4-zram-no-journal-dd.txt")
    # "a 1200M zram disk": written exactly (1.2GiB reads back as 1288490188 bytes, which
    # preflight refused as no multiple of 512 when the spec ran)
    assert spec["target"]["size"] == "1200MiB"
    assert [fs["mkfs_options"][2:] for fs in spec["filesystems"]] == [[], ["-O", "^has_journal"]]
    assert {tuple(fs["mount_options"]) for fs in spec["filesystems"]} == {("noatime",)}


def test_two_crossed_loops_of_two_values_stay_whole_under_quick():
    """`for buffered in 0 1; do for overwrite in 0 1; do fio ...`: the report is about the
    inner loop's overwrite; --quick keeps the 2 x 2 rather than the outer loop alone."""
    spec, _ = _spec("xfs-dsync-extend-vs-overwrite-buffered-loop.txt")
    assert spec["sweep"] == {"buffered": [0, 1], "overwrite": [0, 1]}
    assert not any(key.startswith("sweep.") for key in spec["quick"]["set"])
