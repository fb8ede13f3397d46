"""The fleet's parts that need no host: the playbook parses, the packages it
installs are the Makefile's, a fleet run's key decides what resumes."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

from fslab.fleet.run import DEBIAN_PACKAGES, FleetPlan

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
