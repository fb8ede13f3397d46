"""Preflight: options the tools reject are SpecErrors naming the field, before anything exists.

Each check runs the real tool (mkfs on a sparse file, mount on a loop image
over it, fio --parse-only, dd with count=0) and must leave nothing behind.
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import requires_root
from tests.pid_leaks import owned_by
from typer.testing import CliRunner

from fslab import cli
from fslab.base.errors import SpecError
from fslab.run.preflight import check_mkfs, run_preflight
from fslab.spec.load import load_spec, validate_spec
from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

BASE: dict[str, Any] = {
    "name": "pre",
    "target": {"kind": "ram", "size": "1GiB"},
    "filesystems": [
        {"label": "e", "type": "ext4", "mount_options": ["noatime"]},
        {"label": "x", "type": "xfs"},
    ],
    "workload": {"kind": "fio", "options": {"rw": "randwrite", "bs": "16k", "filesize": "4m"}},
    "sweep": {"numjobs": [1, 4]},
}


def spec_with(**changes: Any) -> Any:
    data = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = data
        parts = path.split("__")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[parts[-1]] = value
    return validate_spec(data)


def refusal(spec: Any) -> str:
    with pytest.raises(SpecError) as caught:
        run_preflight(spec)
    assert owned_by([os.getpid()]).empty()
    return str(caught.value)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        (
            {"filesystems__0__mkfs_options": ["-J", "size=bogus"]},
            "filesystems.0.mkfs_options: mkfs.ext4 rejected '-J size=bogus'",
            "journal",
        ),
        (
            {"filesystems__1__mkfs_options": ["-d", "agcount=0"]},
            "filesystems.1.mkfs_options: mkfs.xfs rejected '-d agcount=0'",
            "agcount",
        ),
        (
            {"filesystems__0__mount_options": ["noatime", "bogus"]},
            "filesystems.0.mount_options: the kernel refused to mount ext4 with 'noatime,bogus'",
            "bogus",
        ),
        (
            {"filesystems__1__mount_options": ["logbsize=3k"]},
            "filesystems.1.mount_options",
            "logbufsize",
        ),
        ({"workload__options__rw": "sideways"}, "workload.options: fio rejected it", "rw"),
        ({"sweep__bs": ["16k", "abc"]}, "sweep.bs: fio rejected bs=abc", "bs=abc"),
        ({"sweep__numjobs": [1, 4096]}, "target.size: 4096 job(s) x 4m", "does not fit 'e'"),
        ({"fill__leave_free": "2GiB"}, "fill.leave_free: leaves 2.0GiB free", "nothing would"),
        ({"fill__percent": 99.9}, "target.size", "after the fill (fill.percent)"),
    ],
)
def test_rejections_name_the_field(changes: dict[str, Any], field: str, words: str) -> None:
    message = refusal(spec_with(**changes))
    assert field in message and words in message, message


def test_every_problem_in_one_message() -> None:
    message = refusal(
        spec_with(
            filesystems__0__mkfs_options=["-b", "3"],
            filesystems__1__mount_options=["bogus"],
            sweep__bs=["zz"],
        )
    )
    assert "3 problem(s)" in message
    for field in ("filesystems.0.mkfs_options", "filesystems.1.mount_options", "sweep.bs"):
        assert field in message


def test_dd_operands_are_tried() -> None:
    dd = {"kind": "dd", "bs": "1M", "count": 4}
    spec = spec_with(workload={**dd, "conv": "sideways"}, sweep={})
    assert "workload.conv: dd rejected bs=1M conv=sideways" in refusal(spec)
    spec = spec_with(workload=dd, sweep={"oflag": ["direct", "sideways"]})
    assert "sweep.oflag: dd rejected bs=1M oflag=sideways" in refusal(spec)
    assert run_preflight(spec_with(workload={**dd, "oflag": "direct,dsync"}, sweep={}))


def test_a_good_spec_passes_quickly() -> None:
    for name in ("ext4-fsync-storm", "cached-write-ext4-vs-xfs"):
        spec, _ = load_spec(name)
        start = time.monotonic()
        result = run_preflight(spec)
        seconds = time.monotonic() - start
        assert seconds < 1.0 * len(spec.filesystems) + 1, seconds
        assert set(result.space) == {fs.label for fs in spec.filesystems}
    assert owned_by([os.getpid()]).empty()


def test_mkfs_check_uses_no_loop_device() -> None:
    spec = spec_with(filesystems__0__mkfs_options=["-O", "no_such_feature"])
    (problem,) = check_mkfs(spec)
    assert problem.field == "filesystems.0.mkfs_options"


def test_cli_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        'name = "bad"\n[target]\nsize = "1GiB"\n'
        '[[filesystems]]\nlabel = "e"\ntype = "ext4"\nmount_options = ["data=sideways"]\n'
        '[workload]\nkind = "fio"\noptions = { rw = "write", filesize = "4m" }\n'
    )
    db = tmp_path / "r.db"
    result = CliRunner().invoke(cli.app, ["run", str(spec), "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "filesystems.0.mount_options" in result.output
    assert "Traceback" not in result.output
    with Store(db) as store:
        assert store.campaigns() == []
    assert owned_by([os.getpid()]).empty()


def test_no_preflight_lets_a_failing_mkfs_fail_its_points(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        'name = "bad"\n[target]\nsize = "1GiB"\n'
        '[[filesystems]]\nlabel = "e"\ntype = "ext4"\nmkfs_options = ["-J", "size=bogus"]\n'
        '[workload]\nkind = "fio"\noptions = { rw = "write", filesize = "4m" }\n'
        '[run]\nruntime = "1s"\n'
    )
    db = tmp_path / "r.db"
    args = ["run", str(spec), "--db", str(db), "--no-preflight", "--no-collect", "--budget", "0"]
    args.append("--json")
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        (campaign,) = store.campaigns()
        (warmup, point) = store.points(campaign.id)
        assert campaign.status == "complete"
        assert warmup.role == "warmup" and point.role == "clean"
        for run in (warmup, point):  # the warm-up fails as its configuration does
            assert run.status == "failed"
            assert "mkfs.ext4" in (run.error or "") and "journal" in (run.stderr or "").lower()
    assert owned_by([os.getpid()]).empty()
