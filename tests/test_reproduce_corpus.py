"""Every report under tests/data/reports/ with an entry in expected.toml: what `fslab
reproduce` reads against what a reader recorded (tool, filesystem, mkfs and mount options,
workload options, the swept variable, setup steps, device count), and no report, old or
new, ends in a traceback or a spec that does not load.

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
from fslab.spec.load import validate_spec

REPORTS = Path(__file__).parent / "data" / "reports"
EXPECTED = tomllib.loads((REPORTS / "expected.toml").read_text())
HOST = HostShape(kernel_release="6.18.0-test", online_cpus=2, nr_cpu_ids=2, memory_bytes=24 * GIB)

KNOWN_GAPS: dict[tuple[str, str], str] = {}


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
    try:
        reproduction = build_spec(facts, source_name=name, host=HOST)
    except UsageError as exc:
        assert exc.exit_code == 2 and name in str(exc)
        return
    assert validate_spec(tomllib.loads(reproduction.toml)) == reproduction.spec


def test_every_expected_report_exists():
    assert all((REPORTS / name).is_file() for name in EXPECTED)
