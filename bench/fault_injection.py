#!/usr/bin/env python3
"""Fault injection: small real campaigns, one fault each; count leaks and lost results.

Each case runs `fslab run` in a subprocess on a tiny spec (1 GiB RAM target,
1 s runtime, 2 or 4 points, collectors off except in a few cases, which then
also make one evidence run per point) with one fault, chosen at random
(seeded, so a run is reproducible):

- through the FSLAB_FAULTS hooks, at a random life-cycle stage and point:
  SIGINT, SIGTERM or SIGKILL to fslab itself; SIGKILL to fio, mkfs or perf;
  SIGSTOP to fio (a hung fio: the point timeout must end it); a process
  holding a file open on the mount at umount time;
- through the inputs: a mkfs option mkfs rejects (with --no-preflight), a fill
  that runs out of space, a fio that prints garbage, a fio that fails, and a
  mount option the kernel rejects (preflight must refuse it, creating nothing).

After each case: once the fslab process is gone (and, if it was SIGKILLed,
after `fslab doctor --cleanup`), no mount, loop device or image named after
its pid may remain (a lazily unmounted one gets until its holder exits);
`PRAGMA integrity_check` must pass; the campaign must be complete, or be
resumed to completion with every point committed before the fault unchanged
and no point missing or duplicated.

Prints one line per case, then: faults injected, leaks found (goal 0),
results lost (goal 0), and anomalies (an outcome other than the expected one).

Run as root: .venv/bin/python bench/fault_injection.py [--seed 1] [--cases 60]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.base.faults import STAGES
from fslab.target.guard import read_mountinfo
from fslab.target.leftovers import Leftovers, mount_dir_owner_pid
from fslab.target.loop import image_owner_pid, loop_backing_files

RUN_TIMEOUT_S = 300.0
RELEASE_WAIT_S = 20.0  # a lazily unmounted loop device goes when its last holder exits
BUSY_TIMEOUT_S = 5.0  # Mount's wait before a lazy unmount

# hook action -> the stages where it can land
HOOK_ACTIONS: dict[str, tuple[str, ...]] = {
    "sigint-self": STAGES,
    "sigterm-self": STAGES,
    "sigkill-self": STAGES,
    "sigkill-child:fio": ("fill", "collectors_start", "workload"),
    "sigkill-child:mkfs": ("prepare",),
    "stop-child:fio": ("collectors_start", "workload"),
    "busy-mount": ("mount", "fill", "workload", "collectors_stop", "umount"),
}
HOOK_WEIGHTS = {
    "sigint-self": 3,
    "sigterm-self": 3,
    "sigkill-self": 3,
    "sigkill-child:fio": 2,
    "sigkill-child:mkfs": 1,
    "stop-child:fio": 1,
    "busy-mount": 2,
}
INPUT_FAULTS = (
    "bad-mkfs-option",
    "enospc-fill",
    "garbage-fio-output",
    "failing-fio",
    "preflight-reject",
)
BAD_MKFS = {"ext4": ["-J", "size=bogus"], "xfs": ["-b", "size=3000"]}
BAD_MOUNT = {"ext4": ["noatime", "bogus"], "xfs": ["logbsize=3k"]}

FAKE_FIO = """#!{python}
# fslab fault injection: a fio that {what}; the real fio for parsing, layout and --version
import os, sys
args = sys.argv[1:]
if any(a in ("--version", "--parse-only", "--create_only=1") for a in args):
    os.execv({real!r}, [{real!r}, *args])
{body}
"""
FAKE_BODIES = {
    "garbage-fio-output": (
        "prints garbage",
        "print('fio-3.33 segfaulted? {{ \"jobs\": [ <<<garbage>>>'); sys.exit(0)",
    ),
    "failing-fio": (
        "fails",
        "sys.stderr.write('fio: pid=1, err=5/file:io_u.c:1889, func=io_u error, "
        "error=Input/output error\\n'); sys.exit(1)",
    ),
}


@dataclass(frozen=True)
class Case:
    """One campaign with one fault."""

    number: int
    fault: str  # a hook action or an input fault
    stage: str | None = None
    point_seq: int | None = None
    delay_s: float = 0.0
    hold_s: float = 0.0
    configs: tuple[str, ...] = ("ext4",)
    collect: bool = False

    @property
    def hook(self) -> bool:
        return self.fault not in INPUT_FAULTS

    def plan(self) -> dict[str, Any]:
        plan: dict[str, Any] = {"stage": self.stage, "action": self.fault}
        plan |= {"point_seq": self.point_seq, "delay_s": self.delay_s}
        if self.fault == "busy-mount":
            plan["hold_s"] = self.hold_s
        return plan

    def describe(self) -> str:
        if not self.hook:
            return f"{self.fault} ({'+'.join(self.configs)})"
        where = f"{self.fault}@{self.stage}#{self.point_seq}"
        if self.delay_s:
            where += f"+{self.delay_s:.2f}s"
        if self.fault == "busy-mount":
            where += f" hold {self.hold_s:.1f}s"
        return where + (" collect" if self.collect else "")


@dataclass
class CaseResult:
    case: Case
    returncode: int | None = None
    fired: bool = False
    fault_detail: str = ""
    campaign_id: int | None = None
    status_after_fault: str = ""
    resumed: bool = False
    final_status: str = ""
    leaks: list[str] = field(default_factory=list)
    released_by_doctor: int = 0
    integrity_ok: bool = True
    lost: list[str] = field(default_factory=list)
    failed_points: int = 0
    lazy_umounts: int = 0
    anomalies: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def injected(self) -> bool:
        return self.fired or not self.case.hook


# ------------------------------------------------------------------ plans


def make_cases(seed: int, count: int, *, perf: bool) -> list[Case]:
    """`count` cases drawn with random.Random(seed): the same seed, the same cases."""
    rng = random.Random(seed)
    stages = dict(HOOK_ACTIONS)
    weight = dict(HOOK_WEIGHTS)
    if perf:  # perf runs only with collectors on
        stages["sigkill-child:perf"] = ("collectors_start", "workload")
        weight["sigkill-child:perf"] = 1
    actions = list(weight)
    weights = [weight[a] for a in actions]
    cases = []
    inputs = 0
    for number in range(count):
        configs = rng.choice([("ext4",), ("xfs",), ("ext4", "xfs")])
        if rng.random() < 0.25:  # the input faults in turn, so each one is covered
            cases.append(Case(number, INPUT_FAULTS[inputs % len(INPUT_FAULTS)], configs=configs))
            inputs += 1
            continue
        action = rng.choices(actions, weights)[0]
        stage = rng.choice(stages[action])
        delay = 0.0
        if stage == "workload" or action.startswith(("sigkill-child:fio", "stop-child")):
            delay = round(rng.uniform(0.05, 0.9), 2)  # land inside the 1 s workload
        elif action.endswith("-self") and rng.random() < 0.3:
            delay = round(rng.uniform(0.0, 0.3), 2)  # land inside the stage that follows
        points = 2 * len(configs)
        seq = rng.randrange(points)
        hold_s = round(rng.uniform(1.0, 7.0), 1)
        collect = action == "sigkill-child:perf" or rng.random() < 0.1
        if action == "sigkill-child:perf":  # perf runs only in the evidence runs, the 2nd pass
            seq += points
        cases.append(
            Case(
                number,
                action,
                stage=stage,
                point_seq=seq,
                delay_s=delay,
                hold_s=hold_s,
                configs=configs,
                collect=collect,
            )
        )
    return cases


def spec_text(case: Case) -> str:
    """A tiny campaign: 1 GiB RAM image, numjobs 1 and 2, 1 s per point."""
    lines = [f'name = "faults-{case.number}"', '[target]\nkind = "ram"\nsize = "1GiB"']
    for label in case.configs:
        mkfs = (
            BAD_MKFS[label] if case.fault == "bad-mkfs-option" and label == case.configs[0] else []
        )
        mount = BAD_MOUNT[label] if case.fault == "preflight-reject" else []
        lines.append(
            f'[[filesystems]]\nlabel = "{label}"\ntype = "{label}"\n'
            f"mkfs_options = {json.dumps(mkfs)}\nmount_options = {json.dumps(mount)}"
        )
    lines.append(
        '[workload]\nkind = "fio"\noptions = { rw = "randwrite", ioengine = "sync", '
        'bs = "16k", filesize = "4m", fsync = 1, thread = true, group_reporting = true }'
    )
    lines.append("[sweep]\nnumjobs = [1, 2]")
    if case.fault == "enospc-fill":
        lines.append('[fill]\nleave_free = "0"')
    lines.append('[run]\nruntime = "1s"\ntimeout_factor = 1.5\nsetup_timeout = "4s"')
    if case.collect:
        lines.append("[collect]\nperf_freq_hz = 99")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ what is left


def owned_by(pid: int) -> Leftovers:
    """Mounts, loop devices, images and mount point dirs named after this fslab pid."""
    found = Leftovers()
    for entry in read_mountinfo():
        if entry.mount_point.startswith("/run/fslab/") and (
            mount_dir_owner_pid(entry.mount_point) == pid
        ):
            found.mounts.append(entry.mount_point)
    for device, backing in loop_backing_files().items():
        if image_owner_pid(backing) == pid:
            found.loop_devices.append(device)
    for path in Path("/dev/shm").iterdir():
        if image_owner_pid(path.name) == pid:
            found.images.append(str(path))
    base = Path("/run/fslab")
    if base.is_dir():
        for path in base.iterdir():
            if mount_dir_owner_pid(path.name) == pid and str(path) not in found.mounts:
                found.images.append(str(path))
    return found


def wait_released(pid: int, timeout_s: float) -> Leftovers:
    deadline = time.monotonic() + timeout_s
    while True:
        left = owned_by(pid)
        if left.empty() or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def describe_leftovers(left: Leftovers) -> list[str]:
    return [*left.mounts, *left.loop_devices, *left.images]


# ------------------------------------------------------------------ the database


def snapshot(db: Path, campaign_id: int) -> dict[int, tuple[Any, ...]]:
    """seq -> (status, error, started, ended, metrics) of every point, read-only."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        rows = conn.execute(
            "SELECT id, seq, status, error, started_at, ended_at FROM points WHERE campaign_id=?",
            (campaign_id,),
        ).fetchall()
        seqs = [row[1] for row in rows]
        if len(seqs) != len(set(seqs)):
            raise AssertionError(f"campaign {campaign_id}: duplicated seq in {seqs}")
        result = {}
        for point_id, seq, status, error, started, ended in rows:
            metrics = conn.execute(
                "SELECT name, value FROM metrics WHERE point_id=? ORDER BY name", (point_id,)
            ).fetchall()
            result[seq] = (status, error, started, ended, tuple(metrics))
    return result


def campaign_ids(db: Path) -> list[int]:
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT id FROM campaigns ORDER BY id")]
        except sqlite3.OperationalError:
            return []


def campaign_status(db: Path, campaign_id: int) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        row = conn.execute("SELECT status FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
    return str(row[0])


def integrity_ok(db: Path) -> bool:
    if not db.exists():
        return True
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# ------------------------------------------------------------------ one case


def fslab_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "fslab", *args]


def fake_fio_dir(workdir: Path, fault: str) -> Path:
    directory = workdir / f"fake-{fault}"
    directory.mkdir(exist_ok=True)
    what, body = FAKE_BODIES[fault]
    real = shutil.which("fio") or "/usr/bin/fio"
    script = FAKE_FIO.format(python=sys.executable, what=what, real=real, body=body)
    path = directory / "fio"
    path.write_text(script)
    path.chmod(0o755)
    return directory


def run_case(case: Case, workdir: Path, db: Path) -> CaseResult:
    """Run one faulty campaign, release what a SIGKILL left, resume, and check."""
    result = CaseResult(case)
    start = time.monotonic()
    spec = workdir / f"case-{case.number}.toml"
    spec.write_text(spec_text(case))
    fault_log = workdir / f"case-{case.number}.faults.jsonl"
    env = dict(os.environ)
    args = ["run", str(spec), "--db", str(db)]
    if not case.collect:
        args.append("--no-collect")
    if case.hook:
        env["FSLAB_FAULTS"] = json.dumps(case.plan())
        env["FSLAB_FAULTS_LOG"] = str(fault_log)
    elif case.fault in ("bad-mkfs-option", "enospc-fill"):
        args.append("--no-preflight")  # the fault must reach the runner
    elif case.fault in FAKE_BODIES:
        env["PATH"] = f"{fake_fio_dir(workdir, case.fault)}:{env.get('PATH', '')}"
    before = set(campaign_ids(db))
    proc = subprocess.Popen(
        fslab_argv(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        result.anomalies.append(f"fslab run did not end within {RUN_TIMEOUT_S:.0f} s")
    result.returncode = proc.returncode
    if fault_log.exists():
        records = [json.loads(line) for line in fault_log.read_text().splitlines() if line]
        result.fired = any(r["fired"] for r in records)
        result.fault_detail = "; ".join(r["detail"] for r in records)
    if proc.returncode == -9:  # SIGKILLed: only `doctor --cleanup` can release its leftovers
        left = owned_by(proc.pid)
        result.released_by_doctor = len(describe_leftovers(left))
        wait_s = case.hold_s + 2 if case.fault == "busy-mount" else 2.0
        time.sleep(min(wait_s, 3.0))  # fio, in its own session, outlives fslab by its runtime
        subprocess.run(fslab_argv("doctor", "--cleanup"), capture_output=True, check=False)
    result.leaks = describe_leftovers(wait_released(proc.pid, RELEASE_WAIT_S + case.hold_s))
    if result.leaks:  # release them anyway, so the next case starts clean
        subprocess.run(fslab_argv("doctor", "--cleanup"), capture_output=True, check=False)
    result.integrity_ok = integrity_ok(db)
    created = sorted(set(campaign_ids(db)) - before)
    if len(created) > 1:
        result.anomalies.append(f"{len(created)} campaigns created")
    if created:
        result.campaign_id = created[0]
        _finish_campaign(result, db, env)
    check_expectations(result, stderr)
    result.seconds = time.monotonic() - start
    return result


def _finish_campaign(result: CaseResult, db: Path, env: dict[str, str]) -> None:
    """Resume an unfinished campaign; every committed point must survive unchanged."""
    campaign_id = result.campaign_id
    assert campaign_id is not None
    result.status_after_fault = campaign_status(db, campaign_id)
    before = snapshot(db, campaign_id)
    committed = {seq: row for seq, row in before.items() if row[0] != "pending"}
    if result.status_after_fault != "complete":
        clean_env = {k: v for k, v in env.items() if not k.startswith("FSLAB_FAULTS")}
        args = ["run", "--resume", str(campaign_id), "--db", str(db)]  # its own --collect
        resume = subprocess.Popen(
            fslab_argv(*args),
            env=clean_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, stderr = resume.communicate(timeout=RUN_TIMEOUT_S)
        result.resumed = True
        if resume.returncode != 0:
            result.anomalies.append(f"resume exited {resume.returncode}: {stderr[-300:]}")
        result.leaks += describe_leftovers(wait_released(resume.pid, RELEASE_WAIT_S))
    result.final_status = campaign_status(db, campaign_id)
    after = snapshot(db, campaign_id)
    planned = set(range(len(before)))
    if set(after) != planned:
        result.lost.append(f"points {sorted(planned - set(after))} missing")
    for seq, row in committed.items():
        if after.get(seq) != row:
            result.lost.append(f"point {seq} changed after resume")
    pending = [seq for seq, row in after.items() if row[0] == "pending"]
    if pending:
        result.lost.append(f"points {pending} never ran")
    for seq, row in after.items():
        if row[0] == "ok" and not row[4]:
            result.lost.append(f"point {seq} ok without metrics")
    result.failed_points = sum(row[0] == "failed" for row in after.values())
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        row = conn.execute(
            "SELECT count(*) FROM points WHERE campaign_id=? AND facts_json LIKE '%\"umount\"%'",
            (campaign_id,),
        ).fetchone()
    result.lazy_umounts = int(row[0])


def check_expectations(result: CaseResult, stderr: str) -> None:
    """The outcome each fault should have; anything else is an anomaly."""
    case, rc = result.case, result.returncode
    tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
    if case.fault == "preflight-reject":
        if rc != 2 or result.campaign_id is not None:
            result.anomalies.append(f"preflight let a bad mount option through (exit {rc})")
        return
    if case.hook and not result.fired:
        if rc != 0:
            result.anomalies.append(f"exit {rc} although the fault never fired: {tail}")
        return
    expected_rc = {"sigint-self": 130, "sigterm-self": 130, "sigkill-self": -9}.get(case.fault, 0)
    if rc != expected_rc:
        result.anomalies.append(f"exit {rc}, expected {expected_rc}: {tail}")
    if result.final_status != "complete":
        result.anomalies.append(f"campaign ends {result.final_status or 'missing'}")
    must_fail = case.fault in ("sigkill-child:fio", "stop-child:fio", *INPUT_FAULTS)
    if must_fail and not result.failed_points:
        result.anomalies.append("no failed point recorded")
    held_past_timeout = case.stage == "umount" and case.hold_s > BUSY_TIMEOUT_S + 1
    if case.fault == "busy-mount" and held_past_timeout and not result.lazy_umounts:
        result.anomalies.append("a mount held past the busy timeout was not recorded as lazy")


# ------------------------------------------------------------------ the run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    options = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: fault injection makes loop devices and mounts", file=sys.stderr)
        return 2
    cases = make_cases(options.seed, options.cases, perf=shutil.which("perf") is not None)
    workdir = Path(tempfile.mkdtemp(prefix="fslab-faults-"))
    db = workdir / "results.db"
    print(f"fault injection: seed {options.seed}, {len(cases)} cases, work dir {workdir}")
    results = []
    start = time.monotonic()
    for case in cases:
        result = run_case(case, workdir, db)
        results.append(result)
        print(format_result(result), flush=True)
    summary = summarize(results, time.monotonic() - start)
    print(summary)
    if not options.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    bad = any(r.leaks or r.lost or not r.integrity_ok for r in results)
    return 1 if bad else 0


def format_result(result: CaseResult) -> str:
    case = result.case
    fired = "fired" if result.fired else ("input" if not case.hook else "missed")
    status = result.final_status or "-"
    if result.resumed:
        status = f"{result.status_after_fault}->resumed->{result.final_status}"
    notes = []
    if result.released_by_doctor:
        notes.append(f"doctor released {result.released_by_doctor}")
    if result.leaks:
        notes.append(f"LEAKS {result.leaks}")
    if result.lost:
        notes.append(f"LOST {result.lost}")
    if not result.integrity_ok:
        notes.append("INTEGRITY CHECK FAILED")
    notes += [f"anomaly: {a}" for a in result.anomalies]
    return (
        f"{case.number:3d} {case.describe():45s} {fired:6s} exit {result.returncode!s:4s} "
        f"{status:35s} {result.seconds:5.1f}s {'; '.join(notes)}"
    )


def summarize(results: list[CaseResult], seconds: float) -> str:
    hooks = [r for r in results if r.case.hook]
    fired = [r for r in hooks if r.fired]
    inputs = [r for r in results if not r.case.hook]
    leaks = sum(len(r.leaks) for r in results)
    lost = sum(len(r.lost) for r in results)
    broken = sum(not r.integrity_ok for r in results)
    anomalies = sum(len(r.anomalies) for r in results)
    resumed = sum(r.resumed for r in results)
    by_kind: dict[str, int] = {}
    for r in results:
        if r.injected:
            by_kind[r.case.fault] = by_kind.get(r.case.fault, 0) + 1
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items()))
    return "\n".join(
        [
            "",
            f"faults injected: {len(fired) + len(inputs)} "
            f"({len(fired)} of {len(hooks)} hook faults fired, {len(inputs)} input faults)",
            f"  by kind: {kinds}",
            f"campaigns resumed: {resumed}",
            f"leaks found: {leaks}",
            f"results lost: {lost}",
            f"integrity check failures: {broken}",
            f"anomalies: {anomalies}",
            f"wall time: {seconds:.0f} s",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
