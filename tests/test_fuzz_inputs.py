"""bench/fuzz_inputs.py in the suite: a few hundred seeded inputs on every surface (report
text, spec, import, inventory, database URL), each surface in a child of its own.

None may end in a traceback, break a property (a reproduced spec carrying an option
that needs the opt-in, a name's markup in the HTML report, an inventory value changing a
shell script), write outside the sandbox, leave a canary or start a process. As root the
child's writes are caught by overlays in a private mount namespace; without root only
what Python itself opens is seen, so writes are not judged there.
"""

from __future__ import annotations

import pytest
from bench.fuzz_inputs import SURFACES, SurfaceResult, check_rendered, fuzz, load_playbook

INPUTS = 150
SEED = 7


@pytest.fixture(scope="module")
def results() -> dict[str, SurfaceResult]:
    return {r.surface: r for r in fuzz(list(SURFACES), INPUTS, SEED, budget=30.0, keep=None)}


def _found(result: SurfaceResult, kind: str) -> list[str]:
    return [f"{f.label}\n{f.detail}" for f in result.findings if f.kind == kind]


@pytest.mark.parametrize("surface", SURFACES)
def test_every_input_is_accepted_or_refused_cleanly(results, surface):
    result = results[surface]
    assert result.error == "" and result.harness_errors == []
    assert result.inputs == INPUTS
    assert result.tracebacks == 0, _found(result, "traceback")
    assert result.violations == 0, _found(result, "violation")
    assert result.refused > 0 and result.accepted + result.refused + result.failed == INPUTS


@pytest.mark.parametrize("surface", SURFACES)
def test_no_input_writes_outside_runs_a_command_or_leaves_a_canary(results, surface):
    result = results[surface]
    assert result.canaries == []
    assert result.processes == []
    if result.isolation == "overlay":
        assert result.writes == []


def test_no_inventory_value_changes_the_playbooks_shell_scripts():
    playbook = load_playbook()
    hostile = {
        "fslab_home": '/x/$(touch y)\'"; id; "`id`',
        "fslab_command": "/usr/bin/fslab; id",
    }
    assert check_rendered(playbook, "alpha", hostile) == []
    # and the check sees a value the shell would read as syntax
    unquoted = {**playbook, "shells": [("echo", 'echo "{{ home }}"')]}
    assert check_rendered(unquoted, "alpha", hostile) != []
    outside = {**playbook, "fetches": ["{{ fslab_fleet_fetch_dir }}/../{{ inventory_hostname }}"]}
    assert check_rendered(outside, "alpha", {}) != []
