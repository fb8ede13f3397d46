"""From spec and sweep values to the commands a point runs (no root needed)."""

from __future__ import annotations

from fslab.measure import plan
from fslab.spec.load import load_spec, validate_spec
from fslab.workload.fio import plan as fio_plan

PASTED = {
    "name": "p",
    "filesystems": [{"label": "a", "type": "ext4"}],
    "workload": {
        "kind": "fio",
        "command_line": "fio --name=x --rw=randwrite --bs=4k --size=4m --runtime=60 "
        "--time_based --max-jobs=2048",
    },
    "sweep": {"numjobs": [1, 4]},
}


def test_a_pasted_runtime_is_the_runtime_collectors_and_timeouts_see():
    spec = validate_spec(PASTED)
    assert plan.runtime_and_ramp_s(spec, {"numjobs": 4}) == (60.0, 0.0)
    assert plan.point_timeout_s(spec, {"numjobs": 4}) >= 60.0 * spec.run.timeout_factor
    short = validate_spec({**PASTED, "run": {"runtime": "5s", "ramp": "2s"}})
    assert plan.runtime_and_ramp_s(short, {"numjobs": 4}) == (5.0, 2.0)


def test_fio_argv_applies_sweep_and_takes_over_max_jobs():
    spec = validate_spec(PASTED)
    argv = plan.workload_plan(spec, {"numjobs": 4}, "/mnt/x").run_argv
    assert argv[0] == "fio" and "--directory=/mnt/x" in argv and "--numjobs=4" in argv
    assert [a for a in argv if a.startswith("--max-jobs")] == ["--max-jobs=2048"]
    assert "--output-format=json+" in argv


def test_layout_runs_separately_only_when_large():
    spec, _ = load_spec("ext4-fsync-storm", quick=True)
    large = plan.workload_plan(spec, {"numjobs": 1024}, "/mnt/x")  # 4 GiB of files
    assert [c.what for c in large.phase("prepare")] == ["fio file layout", "sync"]
    assert list(large.phase("prepare")[0].argv) == [*large.run_argv, "--create_only=1"]
    assert large.phase("prepare")[1].argv == ("sync", "--file-system", "/mnt/x")
    assert not plan.workload_plan(spec, {"numjobs": 1}, "/mnt/x").phase("prepare")  # 4 MiB
    assert fio_plan.layout_argv(["fio", "--name=x"]) == ["fio", "--name=x", "--create_only=1"]


def test_a_file_setup_made_for_the_workload_is_its_space_not_a_shortage(tmp_path):
    """The NOCOW report fallocates file.dat, then fio writes file.dat: the space that file
    holds counts for the workload (without it, ext4 refused the point: 512MiB of files
    against 461MiB free). A file that resolves outside the filesystem counts nothing."""
    (tmp_path / "file.dat").write_bytes(b"x" * 65536)
    (tmp_path.parent / "outside.dat").write_bytes(b"x" * 65536)
    spec = validate_spec(
        {
            **PASTED,
            "workload": {
                "kind": "fio",
                "options": {"name": "t", "rw": "randwrite", "size": "1m", "filename": "file.dat"},
            },
        }
    )
    assert plan.reused_bytes(spec, {}, str(tmp_path)) >= 65536
    (tmp_path / "file.dat").unlink()
    (tmp_path / "file.dat").symlink_to(tmp_path.parent / "outside.dat")
    assert plan.reused_bytes(spec, {}, str(tmp_path)) == 0  # a link out holds nothing here
    no_file = validate_spec(PASTED)
    assert plan.reused_bytes(no_file, {"numjobs": 1}, str(tmp_path)) == 0


def test_fio_gets_smalloc_pools_for_hundreds_of_thousands_of_files():
    """A report's 785988 files ran fio out of its smalloc pools ("smalloc: OOM. Consider
    using --alloc-size"), and every point failed at layout; with 1 KiB per 16 files it lays
    them out (tried by hand on tmpfs: 785988 files in 18 s)."""
    many = {**PASTED, "workload": {"kind": "fio", "options": {"name": "w", "nrfiles": 785988}}}
    argv = plan.workload_plan(validate_spec(many), {}, "/mnt/x").run_argv
    assert [a for a in argv if a.startswith("--alloc-size")] == ["--alloc-size=49125"]
    few = {**PASTED, "workload": {"kind": "fio", "options": {"name": "w", "nrfiles": 64}}}
    argv = plan.workload_plan(validate_spec(few), {"numjobs": 4}, "/mnt/x").run_argv
    assert not [a for a in argv if a.startswith("--alloc-size")]


def test_a_failed_commands_reason_carries_the_tools_own_word(tmp_path):
    """A failed point said only "fio file layout failed"; fio's first line says why."""
    from fslab.base.proc import run
    from fslab.workload.base import Command

    argv = ("fio", "--name=x", "--rw=bogus", f"--directory={tmp_path}", "--size=1m")
    record = run(list(argv), check=False)
    outcome = plan._failed(Command("prepare", argv, "fio file layout"), record)
    assert not outcome.ok
    assert outcome.error.startswith("fio file layout failed: ")
    assert "bogus" in outcome.error
