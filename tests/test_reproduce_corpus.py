"""Every report under tests/data/reports/ with an entry in expected.toml: what `fslab
reproduce` reads against what a reader recorded (tool, filesystem, mkfs and mount options,
workload options, the swept variable, setup steps, device count), and no report, old or
new, ends in a traceback or a spec that does not load: each report's spec loads as `fslab
run` loads it, with the workload kind of its tool (SPEC_KIND), or reproduce exits 2.

KNOWN_GAPS lists the fields fslab still reads wrong, each with the reason; a gap that
closes fails the test (strict xfail), so the list stays true.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fslab.base.errors import UsageError
from fslab.reproduce.experiment import FIELDS, compare, experiment_of
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import GIB, HostShape
from fslab.reproduce.specwrite import build_spec
from fslab.reproduce.toolwrite import STAND_INS
from fslab.spec.load import validate_spec

REPORTS = Path(__file__).parent / "data" / "reports"
EXPECTED = tomllib.loads((REPORTS / "expected.toml").read_text())
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)

_RATING_DD = (
    "the report's only command is a dd that rates the SD card; its workload (curl piped "
    "into tar) is in words only, which fslab cannot tell from a workload"
)
_CAT_READ = (
    "the read is `taskset -c 1 cat $f | pv > /dev/null`, a shell pipeline with no `time`, "
    "which fslab does not take for a workload (it exits 2 saying what it looked for)"
)
_SEND_PIPE = (
    "the measured step is `btrfs send ... | pv`, neither timed nor a benchmark; fslab takes "
    "the file's dd fill, the step before it, for the workload"
)
_SCRIPT_VARIABLE = (
    "the variable is a count the script sets itself (files made or moved), changed by "
    "editing the script between runs; fslab reads the patch as a kernel change"
)
_TIMED_UMOUNT = (
    "the timed step is `time umount` after a dd and a sync, and the variable the filesystem; "
    "fslab takes the dd for the workload and has no way to time an unmount"
)
_UNPOSTED_FIO = (
    "the fio command was never posted: the reply names only the option changed "
    "(--fallocate=none instead of the default posix); fslab exits 2, saying what it looked for"
)
_WRITE_THEN_READ = (
    "the script writes a file with dd and reads it back; fslab measures the read (its rule "
    "for a dd read of a file the report wrote), the reader the write the journal changes"
)
_FIO_WORD_LIST = (
    "the fio settings are a bare word list (`rw bs=4096 size=1GB numjobs=2 runtime=60`, rw "
    "without a value), no command or job file; and f2fs, the counterpart, is not a "
    "filesystem fslab makes"
)
_READER_AND_WRITER = (
    "the job file runs a reader and a writer at once (no stonewall), and only XFS's was "
    "posted; fslab runs one job per point and refuses it, saying why"
)
_DATA_BY_DISCARD = (
    "a two-by-two of data mode and discard; fslab sweeps discard at data=writeback "
    "(0.440s -> 3.763s, one true contrast of four), the reader the data mode with discard on"
)
_SLASH_HEADER = (
    "the robot's parameters are only in its slash header (nr_threads/testtime/test over "
    "100%/60s/chmod), not a key: value block; fslab reads no stress-ng parameters"
)
_WILL_IT_SCALE = (
    "the workload is a will-it-scale test (its C source pasted, then ./X_processes), which "
    "fslab names and neither builds nor runs (exit 2 saying so); the rest is not read past it"
)
_FALLOC = (
    "the variable is how the file was preallocated, `fallocate -l` against the proposed "
    "`-wl` (a locally built fallocate), inside `time ( ...; dd ...)`; fslab reads the dd "
    "and takes the patch series for the variable"
)
_DEDUPE = (
    "the variable is whether the files were read before deduping (cold against pre-read),"
    " said in prose; fslab reads xfsprogs' 6.1.0 and the kernel's 6.13 as kernels "
    "compared"
)
_BATCH = (
    "the variable is the batch size, the first column of a `batch:  N  files:  N` table, "
    "with and without the patch; fslab reads such tables beside a fio job only"
)
_PI = (
    "three fio jobs in turn (write, prepare, read), the drop in the read; fslab takes the"
    " first, misses the +---+ bordered block-size tables and lists no prepare step"
)
_EXTSIZE = (
    "the variable is XFS's extent size hint (none, 128k, 16M), set with xfs_io and said "
    "in prose; no spec field sets it"
)
_TOUCH = (
    "the alternatives (touch, echo >, a C open-unlink loop) are three loops the prose "
    "compares; fslab reads the first loop and takes the patch for the variable"
)
_DAX = (
    "the fio settings are a prose list (runtime=30s, ramp=3s, workers=15) over case "
    "names, no command or job file; fslab exits 2 and reads the RFC as a kernel change"
)
_KERNBUILD = (
    "the mkfs and mount options sit in flattened table cells, one column each, and four "
    "commands are timed (untar, build, tar cf, fsck); fslab takes the first and reads the"
    " patch queue as a kernel change"
)
_XARGS = (
    'fs_mark runs inside `xargs -I {} bash -c "..."` over `echo .../{1..64}`, one -d per '
    "directory; fslab keeps '{}' as the directory and does not read the Order table"
)
_JOURNAL = (
    "the remedy (a 2GB journal against 128MB) is prose; fslab adds it as a configuration,"
    " but records the kernels our note names (5.10, 6.1) as the variable"
)
_DATAMODES = (
    "the rm -rf of a mail tree is described, not given as a command, and the variable is "
    "in `===== data=... =====` headings; fslab exits 2"
)
_INODE = (
    "no command lines (untar and unlink described), inode size 128 against 256 and "
    "^huge_file in prose; fslab exits 2 and reads two kernels named in passing"
)
_DISCARD = (
    "the writes are `pv < /dev/zero > /foo` stopped by hand and the slow step a sync said"
    " in prose, nothing timed; fslab exits 2, takes /proc/mounts' discard into the base "
    "options and distribution kernels for the variable"
)
_FSPERF = (
    "fsperf's local.cfg gives the mount as `mount=mount -o noatime`, a key of its own; "
    "fslab reads mount options from mount commands"
)
_HARDLINK_CP = (
    "the timed copy is `cp -arl` in a backup script, its time in prose, and btrfs against"
    " ext4 a sentence; fslab exits 2 with no workload"
)
_DD_TARGET = (
    "the two dd runs differ only in of= (a subdirectory against the partition's root); "
    "fslab reads no sweep from a path"
)
_INCUS = (
    "the variable (ext4 directory storage against a btrfs subvolume) is in Markdown "
    "tables of a probe's results, with no command; fslab exits 2"
)
_USB_RAW = (
    "the variable is the target, the raw partition against a file on ext4; fslab runs the"
    " file's dd and reads no sweep from a device against a file"
)
_FRAGMENTED = (
    "the variable (segment_fallocation_step 32MiB against 2MiB) is in prose and a perf "
    "trace, no command; fslab exits 2"
)
_SYSBENCH_PROSE = (
    "sysbench's options are in prose (\"sysbench 0.4.12, using test=fileio, file-test-"
    'mode=rndrw"), never a command line, and the filesystems and mount options in a '
    "table's columns; fslab exits 2"
)
_FIND_LINKS = (
    'the timed command sits inside a sentence in quotes ("time find . -type f -links +1 |'
    ' wc -l" take), the tree built by a wrapped rsync; fslab exits 2 and reads a progs '
    "version as a kernel"
)
_HEREDOC_ARGS = (
    "two scripts, dbench's then fio's, whose options are positional arguments ($1..$4 "
    "from `./test-fio.sh 16 512M 2 4K`); fslab takes fio, leaves the arguments unset and "
    "the first script's mkfs options from the second's assignment"
)
_DIO_RANDRW = (
    "the variable is the mount option (dioread_nolock against the default), which fslab "
    "makes as two configurations; the experiment's first sweep is the bs of the result "
    "headings"
)
_RW_DOLLAR = (
    "-rw=$rw takes its values only from result-row labels (overwrite, read, rand "
    "overwrite, randread); fslab leaves rw at fio's default and reads the patch from our "
    "note as the variable"
)
_QUOTED_JOBFILE = (
    "the job file is split by a reviewer's remark between nrfiles= and filesize=; fslab "
    "reads the options above it only, and the reporter's build commit as a patch"
)
_READ_POLICY_SYSFS = (
    "the variable is btrfs's sysfs read_policy (pid against latency), shown by `cat "
    ".../read_policy` lines above each run; no spec field sets a filesystem's sysfs knob"
)
_RENAME_LOOP_SCRIPT = (
    "the measured step is a rename loop in a `$ cat test.sh` script timed with `date "
    "+%s%N`, its NUM_FILES edited between runs; fslab takes the dbench script after it, "
    "whose mkfs options it reads as the variable"
)
_PIPE_TABLES_NO_COMMAND = (
    "no command at all: dd's block sizes are the columns of pipe tables and the layouts "
    "(bigalloc, large block size) their rows; fslab exits 2 and reads the patch series as"
    " a kernel change"
)
_BOOT_OPTION = (
    "the variable is a boot parameter (scsi_mod.use_blk_mq=N/Y) that kernels since 5.0 "
    "lack; fslab reads the commit that removed the legacy path as a kernel change"
)
_FIO_IN_PROSE = (
    "the fio job is described in prose (50 meg file, random writes, fsync after every "
    "write), never a command or job file; fslab exits 2, saying what it looked for"
)
_IOZONE_PROSE = (
    "iozone, named in prose only, which fslab names and does not run; its mount options "
    "(nodatacow, nodatasum, compress) are a prose list and the variable with them"
)
_COMPRESS_USAGE = (
    "the mount is a usage line (`-o compress[=<zlib,lzo>]`) and the copy and untar are "
    "prose; fslab exits 2 and reads no compress values"
)
_FALLOCATE_LOOP = (
    "the 1024 files are made by a `for ((...))` loop of fallocate, one file per pass; "
    "fslab lists single steps, and a loop's files are not steps it repeats"
)
_HTML_TABLE_BARRIER = (
    "barrier=1 against barrier=0 (and unset) is only in HTML tables whose header cells "
    "ran together; fslab reads no mount option and no variable"
)
_SYSBENCH_BULLETS = (
    "sysbench's options are prose and its results bullet lists per thread count and io "
    "mode, with no command; fslab exits 2"
)
_SYSBENCH_PROSE_INODE64 = (
    "sysbench's parameters are prose and inode64 is said as advice; an Aspersa summary "
    "lists four disks behind one RAID volume, which fslab reads as four devices"
)
_BGT_BULLETS = (
    "mkfs.btrfs -O block-group-tree and btrfstune are bullets naming no device, and the "
    "timed step is a mount in words; fslab reads no mkfs option and no workload (exit 2)"
)
_NODATACOW_LXD = (
    "nodatacow is set by the pull request on the VM's image file (how is not quoted), "
    "with dd inside the guest before and after; fslab reads the dd and no variable"
)
_RM_BILLION_TABLE = (
    "the commands (rm -rf, find -delete, rsync --del) are row names of a pipe table, ext4"
    " and btrfs its columns, no command line; fslab exits 2"
)
_GOCRYPTFS_SCRIPT = (
    "the workload is gocryptfs's own benchmark.bash (not shown) on an ext4 and a btrfs "
    "mount; fslab exits 2, no workload found"
)
_PGBENCH = (
    "pgbench, which fslab names and does not run; the mount options are bare `TPS "
    "options` lines per filesystem, and createdb/pgbench -i its setup"
)
_PARALLEL_CP = (
    "the copy runs through GNU parallel over an inode-sorted list (`parallel -j1 -X cp`),"
    " its -j the variable in `command: NNNN KB/s` lines; fslab reads the asker's dd "
    "pipeline, which writes to stdout"
)
_OVERLAY_COPYUP = (
    "the variable is fuse-overlayfs's copy-up method (reflink against a byte copy), said "
    "in prose, with no command; fslab exits 2"
)
_BITCOIN_PROSE = (
    "ext4 against XFS under a node's sync, in days, said in prose only; fslab exits 2 and"
    " reads no variable"
)
_HEREDOC_POSITIONAL = (
    "the job count is the script's first positional argument ($1, run as 1 to 64 in the "
    "results' banners); fslab leaves it unset and reads the patch as a kernel change"
)
_READ_POLICIES_SYSFS = (
    "the variable is btrfs's sysfs read_policies/policy (pid against roundrobin), set by "
    "an echo fslab lists as no setup step it repeats; fslab sweeps the job files' numjobs"
    " instead"
)
_DBENCH_HEADING = (
    "the headline workload is `dbench 200`, given only as a results heading (`dbench 200 "
    "baseline`); fslab takes the one command line, fs_mark's"
)
_BARE_FIO_SETTINGS = (
    "fio's settings are bare key=value lines four quote levels deep, with no fio word, "
    "section or job name; fslab exits 2 and reads the RFC as a kernel change"
)
_PROSE_TESTS_BOX_TABLE = (
    "the four tests are described in words and the mount options are a box table's column"
    " groups (nodelalloc, delalloc); fslab exits 2 and reads the patch as a kernel change"
)
_EXT4_SYSFS_DD_OUTPUT = (
    "only dd's summary lines are shown, not its command, and the variable is an ext4 "
    "sysfs threshold the patch adds; fslab exits 2, no workload found"
)
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("btrfs-vs-ext4-cp-arl-hardlink-backup-usb-hdd-53-minutes.txt", "tool"): _HARDLINK_CP,
    ("btrfs-vs-ext4-cp-arl-hardlink-backup-usb-hdd-53-minutes.txt", "workload"): _HARDLINK_CP,
    ("btrfs-vs-ext4-cp-arl-hardlink-backup-usb-hdd-53-minutes.txt", "sweep"): _HARDLINK_CP,
    ("ext4-dd-bs32-subdir-vs-partition-root-ctrl-c-ssd.txt", "sweep"): _DD_TARGET,
    ("ext4-incus-dir-shared-journal-fsync-probe-vs-btrfs-subvolume-md-tables.txt", "sweep"): _INCUS,
    ("ext4-usb-key-dd-raw-partition-vs-ext4-file-time-sync.txt", "sweep"): _USB_RAW,
    ("xfs-fragmented-free-space-fallocate-32mib-step-perf-trace.txt", "sweep"): _FRAGMENTED,
    ("xfs-inode64-stripe-aligned-vs-ext4-sysbench-4-threads-2t-27t.txt", "tool"): _SYSBENCH_PROSE,
    (
        "xfs-inode64-stripe-aligned-vs-ext4-sysbench-4-threads-2t-27t.txt",
        "mount_options",
    ): _SYSBENCH_PROSE,
    (
        "xfs-inode64-stripe-aligned-vs-ext4-sysbench-4-threads-2t-27t.txt",
        "workload",
    ): _SYSBENCH_PROSE,
    (
        "xfs-vs-ext4-sysbench-0.4.12-rndrw-59t-noatime-nobarrier-pipe-table.txt",
        "tool",
    ): _SYSBENCH_PROSE,
    (
        "xfs-vs-ext4-sysbench-0.4.12-rndrw-59t-noatime-nobarrier-pipe-table.txt",
        "workload",
    ): _SYSBENCH_PROSE,
    (
        "xfs-vs-ext4-sysbench-0.4.12-rndrw-59t-noatime-nobarrier-pipe-table.txt",
        "sweep",
    ): _SYSBENCH_PROSE,
    (
        "btrfs-486m-hardlinks-time-find-links-wd-purple-vs-drives-links-per-sec.txt",
        "tool",
    ): _FIND_LINKS,
    (
        "btrfs-486m-hardlinks-time-find-links-wd-purple-vs-drives-links-per-sec.txt",
        "workload",
    ): _FIND_LINKS,
    (
        "btrfs-486m-hardlinks-time-find-links-wd-purple-vs-drives-links-per-sec.txt",
        "sweep",
    ): _FIND_LINKS,
    (
        "btrfs-486m-hardlinks-time-find-links-wd-purple-vs-drives-links-per-sec.txt",
        "setup",
    ): _FIND_LINKS,
    (
        "btrfs-nocow-writeback-dbench-fio-quoted-scripts-heredoc-positional-args.txt",
        "tool",
    ): _HEREDOC_ARGS,
    (
        "btrfs-nocow-writeback-dbench-fio-quoted-scripts-heredoc-positional-args.txt",
        "mkfs_options",
    ): _HEREDOC_ARGS,
    (
        "btrfs-nocow-writeback-dbench-fio-quoted-scripts-heredoc-positional-args.txt",
        "workload",
    ): _HEREDOC_ARGS,
    (
        "ext4-dio-randrw-dioread-nolock-vs-default-ilock-rfc-nested-quote-bs-tables.txt",
        "sweep",
    ): _DIO_RANDRW,
    (
        "ext4-jbd2-commit-tid-fio-rw-dollar-four-workloads-ramdisk-quoted-review.txt",
        "sweep",
    ): _RW_DOLLAR,
    (
        "xfs-conv-kworkers-64k-files-fio-jobfile-split-by-quote-xfs-info-rmapbt-iostat.txt",
        "workload",
    ): _QUOTED_JOBFILE,
    (
        "xfs-conv-kworkers-64k-files-fio-jobfile-split-by-quote-xfs-info-rmapbt-iostat.txt",
        "sweep",
    ): _QUOTED_JOBFILE,
    ("xfs-fallocate-write-zeroes-vs-unwritten-dd-dsync-time-subshell.txt", "sweep"): _FALLOC,
    ("xfs-fallocate-write-zeroes-vs-unwritten-dd-dsync-time-subshell.txt", "setup"): _FALLOC,
    ("xfs-fideduperange-cold-vs-preread-strace-71s.txt", "sweep"): _DEDUPE,
    ("xfs-inode-recycle-rcu-batch-create-unlink-files-table.txt", "sweep"): _BATCH,
    ("xfs-pi-nvme-bounce-vs-zero-copy-dio-read-bs-ascii-tables.txt", "workload"): _PI,
    ("xfs-pi-nvme-bounce-vs-zero-copy-dio-read-bs-ascii-tables.txt", "sweep"): _PI,
    ("xfs-pi-nvme-bounce-vs-zero-copy-dio-read-bs-ascii-tables.txt", "setup"): _PI,
    ("xfs-sparse-vdisk-randwrite-extsize-hint-seq-read-reflink-prose.txt", "sweep"): _EXTSIZE,
    ("xfs-touch-vs-echo-vs-c-open-unlink-time-for-loops.txt", "sweep"): _TOUCH,
    ("ext4-dax-fast-commit-bytelog-mount-option-fio-case-table.txt", "tool"): _DAX,
    ("ext4-dax-fast-commit-bytelog-mount-option-fio-case-table.txt", "workload"): _DAX,
    ("ext4-dax-fast-commit-bytelog-mount-option-fio-case-table.txt", "sweep"): _DAX,
    ("ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt", "mkfs_options"): _KERNBUILD,
    ("ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt", "workload"): _KERNBUILD,
    ("ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt", "sweep"): _KERNBUILD,
    ("ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt", "setup"): _KERNBUILD,
    ("ext4-fast-commit-fsmark-xargs-dir-ways-order-table.txt", "workload"): _XARGS,
    ("ext4-fast-commit-fsmark-xargs-dir-ways-order-table.txt", "sweep"): _XARGS,
    ("ext4-journal-128m-vs-2g-fio-2048-jobs-numbered-steps.txt", "sweep"): _JOURNAL,
    ("ext4-vs-btrfs-xfs-will-it-scale-vfsmix2-o-trunc-idle.txt", "workload"): _WILL_IT_SCALE,
    ("ext4-vs-btrfs-xfs-will-it-scale-vfsmix2-o-trunc-idle.txt", "sweep"): _WILL_IT_SCALE,
    ("ext4-vs-ext3-data-modes-rm-rf-9890-dirs-inode-reservation.txt", "tool"): _DATAMODES,
    ("ext4-vs-ext3-data-modes-rm-rf-9890-dirs-inode-reservation.txt", "workload"): _DATAMODES,
    ("ext4-vs-ext3-data-modes-rm-rf-9890-dirs-inode-reservation.txt", "sweep"): _DATAMODES,
    ("ext4-vs-ext3-inode-128-256-untar-unlink-elapsed.txt", "tool"): _INODE,
    ("ext4-vs-ext3-inode-128-256-untar-unlink-elapsed.txt", "mkfs_options"): _INODE,
    ("ext4-vs-ext3-inode-128-256-untar-unlink-elapsed.txt", "sweep"): _INODE,
    ("btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt", "tool"): _DISCARD,
    ("btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt", "mount_options"): _DISCARD,
    ("btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt", "workload"): _DISCARD,
    ("btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt", "sweep"): _DISCARD,
    ("btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt", "setup"): _DISCARD,
    ("btrfs-fsperf-emptyfiles500k-filecreate-clat-p99-nohz-5.16.txt", "mount_options"): _FSPERF,
    ("xfs-vs-ext4-buffered-randrw-8k-psync-iolock.txt", "tool"): _READER_AND_WRITER,
    ("xfs-vs-ext4-buffered-randrw-8k-psync-iolock.txt", "sweep"): _READER_AND_WRITER,
    ("btrfs-snapshot-loop-4k-randwrite-iops-decay.txt", "sweep"): (
        "the variable is how many snapshots the loop has taken before each fio run; no "
        "spec field sets it (and the snapshot command is not given)"
    ),
    ("ext4-fdatasync-4k-overwrite-unwritten-vs-written-extents.txt", "sweep"): (
        "the variable is the state of the file before the run (unwritten, written), given "
        "only as a comment; fslab reads the patch as a kernel change"
    ),
    ("ext4-discard-rm-1m-files-dmcrypt.txt", "setup"): (
        "the million files the rm removes are made by a timed python one-liner before it; "
        "fslab lists setup steps it knows (mkdir here), not another timed command"
    ),
    ("btrfs-raid1-read-policy-defrag.txt", "sweep"): (
        "the variable is btrfs's sysfs read_policy (pid, rotation, latency, devid:1), the "
        "first column of both tables; no spec field sets a filesystem's sysfs knob"
    ),
    ("xfs-dsync-extend-vs-overwrite-buffered-loop.txt", "sweep"): (
        "the loop crosses --buffered (outer) with --overwrite, and the report is about "
        "overwrite; fslab sweeps both and records the outer loop first"
    ),
    ("ext4-vs-f2fs-femu-blackbox-ssd-fio.txt", "tool"): _FIO_WORD_LIST,
    ("ext4-vs-f2fs-femu-blackbox-ssd-fio.txt", "workload"): _FIO_WORD_LIST,
    ("ext4-vs-f2fs-femu-blackbox-ssd-fio.txt", "sweep"): _FIO_WORD_LIST,
    ("ext4-azure-runner-writeback-barrier0-fio-flat.txt", "sweep"): (
        "the new mount options are one backticked list in a bullet, changed together with "
        "vm.swappiness, transparent hugepages and the fstrim timer; fslab reads no variable"
    ),
    ("btrfs-etcd-idle-writes-vs-ext4.txt", "sweep"): (
        "btrfs against ext4 is said in prose only (etcd's data moved to ext4), with no "
        "benchmark and no table; fslab reads no variable"
    ),
    ("ext4-zram-no-journal-dd.txt", "workload"): _WRITE_THEN_READ,
    ("ext4-zram-no-journal-dd.txt", "setup"): _WRITE_THEN_READ,
    ("xfs-raid6-fio-fallocate-posix-vs-none.txt", "tool"): _UNPOSTED_FIO,
    ("xfs-raid6-fio-fallocate-posix-vs-none.txt", "workload"): _UNPOSTED_FIO,
    ("xfs-raid6-fio-fallocate-posix-vs-none.txt", "sweep"): _UNPOSTED_FIO,
    ("xfs-v4-v5-inode-cluster-traversal.txt", "sweep"): (
        "the variable is XFS's on-disk format, v4 against v5 ('the CRC-enabled on-disk "
        "format, i.e. mkfs.xfs -m crc=1'); fslab does not read a format's name as its mkfs "
        "option, and reads the commit as a kernel change"
    ),
    ("btrfs-send-1g-file-readahead.txt", "setup"): (
        "the steps before the timed send (btrfs subvolume create, xfs_io pwrite, a "
        "read-only snapshot) are not steps fslab reads; they stay in the report's words"
    ),
    ("btrfs-seek-hole-16g-lzo-cold-vs-cached.txt", "sweep"): (
        "the variable is cold metadata (right after a remount) against cached, timed twice "
        "inside the script; fslab reads the patch as a kernel change"
    ),
    ("btrfs-send-readahead-file-count-hdd.txt", "sweep"): _SCRIPT_VARIABLE,
    ("btrfs-send-utimes-moved-files-count.txt", "sweep"): _SCRIPT_VARIABLE,
    ("btrfs-rm-rf-old-vs-fts-rm.txt", "sweep"): (
        "the variable is which rm binary the script runs (`/p/bin/rm` against `/cu/src/rm`), "
        "two builds of a program, which no spec field sets"
    ),
    ("ext4-compilebench-delalloc-vs-ext3.txt", "sweep"): (
        "the variable is ext3 against ext4, and ext3 is not a filesystem fslab makes; fslab "
        "reads the patch queue as a kernel change"
    ),
    ("ext4-umount-after-30g-dd-clean-cache.txt", "tool"): _TIMED_UMOUNT,
    ("ext4-umount-after-30g-dd-clean-cache.txt", "workload"): _TIMED_UMOUNT,
    ("ext4-umount-after-30g-dd-clean-cache.txt", "sweep"): _TIMED_UMOUNT,
    ("ext4-umount-after-30g-dd-clean-cache.txt", "setup"): _TIMED_UMOUNT,
    ("xfs-fallocate-pwrite-alternating.txt", "sweep"): (
        "the variable is the argument of the report's own C program (`./test test.1 1`, "
        "then `./test test.2 2`), which a spec's command cannot sweep; fslab reads kernels"
    ),
    ("btrfs-send-after-sparse-overwrites.txt", "tool"): _SEND_PIPE,
    ("btrfs-send-after-sparse-overwrites.txt", "workload"): _SEND_PIPE,
    ("btrfs-send-after-sparse-overwrites.txt", "setup"): _SEND_PIPE,
    ("btrfs-send-after-sparse-overwrites.txt", "sweep"): (
        "the variable is how many times a loop overwrote the snapshot's live file before "
        "the second send, which no spec field sets"
    ),
    ("ext4-sysbench-seqwr-file-num.txt", "sweep"): (
        "the second command drops --file-num and --file-block-size together (sysbench's "
        "defaults); fslab sweeps one option its commands differ in, not two"
    ),
    ("ext4-mb-optimize-scan-sdcard.txt", "tool"): _RATING_DD,
    ("ext4-mb-optimize-scan-sdcard.txt", "runnable"): _RATING_DD,
    ("ext4-mb-optimize-scan-sdcard.txt", "workload"): _RATING_DD,
    ("btrfs-compressed-read-full-pagecache-numa.txt", "tool"): _CAT_READ,
    ("btrfs-compressed-read-full-pagecache-numa.txt", "workload"): _CAT_READ,
    ("btrfs-compressed-read-full-pagecache-numa.txt", "sweep"): (
        "the variable is the state of the reader's NUMA node (full of page cache or not), "
        "which no spec field sets; fslab reads the kernels the report names instead"
    ),
    ("xfs-bigfile-read-slows-after-60s.txt", "sweep"): (
        "the variable is time into one long read (and XFS against ext4 beside it), not a "
        "setting; fslab reads the two kernels the thread names instead"
    ),
    ("xfs-preallocation-randwrite-qcow2.txt", "sweep"): (
        "the target file's preparation (sparse, fallocated, written) is named in words and "
        "qemu-img terms only; fslab reads the kernels the thread mentions instead"
    ),
    ("ext4-cfq-blkio-cgroup-dd-512-dsync.txt", "workload"): (
        "the first dd has the reporter's typo oflags=dsync, which dd refuses; fslab asks "
        "about it rather than correct it (the follow-up's oflag=dsync is read as XFS's)"
    ),
    ("ext4-cfq-blkio-cgroup-dd-512-dsync.txt", "sweep"): (
        "the variable is the I/O scheduler (noop or deadline against CFQ), set in sysfs; CFQ "
        "left the kernel in 5.0 and no spec field sets a scheduler"
    ),
    ("ext4-vs-ext3-fio-randwrite-fsync3-32jobs.txt", "sweep"): (
        "the variable is ext3 on 3.2 against ext4 on 4.4, and ext3 is not a filesystem "
        "fslab makes; fslab reads the two kernels"
    ),
    ("xfs-md-raid5-5nvme-fio-1m-write-vs-raw.txt", "sweep"): (
        "the variable is the raw md device against XFS on it; fslab never writes to a "
        "device, so it runs the XFS command and has no raw baseline"
    ),
    ("ext4-discard-data-writeback-rm-rf-kernel-tree.txt", "mount_options"): _DATA_BY_DISCARD,
    ("ext4-discard-data-writeback-rm-rf-kernel-tree.txt", "sweep"): _DATA_BY_DISCARD,
    ("ext4-discard-data-writeback-rm-rf-kernel-tree.txt", "setup"): (
        "the tree the timed rm removes is unpacked by `tar xf ~/linux-5.10.tar` from the "
        "reporter's home before it; fslab lists setup steps it knows, not an archive of "
        "the reporter's"
    ),
    ("ext4-dax-overwrite-jobfile-numjobs-barchart.txt", "mount_options"): (
        "-o dax is implied by 'simulated pmem (fsdax)' in words, never written; a loop "
        "device cannot do DAX in any case"
    ),
    ("btrfs-fsmark-nproc-dirs-unlock-parent-early.txt", "workload"): (
        "the script appends one -d per thread in a loop bounded by $THREADS, a CPU count "
        "($(nproc --all)); fslab keeps the one -d word as written ($MNT/d$i)"
    ),
    ("btrfs-sectorsize-4k-vs-64k-pagesize-fio-io-uring-jobfile.txt", "mkfs_options"): (
        "the variable is btrfs's sector size (mkfs -s 64k against 4k), said in words "
        "with no mkfs line, and 64k mounts only on a 64K-page host; fslab sweeps the "
        "buffered run instead"
    ),
    ("btrfs-sectorsize-4k-vs-64k-pagesize-fio-io-uring-jobfile.txt", "sweep"): (
        "the variable is btrfs's sector size (mkfs -s 64k against 4k), said in words "
        "with no mkfs line, and 64k mounts only on a 64K-page host; fslab sweeps the "
        "buffered run instead"
    ),
    ("ext4-data-journal-vs-ordered-fio-optane-rate-iops-latency.txt", "sweep"): (
        "data=journal against data=ordered is said by the runs' headings in words "
        "('data journaling enabled'), with no mount line; fslab reads no variable"
    ),
    ("btrfs-vs-ext4-rm-64gib-files-time-for-loop-md-raid0.txt", "mount_options"): (
        "ssd_spread is said in prose (remounted with it), with no mount line"
    ),
    ("btrfs-vs-ext4-rm-64gib-files-time-for-loop-md-raid0.txt", "sweep"): (
        "btrfs on the md array against ext4 on the same disks is said in prose; fslab "
        "reads two kernels the thread names (5.7.1 belongs to another test)"
    ),
    ("btrfs-vs-ext4-rm-64gib-files-time-for-loop-md-raid0.txt", "setup"): (
        "the ten 64GiB files the loop removes are made by a command the report does not show"
    ),
    ("xfs-fallocate-vs-overwrite-dd-direct-dsync-4096-count-bytes.txt", "sweep"): (
        "the variable is the file's state, set by fallocate, a first dd, then fallocate "
        "-z between the timed dd runs; fslab lists the first fallocate and sweeps "
        "nothing"
    ),
    ("xfs-fallocate-vs-overwrite-dd-direct-dsync-4096-count-bytes.txt", "setup"): (
        "the variable is the file's state, set by fallocate, a first dd, then fallocate "
        "-z between the timed dd runs; fslab lists the first fallocate and sweeps "
        "nothing"
    ),
    ("xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt", "mount_options"): (
        _WILL_IT_SCALE
    ),
    ("xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt", "workload"): _WILL_IT_SCALE,
    ("xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt", "sweep"): _WILL_IT_SCALE,
    ("xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt", "setup"): _WILL_IT_SCALE,
    ("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt", "tool"): (
        "the timed step is an xfs_io truncate loop after a dd fill loop, on a realtime "
        "device fslab does not make; fslab takes the dd fill for the workload"
    ),
    ("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt", "devices"): (
        "the timed step is an xfs_io truncate loop after a dd fill loop, on a realtime "
        "device fslab does not make; fslab takes the dd fill for the workload"
    ),
    ("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt", "workload"): (
        "the timed step is an xfs_io truncate loop after a dd fill loop, on a realtime "
        "device fslab does not make; fslab takes the dd fill for the workload"
    ),
    ("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt", "setup"): (
        "the timed step is an xfs_io truncate loop after a dd fill loop, on a realtime "
        "device fslab does not make; fslab takes the dd fill for the workload"
    ),
    ("xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt", "sweep"): (
        "the variable is the realtime extent size ($rtextsize, 8k to 1024k), set "
        "outside the commands shown; fslab reads the patch as a kernel change"
    ),
    ("btrfs-bg-tree-mount-time-ftrace-fallocate-16-subvols.txt", "workload"): (
        "the measured step is the mount after the fill script, timed with ftrace; fslab "
        "takes the whole script for a timed command"
    ),
    ("btrfs-bg-tree-mount-time-ftrace-fallocate-16-subvols.txt", "setup"): (
        "the measured step is the mount after the fill script, timed with ftrace; fslab "
        "takes the whole script for a timed command"
    ),
    ("btrfs-bg-tree-mount-time-ftrace-fallocate-16-subvols.txt", "sweep"): (
        "the variable is mkfs -O bg-tree, on a commented-out mkfs line; fslab reads the "
        "patch as a kernel change"
    ),
    ("xfs-ext4-btrfs-git-make-test-hdd-vs-ssd.txt", "setup"): (
        "`cd git` and `make clean` before the timed make are steps in the reporter's "
        "tree, which fslab does not list; it keeps the drop_caches"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "tool"): (
        "the benchmark is a Rust program built from its repository (hdd-speed-test), "
        "which fslab does not name; it exits 2, no workload found"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "runnable"): (
        "the benchmark is a Rust program built from its repository (hdd-speed-test), "
        "which fslab does not name; it exits 2, no workload found"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "workload"): (
        "the benchmark is a Rust program built from its repository (hdd-speed-test), "
        "which fslab does not name; it exits 2, no workload found"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "setup"): (
        "the benchmark is a Rust program built from its repository (hdd-speed-test), "
        "which fslab does not name; it exits 2, no workload found"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "filesystem"): (
        "btrfs against ext4 is said in prose and a README table fslab does not read; it "
        "takes the first filesystem named and reads a commit as a kernel change"
    ),
    ("btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt", "sweep"): (
        "btrfs against ext4 is said in prose and a README table fslab does not read; it "
        "takes the first filesystem named and reads a commit as a kernel change"
    ),
    ("btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt", "tool"): (
        "the phases (unpack, make defconfig, build, remove) and XFS against btrfs are "
        "in an HTML table with no command lines; fslab exits 2, no workload found"
    ),
    ("btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt", "runnable"): (
        "the phases (unpack, make defconfig, build, remove) and XFS against btrfs are "
        "in an HTML table with no command lines; fslab exits 2, no workload found"
    ),
    ("btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt", "filesystem"): (
        "the phases (unpack, make defconfig, build, remove) and XFS against btrfs are "
        "in an HTML table with no command lines; fslab exits 2, no workload found"
    ),
    ("btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt", "workload"): (
        "the phases (unpack, make defconfig, build, remove) and XFS against btrfs are "
        "in an HTML table with no command lines; fslab exits 2, no workload found"
    ),
    ("btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt", "sweep"): (
        "the phases (unpack, make defconfig, build, remove) and XFS against btrfs are "
        "in an HTML table with no command lines; fslab exits 2, no workload found"
    ),
    ("btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt", "tool"): (
        "the timed `time -p cp` runs copy files that dd loops made first; fslab takes "
        "the first data-making dd for the workload"
    ),
    ("btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt", "filesystem"): (
        "the timed `time -p cp` runs copy files that dd loops made first; fslab takes "
        "the first data-making dd for the workload"
    ),
    ("btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt", "workload"): (
        "the timed `time -p cp` runs copy files that dd loops made first; fslab takes "
        "the first data-making dd for the workload"
    ),
    ("btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt", "setup"): (
        "the timed `time -p cp` runs copy files that dd loops made first; fslab takes "
        "the first data-making dd for the workload"
    ),
    ("btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt", "sweep"): (
        "ext4, btrfs and XFS are compared in prose and per-filesystem sections, not a "
        "table with a row per filesystem; fslab reads no variable"
    ),
    ("btrfs-thread-pool-mount-option-iozone-rpi.txt", "mount_options"): (
        "the benchmark is iozone, which fslab names and does not run; its options and "
        "the thread_pool values are not read past that"
    ),
    ("btrfs-thread-pool-mount-option-iozone-rpi.txt", "workload"): (
        "the benchmark is iozone, which fslab names and does not run; its options and "
        "the thread_pool values are not read past that"
    ),
    ("btrfs-thread-pool-mount-option-iozone-rpi.txt", "sweep"): (
        "the benchmark is iozone, which fslab names and does not run; its options and "
        "the thread_pool values are not read past that"
    ),
    ("ext4-mdraid10-fio-randread-iops-vs-iostat-testfile-size.txt", "mount_options"): (
        "-o nobarrier is said in prose, with no mount line (and current kernels refuse it)"
    ),
    ("ext4-mdraid10-fio-randread-iops-vs-iostat-testfile-size.txt", "workload"): (
        "our copy of the fio command is cut at --size=; fslab keeps the empty size and asks"
    ),
    ("ext4-mdraid10-fio-randread-iops-vs-iostat-testfile-size.txt", "sweep"): (
        "the variable is the test file's size (100GB against 5TB), said in later "
        "comments; the drop_caches is said in words; fslab reads neither"
    ),
    ("ext4-mdraid10-fio-randread-iops-vs-iostat-testfile-size.txt", "setup"): (
        "the variable is the test file's size (100GB against 5TB), said in later "
        "comments; the drop_caches is said in words; fslab reads neither"
    ),
    ("ext4-vs-zfs-mariadb-mythfilldatabase-time-markdown-sysinfo.txt", "runnable"): (
        "the comparison is ext4 against ZFS, which fslab does not make; fslab writes "
        "the timed command (switched off) and reads no variable"
    ),
    ("ext4-vs-zfs-mariadb-mythfilldatabase-time-markdown-sysinfo.txt", "sweep"): (
        "the comparison is ext4 against ZFS, which fslab does not make; fslab writes "
        "the timed command (switched off) and reads no variable"
    ),
    ("xfs-lkp-stress-ng-chmod-slash-header-only.txt", "tool"): _SLASH_HEADER,
    ("xfs-lkp-stress-ng-chmod-slash-header-only.txt", "workload"): _SLASH_HEADER,
    ("ext4-delalloc-reserve-rfc-fio-grid-bigalloc-off-on.txt", "sweep"): (
        "the variables are a grid of rw, fsync, numjobs and bs, named by the tables' "
        "columns and left as $rw, $sync, ${numjobs} and ${bs}k in the command; fslab reads "
        "the patch as a kernel change"
    ),
    ("ext4-rralloc-mount-option-fio-three-jobs-markdown.txt", "sweep"): (
        "rralloc is a mount option the patch under review adds, said in prose; fslab reads "
        "the patch as a kernel change (no kernel here has the option)"
    ),
    ("btrfs-sync-vs-workqueue-csum-sysfs-nullblk-numjobs-filesize.txt", "sweep"): (
        "the variable is a btrfs sysfs switch (checksums in a workqueue or inline), which no "
        "spec field sets; fslab reads the patch as a kernel change"
    ),
    ("xfs-mkfs-parent-0-vs-1-fsmark-bash-x-script.txt", "workload"): (
        'the directories are "${dirs[@]}", an array the script fills with -d words per '
        "allocation group; fslab keeps the word without its option"
    ),
    ("xfs-mkfs-parent-0-vs-1-fsmark-bash-x-script.txt", "setup"): (
        "the directories are made by a shell function (mkdirme, one per AG) that fslab does "
        "not read as a setup step"
    ),
    (
        "btrfs-raid1-read-policy-pid-vs-latency-fio-three-workloads-wrapped.txt",
        "sweep",
    ): _READ_POLICY_SYSFS,
    (
        "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt",
        "tool",
    ): _RENAME_LOOP_SCRIPT,
    (
        "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt",
        "mount_options",
    ): _RENAME_LOOP_SCRIPT,
    (
        "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt",
        "workload",
    ): _RENAME_LOOP_SCRIPT,
    (
        "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt",
        "sweep",
    ): _RENAME_LOOP_SCRIPT,
    (
        "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt",
        "setup",
    ): _RENAME_LOOP_SCRIPT,
    (
        "ext4-large-block-size-vs-bigalloc-dd-bio-dio-bs-4k-64k-pipe-tables.txt",
        "sweep",
    ): _PIPE_TABLES_NO_COMMAND,
    (
        "xfs-fio-overwrite-psync-2-jobs-scsi-use-blk-mq-boot-option-missing-backslash.txt",
        "sweep",
    ): _BOOT_OPTION,
    (
        "btrfs-fio-50m-randwrite-fsync-every-write-sata-vs-fusion-tab-table.txt",
        "tool",
    ): _FIO_IN_PROSE,
    (
        "btrfs-fio-50m-randwrite-fsync-every-write-sata-vs-fusion-tab-table.txt",
        "workload",
    ): _FIO_IN_PROSE,
    (
        "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt",
        "mkfs_options",
    ): _IOZONE_PROSE,
    (
        "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt",
        "mount_options",
    ): _IOZONE_PROSE,
    (
        "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt",
        "workload",
    ): _IOZONE_PROSE,
    (
        "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt",
        "sweep",
    ): _IOZONE_PROSE,
    (
        "btrfs-lzo-zlib-nocompress-tarball-copy-extract-commit-tables.txt",
        "mount_options",
    ): _COMPRESS_USAGE,
    (
        "btrfs-lzo-zlib-nocompress-tarball-copy-extract-commit-tables.txt",
        "sweep",
    ): _COMPRESS_USAGE,
    (
        "btrfs-sysbench-rndwr-1024-fallocated-files-fast-fsync-indented-steps.txt",
        "setup",
    ): _FALLOCATE_LOOP,
    (
        "ext4-dbench-5-clients-barrier-0-vs-1-ssd-flattened-html-tables.txt",
        "mount_options",
    ): _HTML_TABLE_BARRIER,
    (
        "ext4-dbench-5-clients-barrier-0-vs-1-ssd-flattened-html-tables.txt",
        "sweep",
    ): _HTML_TABLE_BARRIER,
    (
        "ext4-sysbench-16k-odirect-rndwr-1-vs-4-threads-sync-vs-async-bullets.txt",
        "tool",
    ): _SYSBENCH_BULLETS,
    (
        "ext4-sysbench-16k-odirect-rndwr-1-vs-4-threads-sync-vs-async-bullets.txt",
        "workload",
    ): _SYSBENCH_BULLETS,
    (
        "ext4-sysbench-16k-odirect-rndwr-1-vs-4-threads-sync-vs-async-bullets.txt",
        "sweep",
    ): _SYSBENCH_BULLETS,
    (
        "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt",
        "tool",
    ): _SYSBENCH_PROSE_INODE64,
    (
        "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt",
        "mount_options",
    ): _SYSBENCH_PROSE_INODE64,
    (
        "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt",
        "devices",
    ): _SYSBENCH_PROSE_INODE64,
    (
        "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt",
        "workload",
    ): _SYSBENCH_PROSE_INODE64,
    (
        "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt",
        "sweep",
    ): _SYSBENCH_PROSE_INODE64,
    (
        "btrfs-block-group-tree-btrfstune-convert-mount-50s-to-5s-network-disk.txt",
        "mkfs_options",
    ): _BGT_BULLETS,
    (
        "btrfs-block-group-tree-btrfstune-convert-mount-50s-to-5s-network-disk.txt",
        "sweep",
    ): _BGT_BULLETS,
    (
        "btrfs-vm-image-nodatacow-dd-urandom-4m-fdatasync-82-mbs-flat.txt",
        "sweep",
    ): _NODATACOW_LXD,
    (
        "btrfs-vs-ext4-billion-empty-files-rm-rf-find-delete-rsync-del-pipe-table.txt",
        "tool",
    ): _RM_BILLION_TABLE,
    (
        "btrfs-vs-ext4-billion-empty-files-rm-rf-find-delete-rsync-del-pipe-table.txt",
        "workload",
    ): _RM_BILLION_TABLE,
    (
        "btrfs-vs-ext4-billion-empty-files-rm-rf-find-delete-rsync-del-pipe-table.txt",
        "sweep",
    ): _RM_BILLION_TABLE,
    (
        "btrfs-vs-ext4-hdd-gocryptfs-encfs-benchmark-bash-write-untar-decimal-comma.txt",
        "tool",
    ): _GOCRYPTFS_SCRIPT,
    (
        "btrfs-vs-ext4-hdd-gocryptfs-encfs-benchmark-bash-write-untar-decimal-comma.txt",
        "workload",
    ): _GOCRYPTFS_SCRIPT,
    (
        "btrfs-vs-ext4-hdd-gocryptfs-encfs-benchmark-bash-write-untar-decimal-comma.txt",
        "sweep",
    ): _GOCRYPTFS_SCRIPT,
    (
        "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt",
        "mount_options",
    ): _PGBENCH,
    (
        "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt",
        "workload",
    ): _PGBENCH,
    (
        "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt",
        "sweep",
    ): _PGBENCH,
    (
        "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt",
        "setup",
    ): _PGBENCH,
    (
        "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt",
        "tool",
    ): _PARALLEL_CP,
    (
        "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt",
        "runnable",
    ): _PARALLEL_CP,
    (
        "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt",
        "workload",
    ): _PARALLEL_CP,
    (
        "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt",
        "sweep",
    ): _PARALLEL_CP,
    (
        "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt",
        "setup",
    ): _PARALLEL_CP,
    (
        "xfs-reflink-fuse-overlayfs-copyup-chown-r-time-v-elapsed.txt",
        "sweep",
    ): _OVERLAY_COPYUP,
    (
        "xfs-vs-ext4-proxmox-vm-bitcoin-node-sync-9-days-vs-2-days-prose.txt",
        "sweep",
    ): _BITCOIN_PROSE,
    (
        "btrfs-fsync-full-sync-flag-heredoc-jobfile-positional-args-numjobs-1-to-64.txt",
        "sweep",
    ): _HEREDOC_POSITIONAL,
    (
        "btrfs-raid1c3-roundrobin-vs-pid-sysfs-echo-fio-jobfiles-numjobs-1-8.txt",
        "sweep",
    ): _READ_POLICIES_SYSFS,
    (
        "btrfs-raid1c3-roundrobin-vs-pid-sysfs-echo-fio-jobfiles-numjobs-1-8.txt",
        "setup",
    ): _READ_POLICIES_SYSFS,
    (
        "btrfs-tree-lock-rwsem-dbench-200-fsmark-glob-dirs-time-output-tab-table.txt",
        "tool",
    ): _DBENCH_HEADING,
    (
        "btrfs-tree-lock-rwsem-dbench-200-fsmark-glob-dirs-time-output-tab-table.txt",
        "workload",
    ): _DBENCH_HEADING,
    (
        "ext4-dio-prealloc-shared-ilock-bare-fio-params-bs-sweep-nested-quotes.txt",
        "tool",
    ): _BARE_FIO_SETTINGS,
    (
        "ext4-dio-prealloc-shared-ilock-bare-fio-params-bs-sweep-nested-quotes.txt",
        "workload",
    ): _BARE_FIO_SETTINGS,
    (
        "ext4-dio-prealloc-shared-ilock-bare-fio-params-bs-sweep-nested-quotes.txt",
        "sweep",
    ): _BARE_FIO_SETTINGS,
    (
        "ext4-inode-prealloc-rbtree-nodelalloc-vs-delalloc-box-table-prose-tests.txt",
        "mount_options",
    ): _PROSE_TESTS_BOX_TABLE,
    (
        "ext4-inode-prealloc-rbtree-nodelalloc-vs-delalloc-box-table-prose-tests.txt",
        "sweep",
    ): _PROSE_TESTS_BOX_TABLE,
    (
        "ext4-mballoc-skip-cr-loops-sysfs-threshold-echo-dd-output-fragmented-md0.txt",
        "tool",
    ): _EXT4_SYSFS_DD_OUTPUT,
    (
        "ext4-mballoc-skip-cr-loops-sysfs-threshold-echo-dd-output-fragmented-md0.txt",
        "sweep",
    ): _EXT4_SYSFS_DD_OUTPUT,
}

# The [workload] kind of each report's spec; None: reproduce exits 2 (aim7 is not runnable
# anywhere fslab runs, a job file named but not pasted is no workload).
SPEC_KIND: dict[str, str | None] = {
    "btrfs-kdiskmark-seq1m-q8t1-cow-vs-nocow-6.12-vs-6.18.txt": None,
    "btrfs-vs-ext4-cp-arl-hardlink-backup-usb-hdd-53-minutes.txt": None,
    "ext4-dd-bs32-subdir-vs-partition-root-ctrl-c-ssd.txt": "dd",
    "ext4-incus-dir-shared-journal-fsync-probe-vs-btrfs-subvolume-md-tables.txt": None,
    "ext4-usb-key-dd-raw-partition-vs-ext4-file-time-sync.txt": "dd",
    "xfs-fragmented-free-space-fallocate-32mib-step-perf-trace.txt": None,
    "xfs-inode64-stripe-aligned-vs-ext4-sysbench-4-threads-2t-27t.txt": None,
    "xfs-vs-ext4-sysbench-0.4.12-rndrw-59t-noatime-nobarrier-pipe-table.txt": None,
    "btrfs-486m-hardlinks-time-find-links-wd-purple-vs-drives-links-per-sec.txt": None,
    "btrfs-dio-read-max-inline-0-vs-64k-dashed-step-lines-wrapped-fio.txt": "fio",
    "btrfs-nocow-writeback-dbench-fio-quoted-scripts-heredoc-positional-args.txt": "fio",
    "ext4-aio-dio-overwrite-4k-qd128-cpus-allowed-1-4.18-vs-5.10-endio-kworker.txt": "fio",
    "ext4-dio-randrw-dioread-nolock-vs-default-ilock-rfc-nested-quote-bs-tables.txt": "fio",
    "ext4-jbd2-commit-tid-fio-rw-dollar-four-workloads-ramdisk-quoted-review.txt": "fio",
    "xfs-64k-page-4k-block-fsync-randwrite-subpage-dirty-vs-ext4-fenced-fio-output.txt": "fio",
    "xfs-conv-kworkers-64k-files-fio-jobfile-split-by-quote-xfs-info-rmapbt-iostat.txt": "fio",
    "xfs-buffered-randrw-16-jobs-iolock-single-dash-quoted-name.txt": "fio",
    "xfs-dsync-dio-libaio-jobfile-quoted-ilock-log-force-db2.txt": "fio",
    "xfs-fallocate-write-zeroes-vs-unwritten-dd-dsync-time-subshell.txt": "dd",
    "xfs-fideduperange-cold-vs-preread-strace-71s.txt": None,
    "xfs-inode-recycle-rcu-batch-create-unlink-files-table.txt": None,
    "xfs-pi-nvme-bounce-vs-zero-copy-dio-read-bs-ascii-tables.txt": "fio",
    "xfs-sparse-vdisk-randwrite-extsize-hint-seq-read-reflink-prose.txt": "fio",
    "xfs-touch-vs-echo-vs-c-open-unlink-time-for-loops.txt": "command",
    "ext4-dax-fast-commit-bytelog-mount-option-fio-case-table.txt": None,
    "ext4-ext3-xfs-kernbuild-time-f-mkfs-mount-options-cells.txt": "command",
    "ext4-fast-commit-fsmark-xargs-dir-ways-order-table.txt": "fs_mark",
    "ext4-iomap-aio-dio-4k-16k-fio-terse-defer-completion.txt": "fio",
    "ext4-journal-128m-vs-2g-fio-2048-jobs-numbered-steps.txt": "fio",
    "ext4-vs-btrfs-xfs-will-it-scale-vfsmix2-o-trunc-idle.txt": None,
    "ext4-vs-ext3-data-modes-rm-rf-9890-dirs-inode-reservation.txt": None,
    "ext4-vs-ext3-inode-128-256-untar-unlink-elapsed.txt": None,
    "btrfs-compressed-dd-bs-4k-vs-128k-readahead-expand-fsperf.txt": "dd",
    "btrfs-dio-dd-4096m-nodatasum-bounce-vs-buffered-fallback.txt": "dd",
    "btrfs-discard-sync-vs-async-pv-zero-rm-sync-8-minutes.txt": None,
    "btrfs-fsperf-emptyfiles500k-filecreate-clat-p99-nohz-5.16.txt": "fio",
    "btrfs-lkp-fsmark-64-dirs-4m-fsync-quoted-reproduce.txt": "fs_mark",
    "btrfs-nocow-fio-sync1-psync-vs-io-uring-vs-libaio-numbered-steps.txt": "fio",
    "btrfs-tar-xf-firefox-time-sync-hdd-bfq-vs-ssd-zstd1-5.9-vs-5.10.txt": "command",
    "ext4-lkp-fio-dax-2pmem-randread-2m-libaio-two-task-sections.txt": "fio",
    "xfs-lstat-find-mtime-ihashsize.txt": None,
    "btrfs-dio-read-1m-qd1-256-sectors.txt": None,
    "btrfs-send-1g-file-readahead.txt": "command",
    "ext4-sparse-write-prealloc-list-taskset.txt": "command",
    "ext4-unixbench-delalloc-journal-handle.txt": None,
    "ext4-will-it-scale-fallocate2-group-lock.txt": "fio",
    "xfs-dbench-sync-open-over-link-limit.txt": "dbench",
    "xfs-iouring-async-buffered-writes-qd1.txt": None,
    "btrfs-nocow-dio-iouring-3500-block-groups.txt": "fio",
    "btrfs-rm-120g-lzo-file-nullb-csum-reservation.txt": "command",
    "btrfs-seek-hole-16g-lzo-cold-vs-cached.txt": "command",
    "btrfs-send-readahead-file-count-hdd.txt": "command",
    "btrfs-send-utimes-moved-files-count.txt": "command",
    "ext4-bigalloc-nodelalloc-dd-1g.txt": "dd",
    "xfs-2.6.39-dio-randrw-16k-16-threads.txt": "fio",
    "xfs-fragmented-freesp-alloc-ag-vextent-size.txt": None,
    "btrfs-lkp-fio-falloc-new-mount-api.txt": "fio",
    "btrfs-lkp-stress-ng-fallocate-fsync-nlink0.txt": None,
    "btrfs-scrub-nvme-6.4-slowdown.txt": None,
    "ext4-lkp-stress-ng-fiemap-sb-update-interval.txt": None,
    "btrfs-bonnie-fsync-log-leaf-clone-latency.txt": "command",
    "btrfs-lkp-sysbench-fileio-seqrewr-page-copy.txt": "sysbench",
    "ext4-lkp-fio-4k-write-hdd-prefetch-fini.txt": "fio",
    "xfs-lkp-stress-ng-metamix-unwritten-folios.txt": None,
    "btrfs-autodefrag-5.16-idle-writes.txt": None,
    "ext4-dd-fsync-10m-100m-mb-optimize-scan-extents.txt": "dd",
    "ext4-fragmented-65tb-dd-cr01-scan.txt": "dd",
    "ext4-reaim-mb-optimize-scan-clients.txt": None,
    "ext4-dioread-nolock-2048-jobs-fsync.txt": "fio",
    "ext4-fast-commit-fsmark-8-threads.txt": "fs_mark",
    "xfs-ag-writeback-12-job-sections.txt": None,
    "xfs-fsmark-8dir-io-less-throttle.txt": "fs_mark",
    "btrfs-rm-rf-old-vs-fts-rm.txt": "command",
    "ext4-compilebench-delalloc-vs-ext3.txt": None,
    "ext4-umount-after-30g-dd-clean-cache.txt": "dd",
    "xfs-buffered-randwrite-64k-page-filesize.txt": "fio",
    "xfs-dsync-fio-fallocated-vs-overwrite.txt": "fio",
    "xfs-fallocate-pwrite-alternating.txt": "command",
    "xfs-lvm-stripe-randwrite-64jobs-cil-throttle.txt": "fio",
    "xfs-mdraid0-12nvme-seqread-fedora42.txt": "fio",
    "btrfs-fiemap-compressed-40g-filefrag.txt": "command",
    "btrfs-fiemap-holey-file-size.txt": "command",
    "btrfs-fsync-seq-dd-oflag-sync.txt": "dd",
    "btrfs-silesia-compress-force-levels-6.2.txt": "command",
    "btrfs-zstd-extract-compress-force.txt": "command",
    "ext4-dioread-nolock-nodelalloc-dd.txt": "dd",
    "ext4-journal-async-commit-fsmark.txt": "fs_mark",
    "ext4-sysbench-seqwr-file-num.txt": "sysbench",
    "xfs-hot-tracking-ffsb-loopdev.txt": None,
    "xfs-md0-scylla-mkfs-64-shards.txt": None,
    "btrfs-send-after-sparse-overwrites.txt": "dd",
    "btrfs-5.15-inode-eviction-rename-loop.txt": "command",
    "btrfs-dbench-rename-log-commit.txt": "dbench",
    "btrfs-lkp-postmark-nfsv4-ssd-autodetect.txt": None,
    "btrfs-lkp-reaim-1hdd-folio-release.txt": None,
    "xfs-lkp-fsmark-nfsv4-second-superblock.txt": "fs_mark",
    "btrfs-lkp-dbench-nfs-max-latency.txt": "dbench",
    "btrfs-5.0-enospc-flushing.txt": "fio",
    "btrfs-compressed-read-full-pagecache-numa.txt": None,
    "btrfs-lkp-fsmark-4k-fsync-brd.txt": "fs_mark",
    "btrfs-zstd-negative-levels-cp-sync.txt": "command",
    "ext4-buffered-iomap-bs-sweep.txt": "fio",
    "ext4-mdraid5-dbench-stripe-size.txt": "dbench",
    "ext4-stripe-mount-option-flush-cpu.txt": "command",
    "xfs-bigfile-read-slows-after-60s.txt": "dd",
    "xfs-lkp-aim7-disk-cp-raid1.txt": None,
    "btrfs-compressed-read-8k-bs.txt": "dd",
    "btrfs-raid5-4disk-dd-write.txt": "dd",
    "ext4-iodrive-randwrite-numjobs.txt": "fio",
    "ext4-lkp-fsmark-large-folio-4m.txt": "fs_mark",
    "ext4-mb-optimize-scan-sdcard.txt": "dd",
    "xfs-buffered-randrw-32jobs.txt": "fio",
    "xfs-lkp-fio-iouring-read-2m.txt": "fio",
    "xfs-preallocation-randwrite-qcow2.txt": "fio",
    "btrfs-async-buffered-writes.txt": "fio",
    "btrfs-dbench-fsync-commit-wait.txt": "dbench",
    "btrfs-lkp-aim7-block-rsv.txt": None,
    "btrfs-lkp-aim7-md-raid0.txt": None,
    "btrfs-lkp-fsmark-need-preempt.txt": "fs_mark",
    "btrfs-lkp-metadata-writepages.txt": "fio",
    "btrfs-raid0-fio-6.5.txt": "fio",
    "btrfs-sysbench-file-extent-replace.txt": "sysbench",
    "btrfs-unlocked-dio.txt": "fio",
    "ext4-5.10-writeback-iops.txt": "fio",
    "ext4-aio-named-jobfile.txt": None,
    "ext4-cached-write-1728.txt": "dd",
    "ext4-dio-ilock-threads.txt": "fio",
    "ext4-discard-untar-loop.txt": "command",
    "ext4-fsync-storm.txt": "fio",
    "ext4-parallel-dio-reads-revert.txt": "fio",
    "ext4-recently-deleted-mkdir.txt": "command",
    "ext4-truncate-100g-jobfile.txt": "fio",
    "ext4-unaligned-dio-overwrite.txt": "fio",
    "xfs-dbench-cil-workqueue.txt": "dbench",
    "xfs-fsmark-parent-pointers.txt": "fs_mark",
    "xfs-lkp-aim7-deferred-inactivation.txt": None,
    "xfs-lvm-raid0-fio-6.1.txt": "fio",
    "xfs-sysbench-partially-uptodate.txt": "sysbench",
    "ext4-zram-no-journal-dd.txt": "dd",
    "xfs-raid6-fio-fallocate-posix-vs-none.txt": None,
    "btrfs-ebs-raid0-vs-raid1-16m-jobfile.txt": "fio",
    "btrfs-sysbench-seqwr-512-threads-node-splits.txt": "sysbench",
    "xfs-compilebench-agcount1-logbsize-sata.txt": None,
    "xfs-v4-v5-inode-cluster-traversal.txt": None,
    "ext4-fio-seqwrite-bs-8k-vs-16k.txt": "fio",
    "ext4-vs-f2fs-femu-blackbox-ssd-fio.txt": None,
    "ext4-azure-runner-writeback-barrier0-fio-flat.txt": "fio",
    "btrfs-etcd-idle-writes-vs-ext4.txt": None,
    "xfs-fsmark-logbsize-md-raid10.txt": "fs_mark",
    "xfs-dbench-cil-async-cache-flush.txt": "dbench",
    "ext4-fsmark-async-checkpoint-sync-modes.txt": "fs_mark",
    "ext4-fio-4k-dio-fdatasync-fallocated-vs-rewritten.txt": "fio",
    "btrfs-fio-randwrite-4k-posixaio-mount-options.txt": "fio",
    "btrfs-vs-ext4-md-raid0-nvme-fio-seqread-32m.txt": "fio",
    "ext4-lkp-fio-dax-2pmem-overwrite.txt": "fio",
    "btrfs-lkp-filebench-rwritedsync-size-class.txt": None,
    "btrfs-lkp-stress-ng-iomix-eb-writeback.txt": None,
    "xfs-lkp-stress-ng-dir-inodegc-push.txt": None,
    "ext4-lkp-fileio-seqwr-jbd2-ioprio.txt": "sysbench",
    "xfs-lkp-filebench-nfsv4-rwritefsync-mgtime.txt": None,
    "btrfs-dbench-sync-open-max-latency-6.7.txt": "dbench",
    "btrfs-max-inline-3k-files-xfs-io-loop.txt": "command",
    "btrfs-raid1-read-policy-defrag.txt": "fio",
    "ext4-discard-rm-1m-files-dmcrypt.txt": "command",
    "xfs-dsync-extend-vs-overwrite-buffered-loop.txt": "fio",
    "xfs-mdraid5-direct-dd-sunit-swalloc.txt": "dd",
    "btrfs-raid1-round-robin-mirror-read-4.19.txt": "fio",
    "btrfs-snapshot-loop-4k-randwrite-iops-decay.txt": "fio",
    "ext4-fdatasync-4k-overwrite-unwritten-vs-written-extents.txt": "fio",
    "ext4-iversion-mount-4k-seqwrite-libaio-jobfile.txt": "fio",
    "xfs-iouring-vs-sync-buffered-8k-write-qd1.txt": "fio",
    "xfs-vs-ext4-buffered-randrw-8k-psync-iolock.txt": None,
    "xfs-reaim-disk-deferred-inactivation.txt": None,
    "ext4-sqlite-insert-mmtests-5.4-dev.txt": None,
    "xfs-dbench-bfq-megaraid-hw-queues.txt": "dbench",
    "ext4-orphan-file-reaim-creat-clo.txt": None,
    "xfs-fsmark-single-allocation-workqueue-3.4.txt": "fs_mark",
    "ext4-iomap-dio-4k-write-fio-terse-kernels.txt": "fio",
    "btrfs-root-dd-1g-dsync-4.15-vs-5.4.txt": "dd",
    "ext4-cfq-blkio-cgroup-dd-512-dsync.txt": "dd",
    "ext4-lts-readdir-commit-fio-time-while-loop.txt": "fio",
    "ext4-vs-ext3-fio-randwrite-fsync3-32jobs.txt": "fio",
    "xfs-md-raid5-5nvme-fio-1m-write-vs-raw.txt": "fio",
    "ext4-discard-data-writeback-rm-rf-kernel-tree.txt": "command",
    "btrfs-raid0-6ssd-workqueue-max-active-fio.txt": "fio",
    "ext4-lazytime-ftruncate-brd-32-jobdirs.txt": "fio",
    "ext4-lkp-fxmark-no-jnl-dbench-client-empty-reproduce.txt": None,
    "ext4-dax-overwrite-jobfile-numjobs-barchart.txt": "fio",
    "xfs-reflink-always-cow-ramdisk-fio-iops-5-runs.txt": "fio",
    "btrfs-fsmark-nproc-dirs-unlock-parent-early.txt": "fs_mark",
    "xfs-lkp-fio-2pmem-readahead-quoted-reply.txt": "fio",
    "xfs-lkp-fsmark-32dirs-alloc-trylock-xfs-debug.txt": "fs_mark",
    "btrfs-buffered-randwrite-over-ram-perf-trace-writeback.txt": "fio",
    "btrfs-bg-tree-mount-time-ftrace-fallocate-16-subvols.txt": "command",
    "btrfs-sectorsize-4k-vs-64k-pagesize-fio-io-uring-jobfile.txt": "fio",
    "btrfs-vs-ext4-rm-64gib-files-time-for-loop-md-raid0.txt": "command",
    "ext4-data-journal-vs-ordered-fio-optane-rate-iops-latency.txt": "fio",
    "ext4-dioread-nolock-vs-default-fio-jobfiles-threads.txt": "fio",
    "xfs-fallocate-vs-overwrite-dd-direct-dsync-4096-count-bytes.txt": "dd",
    "xfs-realtime-extsize-sweep-truncate-4k-xfs-io-loop.txt": "dd",
    "xfs-vs-ext4-btrfs-will-it-scale-cc-24-compiles-agi-lock.txt": None,
    "btrfs-ext4-xfs-time-p-cp-30000-files-wd-red-hdd.txt": "dd",
    "btrfs-thread-pool-mount-option-iozone-rpi.txt": None,
    "btrfs-vs-ext4-mmap-4k-sync-rewrite-raid1-rust-tool.txt": None,
    "btrfs-vs-xfs-kernel-unpack-build-remove-time-html-table.txt": None,
    "ext4-dd-vs-fio-direct-seqwrite-1m-1024m-loops.txt": "fio",
    "ext4-mdraid10-fio-randread-iops-vs-iostat-testfile-size.txt": "fio",
    "ext4-vs-zfs-mariadb-mythfilldatabase-time-markdown-sysinfo.txt": "command",
    "xfs-ext4-btrfs-git-make-test-hdd-vs-ssd.txt": "command",
    "btrfs-lkp-filebench-randomwrite-mm-stable-kernel-file.txt": None,
    "btrfs-lkp-fxmark-mwum-delayed-refs-reserve.txt": None,
    "btrfs-sync-vs-workqueue-csum-sysfs-nullblk-numjobs-filesize.txt": "fio",
    "ext4-delalloc-reserve-rfc-fio-grid-bigalloc-off-on.txt": "fio",
    "ext4-lkp-aim7-disk-cp-rr-rw-delalloc-append.txt": None,
    "ext4-rralloc-mount-option-fio-three-jobs-markdown.txt": "fio",
    "xfs-lkp-stress-ng-chmod-slash-header-only.txt": None,
    "xfs-mkfs-parent-0-vs-1-fsmark-bash-x-script.txt": "fs_mark",
    "btrfs-dbench-8-vs-16-clients-positional-num-jobs-delayed-inode-logging.txt": "dbench",
    "btrfs-lkp-fsmark-8k-fsync-before-close-4-threads-log-tree-cleanup.txt": "fs_mark",
    "btrfs-raid1-read-policy-pid-vs-latency-fio-three-workloads-wrapped.txt": "fio",
    "btrfs-rename-loop-num-files-sweep-date-ns-before-after-patchset.txt": "dbench",
    "ext4-fstrim-20t-sparse-image-mount-discard-time-quoted-patch-claim.txt": "command",
    "ext4-large-block-size-vs-bigalloc-dd-bio-dio-bs-4k-64k-pipe-tables.txt": None,
    "xfs-fio-overwrite-psync-2-jobs-scsi-use-blk-mq-boot-option-missing-backslash.txt": "fio",
    "xfs-fsmark-4k-16-dirs-backslash-kswapd-watermark-boost-factor.txt": "fs_mark",
    "btrfs-fio-50m-randwrite-fsync-every-write-sata-vs-fusion-tab-table.txt": None,
    "btrfs-iozone-2g-16k-nodatacow-nodatasum-compress-one-vs-two-disks-prose.txt": None,
    "btrfs-lzo-zlib-nocompress-tarball-copy-extract-commit-tables.txt": None,
    "btrfs-sysbench-4k-rndwr-2-files-fsync-csum-log-equals-fenced.txt": "sysbench",
    "btrfs-sysbench-rndwr-1024-fallocated-files-fast-fsync-indented-steps.txt": "sysbench",
    "ext4-dbench-5-clients-barrier-0-vs-1-ssd-flattened-html-tables.txt": "dbench",
    "ext4-sysbench-16k-odirect-rndwr-1-vs-4-threads-sync-vs-async-bullets.txt": None,
    "xfs-sysbench-fileio-raid10-lvm-below-1tb-inode64-aspersa-summary.txt": None,
    "btrfs-block-group-tree-btrfstune-convert-mount-50s-to-5s-network-disk.txt": None,
    "btrfs-vm-image-nodatacow-dd-urandom-4m-fdatasync-82-mbs-flat.txt": "dd",
    "btrfs-vs-ext4-billion-empty-files-rm-rf-find-delete-rsync-del-pipe-table.txt": None,
    "btrfs-vs-ext4-hdd-gocryptfs-encfs-benchmark-bash-write-untar-decimal-comma.txt": None,
    "ext4-btrfs-pgbench-mount-options-writeback-barrier0-nodatacow-tps-list.txt": None,
    "ext4-hdd-copy-million-small-files-parallel-j1-to-j500-inode-sorted-kbps.txt": None,
    "xfs-reflink-fuse-overlayfs-copyup-chown-r-time-v-elapsed.txt": None,
    "xfs-vs-ext4-proxmox-vm-bitcoin-node-sync-9-days-vs-2-days-prose.txt": None,
    "btrfs-fsync-full-sync-flag-heredoc-jobfile-positional-args-numjobs-1-to-64.txt": "fio",
    "btrfs-raid1c3-roundrobin-vs-pid-sysfs-echo-fio-jobfiles-numjobs-1-8.txt": "fio",
    "btrfs-tree-lock-rwsem-dbench-200-fsmark-glob-dirs-time-output-tab-table.txt": "fs_mark",
    "ext4-dio-prealloc-shared-ilock-bare-fio-params-bs-sweep-nested-quotes.txt": None,
    "ext4-es-stats-percpu-counter-single-dash-fio-wrapped-two-versions.txt": "fio",
    "ext4-inode-prealloc-rbtree-nodelalloc-vs-delalloc-box-table-prose-tests.txt": None,
    "ext4-jbd2-checkpoint-cleanup-fsmark-double-spaced-quoted-output-tables.txt": "fs_mark",
    "ext4-mballoc-skip-cr-loops-sysfs-threshold-echo-dd-output-fragmented-md0.txt": None,
}


def _cases() -> list[tuple[str, str]]:
    return [(name, field) for name in sorted(EXPECTED) for field in FIELDS]


@pytest.mark.parametrize(("name", "field"), _cases())
def test_report_essentials(name, field, request):
    if (name, field) in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_GAPS[(name, field)], strict=True))
    found = experiment_of(extract_facts((REPORTS / name).read_text()))
    assert compare(found, EXPECTED[name])[field], (field, getattr(found, field))


@pytest.mark.parametrize("name", sorted(p.name for p in REPORTS.glob("*.txt")))
def test_every_report_gives_a_spec_that_loads_or_says_why_not(name):
    facts = extract_facts((REPORTS / name).read_text())
    kind = SPEC_KIND[name]
    if kind is None:
        with pytest.raises(UsageError) as refused:
            build_spec(facts, source_name=name, host=HOST)
        assert refused.value.exit_code == 2 and name in str(refused.value)
        return
    reproduction = build_spec(facts, source_name=name, host=HOST)
    loaded = validate_spec(tomllib.loads(reproduction.toml))
    assert loaded == reproduction.spec
    assert loaded.workload.kind == kind
    if name in EXPECTED and (name, "tool") not in KNOWN_GAPS:
        assert kind == EXPECTED[name]["tool"]


@pytest.mark.parametrize("name", sorted(n for n, k in SPEC_KIND.items() if k == "command"))
def test_a_reports_command_is_written_switched_off_with_a_question(name):
    facts = extract_facts((REPORTS / name).read_text())
    reproduction = build_spec(facts, source_name=name, host=HOST)
    workload = tomllib.loads(reproduction.toml)["workload"]
    assert workload["allow_commands"] is False
    assert workload["argv"][:2] == ["bash", "-c"]
    asked = [q for q in reproduction.questions if q.item.startswith("command ")]
    assert asked and asked[0].source == facts.tools[0].source
    assert "review" in asked[0].question


def test_every_report_has_its_spec_kind():
    assert sorted(SPEC_KIND) == sorted(p.name for p in REPORTS.glob("*.txt"))


def test_every_expected_report_exists():
    assert all((REPORTS / name).is_file() for name in EXPECTED)


def test_an_elided_fs_mark_directory_list_is_asked_not_read_as_a_path():
    """'-d ...' in a report is an elision, not a directory named '...': the spec says the
    count (and so fs_mark's thread count) is unknown, and uses one."""
    name = "xfs-fsmark-parent-pointers.txt"
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST
    )
    workload = tomllib.loads(reproduction.toml)["workload"]
    assert workload.get("dirs", 1) == 1 and "..." not in str(workload)
    asked = [q.question for q in reproduction.questions if "-d" in q.item]
    assert asked and "elides its directories" in asked[0], asked


@pytest.mark.parametrize(
    ("name", "configs"),
    [
        (
            "xfs-fsmark-parent-pointers.txt",
            [("xfs-parent0", ["-n", "parent=0"], []), ("xfs-parent1", ["-n", "parent=1"], [])],
        ),
        (
            "ext4-discard-untar-loop.txt",
            [("ext4-nodiscard", [], []), ("ext4-discard", [], ["discard"])],
        ),
    ],
)
def test_an_option_the_report_changed_gives_its_configurations(name, configs):
    """A report that changed one mkfs or mount option between its runs is about that
    change: the spec's configurations are the reporter's setup with each value (not the
    filesystem's defaults as a counterpart), and --quick keeps both."""
    reproduction = build_spec(
        extract_facts((REPORTS / name).read_text()), source_name=name, host=HOST
    )
    written = [
        (fs.label, [o for o in fs.mkfs_options if "lazy" not in o and o != "-E"], fs.mount_options)
        for fs in reproduction.spec.filesystems
    ]
    assert written == configs
    quick = tomllib.loads(reproduction.toml)["quick"]["filesystems"]
    assert quick == [label for label, _, _ in configs]


@pytest.mark.parametrize("tool", sorted(STAND_INS))
def test_each_stand_in_offered_for_a_tool_fslab_cannot_run_is_a_workload_that_loads(tool):
    workload = tomllib.loads(f"workload = {{ {STAND_INS[tool]} }}")["workload"]
    spec = {"name": "stand-in", "filesystems": [{"label": "a", "type": "ext4"}]}
    assert validate_spec({**spec, "workload": workload}).workload.kind == "fio"
