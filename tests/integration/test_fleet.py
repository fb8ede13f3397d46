"""`fslab fleet run` for real: the shipped playbook through ansible-playbook.

The hosts are all this machine (ansible_connection=local, no traffic beyond
it), each a separate fslab home: alpha uses this checkout's fslab, beta gets
fslab installed by the playbook into its own venv (a separate installation in
another directory), and three are broken on purpose: gamma cannot be reached
(ssh to a closed port on 127.0.0.1), delta lacks fio (its PATH has every tool
but fio), epsilon cannot reach the shared store (so its campaign is fetched
back and imported). beta is interrupted (SIGINT, fslab's own Ctrl-C path) at
its second point on the first run; the second run resumes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests import cli
from tests.conftest import requires_root
from tests.tiny_spec import tiny_spec

from fslab.store.db import Store

pytestmark = [requires_root, pytest.mark.root]

SPEC = tiny_spec("fleet-tiny")

FSLAB = str(Path(sys.executable).parent / "fslab")


def _path_without_fio(root: Path) -> str:
    """A PATH of symlinks to every tool this machine has, except fio."""
    farm = root / "bin-without-fio"
    farm.mkdir()
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"):
        for tool in Path(directory).iterdir() if Path(directory).is_dir() else []:
            target = farm / tool.name
            if tool.name != "fio" and not target.exists():
                target.symlink_to(tool)
    return str(farm)


def _inventory(tmp_path: Path, *, beta_fault: bool, broken: bool) -> Path:
    """A YAML inventory (written as JSON, which YAML reads) of this machine's hosts."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}

    def home(name: str, **more: object) -> dict[str, object]:
        return {**local, "fslab_home": str(tmp_path / name), **more}

    hosts: dict[str, dict[str, object]] = {
        "alpha": home("alpha", fslab_command=FSLAB, fslab_install_debs=False),
        "beta": home("beta"),  # fslab and its Debian packages installed by the playbook
        "epsilon": home(
            "epsilon",
            fslab_command=FSLAB,
            fslab_install_debs=False,
            fslab_db="postgresql://fslab:x@127.0.0.1:1/none",
        ),
    }
    if beta_fault:
        plan = {"stage": "workload", "action": "sigint-self", "point_seq": 1, "delay_s": 0.3}
        hosts["beta"]["fslab_environment"] = {"FSLAB_FAULTS": json.dumps(plan)}
    if broken:
        hosts["gamma"] = {
            "ansible_host": "127.0.0.1",
            "ansible_port": 1,
            "ansible_user": "nobody",
            "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes",
        }
        hosts["delta"] = home(
            "delta",
            fslab_command=FSLAB,
            fslab_install_debs=False,
            fslab_path=_path_without_fio(tmp_path),
        )
    path = tmp_path / f"inventory-{int(beta_fault)}{int(broken)}.yml"
    path.write_text(json.dumps({"all": {"hosts": hosts}}, indent=2))
    return path


def fslab(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli.run(
        [FSLAB, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def test_a_fleet_run_lands_every_host_in_one_store_and_resumes(tmp_path, pg_cluster):
    db = pg_cluster.create_database(f"fleet_{os.getpid()}")
    spec = tmp_path / "fleet-tiny.toml"
    spec.write_text(SPEC)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "controller"), "FSLAB_DB": db}

    first = fslab(
        "fleet", "run", str(_inventory(tmp_path, beta_fault=True, broken=True)), str(spec), env=env
    )
    report = first.stdout
    assert first.returncode == 1, first.stderr[-3000:]
    print(report)
    assert "alpha: done" in report
    assert "epsilon: done (fetched back, imported as campaign" in report
    # each broken host is named, with what to do about it
    assert "gamma: unreachable" in report and "ansible -i INVENTORY HOST -m ping" in report
    assert "delta: failed at 'what this host lacks'" in report
    assert "fio: not found (fix: apt-get install fio)" in report
    assert "beta: failed at 'run the campaign'" in report
    with Store(db) as store:
        by_host = {c.hostname: c for c in store.campaigns()}
        assert set(by_host) == {"alpha", "beta", "epsilon"}
        assert by_host["alpha"].status == "complete"
        assert by_host["beta"].status == "interrupted"
        beta_points = {p.seq: p.status for p in store.points(by_host["beta"].id)}
        assert beta_points[0] == "ok" and beta_points[1] == "pending"

    status = fslab("fleet", "status", env=env)
    assert status.returncode == 0, status.stderr
    assert "beta: failed at 'run the campaign'" in status.stdout
    progress = f"campaign {by_host['beta'].id} interrupted, 1/{len(beta_points)} points"
    assert progress in status.stdout

    second = fslab(
        "fleet",
        "run",
        str(_inventory(tmp_path, beta_fault=False, broken=False)),
        str(spec),
        env=env,
    )
    assert second.returncode == 0, second.stdout + second.stderr[-3000:]
    assert "3/3 hosts done" in second.stdout
    with Store(db) as store:
        again = {c.hostname: c for c in store.campaigns()}
        # beta resumed its campaign, alpha's finished one was left alone: no new campaign
        assert again["beta"].id == by_host["beta"].id
        assert again["alpha"].id == by_host["alpha"].id
        assert {c.status for c in again.values()} == {"complete"}
        assert len(store.campaigns()) == 3
        resumed = store.points(again["beta"].id)
        assert [p.seq for p in resumed] == sorted(beta_points)  # no point added or lost
        assert {p.status for p in resumed} == {"ok"}

    compare = fslab("compare", str(again["alpha"].id), "--by", "host", env=env)
    assert compare.returncode == 0, compare.stderr
    lines = compare.stdout.splitlines()
    facts = [line for line in lines if "nr_cpu_ids" in line or "CPU model" in line]
    assert len(facts) == 2 and "beta" in compare.stdout and "epsilon" in compare.stdout
    # the machines are described before any verdict
    first_verdict = next(i for i, line in enumerate(lines) if "verdict" in line.lower())
    assert max(lines.index(f) for f in facts) < first_verdict
