"""Which fio options fslab lets act on this machine: an allowlist, kept as data.

A report's text is written by strangers and fslab runs fio as root, so an
option passes from a report only if it is known to act inside the job's own
files on the scratch filesystem (`SAFE`, with a few options judged by their
value). Everything else is a finding with a reason: it runs a program, reads
or writes paths of the reporter's machine, changes the host, or is unknown to
fslab. `fslab reproduce` drops every finding and asks about it; a spec (the
user's own) runs the ones that act outside the scratch filesystem only with
`[workload] allow_commands = true` (docs/security.md).

tests/data/fio_options/ holds fio's own option lists; tests check that every
option fio names is classified here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Concern = Literal["runs", "paths", "host", "output", "unknown"]
"""Why an option is not simply passed: it runs a program, touches paths outside
the scratch filesystem, changes the host, only shapes fio's output, or fslab
does not know it."""

NEEDS_OPT_IN: frozenset[Concern] = frozenset({"runs", "paths", "unknown"})
"""Concerns a spec may only have with `[workload] allow_commands = true`."""

# fio's aliases (fio --cmdhelp=NAME says 'alias:'), so each rule is written once.
ALIASES: Mapping[str, str] = {
    "readwrite": "rw",
    "blocksize": "bs",
    "blockalign": "ba",
    "blocksize_range": "bsrange",
    "blocksize_unaligned": "bs_unaligned",
    "iodepth_batch_submit": "iodepth_batch",
    "iodepth_batch_complete": "iodepth_batch_complete_min",
    "io_limit": "io_size",
    "fill_fs": "fill_device",
    "fileoffset": "offset",
    "nr_files": "nrfiles",
    "timeout": "runtime",
    "iomem": "mem",
    "ratemin": "rate_min",
    "ratecycle": "rate_cycle",
    "wait_for_previous": "stonewall",
    "disable_bw": "disable_bw_measurement",
    "ss": "steadystate",
    "ss_dur": "steadystate_duration",
    "ss_ramp": "steadystate_ramp_time",
    "iomem_align": "mem_align",
    "odirect": "direct",
}


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SAFE: frozenset[str] = _names(
    """
    name description wait_for rw rw_sequencer bs ba bsrange bssplit bs_unaligned
    bs_is_seq_rand randrepeat randseed norandommap softrandommap ignore_error ioengine iodepth
    iodepth_batch iodepth_batch_complete_min iodepth_batch_complete_max iodepth_low
    serialize_overlap io_submit_mode size io_size fill_device filesize file_append offset
    offset_increment offset_align number_ios random_generator random_distribution
    percentage_random allrandrepeat nrfiles file_service_type openfiles fallocate
    fadvise_hint fsync fdatasync write_barrier sync_file_range direct atomic buffered
    overwrite loops numjobs startdelay runtime time_based verify_only ramp_time clocksource
    mem mem_align verify do_verify verify_interval verify_offset verify_pattern verify_fatal
    verify_dump verify_async verify_backlog verify_backlog_batch experimental_verify
    trim_percentage trim_verify_zero trim_backlog trim_backlog_batch zonemode zonesize
    zonecapacity zonerange zoneskip read_beyond_wp max_open_zones job_max_open_zones
    ignore_zone_limits zone_reset_threshold zone_reset_frequency rwmixread rwmixwrite
    thinktime thinktime_spin thinktime_blocks thinktime_blocks_type thinktime_iotime rate
    rate_min rate_process rate_cycle rate_ignore_thinktime rate_iops rate_iops_min max_latency
    latency_target latency_window latency_percentile latency_run invalidate sync write_hint
    create_serialize create_fsync create_on_open create_only allow_file_create pre_read
    cpus_allowed_policy end_fsync fsync_on_close unlink unlink_each_loop exitall exit_what
    exitall_on_error stonewall new_group thread block_error_percentiles group_reporting stats
    zero_buffers refill_buffers scramble_buffers buffer_pattern buffer_compress_percentage
    buffer_compress_chunk dedupe_percentage dedupe_mode dedupe_working_set_percentage
    dedupe_global clat_percentiles lat_percentiles slat_percentiles percentile_list
    disk_util gtod_reduce disable_lat disable_clat disable_slat disable_bw_measurement
    unified_rw_reporting continue_on_error error_dump kb_base unit_base flow_id flow
    flow_sleep steadystate steadystate_duration steadystate_ramp_time lockfile filename
    filename_format readonly alloc_size warnings_fatal max_jobs
    hipri hipri_percentage fixedbufs registerfiles sqthread_poll nonvectored uncached nowait
    force_async userspace_reap thp stat_type cpuload cpumode cpuchunks exit_on_io_done
    """
)
"""Options that act only inside the job's own files and fio's own process."""

SAFE_ENGINES: frozenset[str] = _names(
    """
    sync psync vsync pvsync pvsync2 libaio io_uring posixaio mmap splice null cpuio falloc
    ftruncate filecreate filestat filedelete dircreate dirstat dirdelete
    """
)
"""I/O engines that do their I/O on the job's files (no device, network or program)."""

RUNS: Mapping[str, str] = {
    "exec_prerun": "it runs a program before the job",
    "exec_postrun": "it runs a program after the job",
    "trigger": "it runs a command when the trigger fires",
    "trigger_remote": "it runs a command on fio servers when the trigger fires",
    "program": "it names the program the exec engine runs",
    "arguments": "it gives the arguments of the program the exec engine runs",
    "grace_time": "it only applies to the exec engine, which runs a program",
    "std_redirect": "it only applies to the exec engine, which runs a program",
    "trigger_timeout": "it fires the trigger command at a time",
    "server": "it starts a fio server that runs jobs sent over the network",
    "daemonize": "it starts a fio server in the background and writes its pid file",
    "client": "it runs the job on another machine",
}

PATHS: Mapping[str, str] = {
    "write_iolog": "it writes an I/O log to a path of its own",
    "read_iolog": "it replays an I/O log read from a path of the reporter's machine",
    "read_iolog_chunked": "it only applies to replaying an I/O log from a path",
    "replay_redirect": "it sends replayed I/O to a device it names",
    "replay_no_stall": "it only applies to replaying an I/O log from a path",
    "replay_scale": "it only applies to replaying an I/O log from a path",
    "replay_align": "it only applies to replaying an I/O log from a path",
    "replay_time_scale": "it only applies to replaying an I/O log from a path",
    "replay_skip": "it only applies to replaying an I/O log from a path",
    "merge_blktrace_file": "it writes a merged blktrace to a path of its own",
    "merge_blktrace_scalars": "it only applies to merging blktraces from paths",
    "merge_blktrace_iters": "it only applies to merging blktraces from paths",
    "write_bw_log": "it writes a log file outside the scratch filesystem",
    "write_lat_log": "it writes a log file outside the scratch filesystem",
    "write_iops_log": "it writes a log file outside the scratch filesystem",
    "write_hist_log": "it writes a log file outside the scratch filesystem",
    "bandwidth_log": "it writes log files outside the scratch filesystem",
    "verify_state_save": "it writes a state file outside the scratch filesystem",
    "verify_state_load": "it reads a state file from a path of the reporter's machine",
    "aux_path": "it names a directory for fio's state files",
    "trigger_file": "it watches (and deletes) a file outside the scratch filesystem",
    "opendir": "it adds every file under another directory",
    "include": "it reads another job file from a path",
    "cgroup": "it creates a cgroup in the host's cgroup filesystem",
    "cgroup_weight": "it only applies with cgroup=, which writes the host's cgroup filesystem",
    "cgroup_nodelete": "it leaves a cgroup behind in the host's cgroup filesystem",
    "allow_mounted_write": "it lets fio write to a mounted device",
    "profile": "fio's built-in profiles write to devices they are given",
    "donorname": "the e4defrag engine's donor file is a path",
    "unique_filename": "it only applies to fio clients writing to shared paths",
    "cmd_type": "it only applies to io_uring passthrough commands to a device",
    "remote_config": "it makes a fio server read a job file from a path",
    "inflate_log": "it reads a compressed log from a path",
    "merge_blktrace_only": "it merges blktraces from paths instead of running a job",
}

HOST: Mapping[str, str] = {
    "cpus_allowed": "it pins the job to CPUs of the reporter's machine",
    "cpumask": "it pins the job to CPUs of the reporter's machine",
    "numa_cpu_nodes": "it binds the job to NUMA nodes of the reporter's machine",
    "numa_mem_policy": "it binds memory to NUMA nodes of the reporter's machine",
    "prio": "it sets an I/O priority this machine's scheduler may ignore",
    "prioclass": "it sets an I/O priority class this machine's scheduler may ignore",
    "cmdprio": "it sets per-command I/O priorities this device may not support",
    "cmdprio_class": "it sets per-command I/O priorities this device may not support",
    "cmdprio_percentage": "it sets per-command I/O priorities this device may not support",
    "cmdprio_bssplit": "it sets per-command I/O priorities this device may not support",
    "nice": "it changes the job's CPU priority against the rest of the host",
    "uid": "it runs the job as another user of the reporter's machine",
    "gid": "it runs the job as another group of the reporter's machine",
    "lockmem": "it locks host memory away from the page cache",
    "hugepage-size": "it depends on the reporter's huge page set-up",
    "gtod_cpu": "it dedicates a CPU of the reporter's machine to timing",
    "sqthread_poll_cpu": "it pins io_uring's polling thread to a CPU of the reporter's machine",
    "log_compression_cpus": "it pins log compression to CPUs of the reporter's machine",
    "ioscheduler": "it changes the scratch device's I/O scheduler",
    "idle_prof": "it runs CPU-burning threads to measure idleness",
}

OUTPUT: Mapping[str, str] = {
    name: "it only changes fio's logs or progress output; fslab reads fio's json+ report"
    for name in _names(
        """
    per_job_logs bwavgtime iopsavgtime log_entries log_avg_msec log_hist_msec
    log_hist_coarseness log_max_value log_offset log_prio log_compression log_store_compressed
    log_unix_epoch log_alternate_epoch log_alternate_epoch_clock_id significant_figures
    eta eta_newline eta_interval status_interval minimal append_terse terse_version debug
    latency_log section
    """
    )
} | {
    **dict.fromkeys(
        _names("parse_only showcmd version help cmdhelp enghelp crctest cpuclock_test"),
        "fio runs no job with it; fslab runs the job",
    ),
    "directory": "fslab sets it itself (the scratch filesystem's mount point)",
    "output": "fslab sets it itself (its own capture of fio's report)",
    "output_format": "fslab sets it itself (json+)",
}

_SHELL_PATTERN_RE = re.compile(r"['\"]")


@dataclass(frozen=True)
class Finding:
    """An option that does not simply pass, and why."""

    option: str  # as written
    value: str | None
    concern: Concern
    reason: str

    @property
    def shown(self) -> str:
        return f"--{self.option}" if self.value is None else f"--{self.option}={self.value}"


def rule_name(option: str) -> str:
    """The name this table knows an option by: fio's own spelling, aliases resolved."""
    key = option.lower().replace("-", "_")
    if key == "hugepage_size":
        return "hugepage-size"
    return ALIASES.get(key, key)


def completed_name(option: str) -> str | None:
    """The option a command line's abbreviation names: fio's getopt takes an unambiguous
    prefix of a long option (`--time_base` is `--time_based`); None when it names none or
    several, or is a whole name already."""
    key = rule_name(option)
    names = {*SAFE, *RUNS, *PATHS, *HOST, *OUTPUT, *ALIASES}
    if key in names:
        return None
    found = {rule_name(name) for name in names if name.startswith(key)}
    return found.pop() if len(found) == 1 else None


def judge(option: str, value: str | None) -> Finding | None:
    """None if the option acts only inside the job's files; else why not."""
    key = rule_name(option)
    if key == "ioengine":
        return _engine_finding(option, value)
    if key == "mem" and value is not None and ":" in value:
        return Finding(option, value, "paths", "it backs fio's buffers with a file it names")
    if key in ("buffer_pattern", "verify_pattern") and value and _SHELL_PATTERN_RE.search(value):
        return Finding(option, value, "paths", "a quoted pattern is read from a file it names")
    if key in SAFE:
        return None
    for concern, table in (("runs", RUNS), ("paths", PATHS), ("host", HOST), ("output", OUTPUT)):
        if key in table:
            return Finding(option, value, concern, table[key])  # type: ignore[arg-type]
    return Finding(
        option,
        value,
        "unknown",
        "fslab does not know it to act only inside the job's files on the scratch filesystem",
    )


def _engine_finding(option: str, value: str | None) -> Finding | None:
    engine = (value or "").strip()
    if engine in SAFE_ENGINES:
        return None
    if engine == "exec":
        return Finding(option, value, "runs", "the exec engine runs a program")
    if engine.startswith("external") or "/" in engine or engine.endswith(".so"):
        return Finding(option, value, "runs", "it loads an engine from a shared object file")
    return Finding(
        option,
        value,
        "unknown",
        "this engine does its I/O outside the job's files (a device, the network or "
        "another program), or fslab does not know it",
    )


def findings(options: Mapping[str, str | None]) -> list[Finding]:
    """Every option of a job that does not simply pass, in order."""
    found = (judge(name, value) for name, value in options.items())
    return [f for f in found if f is not None]


def needs_opt_in(found: list[Finding]) -> list[Finding]:
    """The findings a spec may only run with `[workload] allow_commands = true`."""
    return [f for f in found if f.concern in NEEDS_OPT_IN]
