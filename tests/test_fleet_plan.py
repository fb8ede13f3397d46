"""The fleet's parts that need no host: the playbook parses, the packages it
installs are the Makefile's, a fleet run's key decides what resumes, and an
inventory is checked before ansible starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from fslab.base.errors import UsageError
from fslab.fleet.inventory import read_inventory
from fslab.fleet.run import DEBIAN_PACKAGES, FleetPlan
from tests import cli
from tests.tiny_spec import tiny_spec

ROOT = Path(__file__).parents[1]


def test_the_playbook_installs_the_makefiles_debian_packages():
    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^DEB_PACKAGES = (.+)$", makefile, re.MULTILINE)
    assert listed is not None
    assert tuple(listed.group(1).split()) == DEBIAN_PACKAGES


def test_the_shipped_playbook_passes_ansibles_syntax_check(tmp_path):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("box ansible_connection=local\n")
    playbook = resources.files("fslab.fleet") / "playbook.yml"
    ansible_playbook = str(Path(sys.executable).parent / "ansible-playbook")
    proc = subprocess.run(
        [ansible_playbook, "--syntax-check", "-i", str(inventory), str(playbook)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_same_spec_and_options_are_the_same_fleet_run(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n')
    plan = FleetPlan(inventory=tmp_path / "i", spec=str(spec), run_args=("--quick",), db="")
    again = FleetPlan(inventory=tmp_path / "other", spec=str(spec), run_args=("--quick",), db="")
    assert plan.key() == again.key()  # resumes, whatever the inventory or --limit
    assert plan.key() != FleetPlan(plan.inventory, str(spec), (), "").key()
    assert plan.key() != FleetPlan(plan.inventory, str(spec), ("--quick",), "", fresh=True).key()
    before = plan.key()
    spec.write_text('name = "s"\n# edited\n')
    assert plan.key() != before  # an edited spec is another fleet run


# --- the inventory is checked before ansible starts (fleet/inventory.py) -------------------

LOCAL = "ansible_connection=local ansible_python_interpreter=/usr/bin/python3"


def _inventory(tmp_path: Path, text: str, name: str = "hosts.ini") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_inventory_of_plain_hosts_and_values_is_read(tmp_path):
    hosts = read_inventory(
        _inventory(
            tmp_path,
            f"[lab]\nalpha {LOCAL} fslab_home=/var/lib/f fslab_target=ram\n"
            "10.0.0.7 ansible_ssh_common_args='-o ConnectTimeout=3 -o BatchMode=yes'\n"
            "[lab:vars]\nfslab_allow_devices=['/dev/nvme1n1']\nfslab_install_debs=false\n",
        )
    )
    assert [h.name for h in hosts] == ["alpha", "10.0.0.7"]
    assert hosts[0].variables["fslab_home"] == "/var/lib/f"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[lab]\n../../etc/x\n", "host name '../../etc/x'"),
        ("[lab]\n'a;b'\n", "host name"),
        ("all:\n  hosts:\n    'a b': {}\n", "host name 'a b'"),
        (
            "all:\n  hosts:\n    a: {fslab_home: \"{{ lookup('pipe', 'id') }}\"}\n",
            "fslab_home: a template",
        ),
        ('[lab]\na ansible_host=\'{{ lookup("pipe", "id") }}\'\n', "ansible_host: a template"),
        ("[lab]\na ansible_ssh_common_args='-o ProxyCommand=nc'\n", "makes ssh run a command"),
        ("[lab]\na ansible_ssh_extra_args='-F /tmp/cfg'\n", "or read a config"),
        ("[lab]\na ansible_python_interpreter='python3; id'\n", "not a plain path"),
        ("[lab]\na fslab_homer=/x\n", "fslab_homer: not a variable fslab's playbook reads"),
        ("[lab]\na fslab_home=relative\n", "fslab_home: 'relative' is not an absolute path"),
        ("[lab]\na fslab_target=device:/etc/passwd\n", "fslab_target: 'device:/etc/passwd'"),
        ("[lab]\na fslab_allow_devices=\"['/dev/../etc']\"\n", "is not a device path under /dev"),
        ("[lab]\na fslab_environment='{\"1X\": 1}'\n", "'1X' is not an environment variable"),
        ("[lab]\n[[[\n", "ansible cannot read it as an INI or YAML inventory"),
        ("", "no hosts"),
    ],
)
def test_an_inventory_value_that_would_reach_a_shell_or_a_path_is_refused(text, message, tmp_path):
    name = "hosts.yml" if text.startswith("all:") else "hosts.ini"
    with pytest.raises(UsageError, match=re.escape(message)):
        read_inventory(_inventory(tmp_path, text, name))


def test_a_json_inventory_is_read_as_yaml(tmp_path):
    text = json.dumps({"all": {"hosts": {"alpha": {"ansible_connection": "local"}}}}, indent=2)
    hosts = read_inventory(_inventory(tmp_path, text, "hosts.yml"))
    assert [h.name for h in hosts] == ["alpha"]  # not the INI parser's host '{'


def test_an_inventory_script_is_not_run(tmp_path):
    canary = tmp_path / "CANARY"
    script = _inventory(tmp_path, f"#!/bin/sh\ntouch {canary}\necho '{{}}'\n", "inv.sh")
    script.chmod(0o755)
    with pytest.raises(UsageError, match="cannot read it as an INI or YAML inventory"):
        read_inventory(script)
    assert not canary.exists()


def test_fleet_run_refuses_the_inventory_before_anything_is_created(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(tiny_spec("fleet-tiny"))
    inventory = _inventory(tmp_path, "[lab]\n../../etc/x\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    proc = cli.run(
        [
            sys.executable,
            "-m",
            "fslab",
            "fleet",
            "run",
            str(inventory),
            str(spec),
            "--db",
            str(tmp_path / "db.sqlite"),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    said = " ".join(proc.stderr.split())
    assert "host name '../../etc/x'" in said and "Traceback" not in said
    assert not (tmp_path / "data" / "fslab" / "fleet").exists()  # no wheel, no playbook
