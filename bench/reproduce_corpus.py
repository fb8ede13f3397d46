"""`fslab reproduce` over the report corpus: per report, the tool read, the essential
fields read right against tests/data/reports/expected.toml (k/n), and whether the spec
written loads as `fslab run SPEC` loads it, with its workload kind ("yes: dbench"; a
report's shell command is written switched off: "yes: command, off"). With --run, each
spec that loads and may run runs as `fslab run SPEC --quick` and the last two columns say
whether it ran and whether its falloff showed (root, minutes each).

    .venv/bin/python bench/reproduce_corpus.py [--run]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from fslab.base.errors import FslabError, UsageError
from fslab.reproduce.experiment import FIELDS, compare, experiment_of
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import HostShape
from fslab.reproduce.specwrite import build_spec
from fslab.spec.load import load_spec

REPORTS = Path(__file__).resolve().parent.parent / "tests" / "data" / "reports"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run each loading spec --quick")
    args = parser.parse_args()
    expected = tomllib.loads((REPORTS / "expected.toml").read_text())
    host = HostShape.current()
    rows = [("report", "tool", "fields right", "spec loads", "ran --quick", "falloff")]
    wrong: list[str] = []
    for path in sorted(REPORTS.glob("*.txt")):
        facts = extract_facts(path.read_text())
        found = experiment_of(facts)
        right = "-"
        if path.name in expected:
            marks = compare(found, expected[path.name])
            right = f"{sum(marks.values())}/{len(FIELDS)}"
            wrong += [
                f"{path.name}: {f}: read {getattr(found, f)!r}" for f in FIELDS if not marks[f]
            ]
        try:
            spec = build_spec(facts, source_name=path.name, host=host)
            loads = _loads(spec.toml)
        except UsageError:
            spec, loads = None, "no (exit 2)"
        ran, falloff = "not run", "not run"
        if args.run and spec is not None and loads.startswith("yes") and "off" not in loads:
            ran, falloff = _run(spec.toml, spec.spec.name)
        rows.append((path.name, found.tool or "-", right, loads, ran, falloff))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    if wrong:
        print("\nread wrong:")
        print("\n".join(f"  {line}" for line in wrong))
    return 0


def _loads(toml: str) -> str:
    """Whether the spec loads as `fslab run SPEC` loads it, and its workload kind."""
    path = Path(tempfile.mkdtemp(prefix="fslab-corpus-")) / "spec.toml"
    path.write_text(toml)
    try:
        spec, _ = load_spec(str(path))
    except FslabError as exc:
        return f"NO: {str(exc).splitlines()[0][:60]}"
    off = (
        spec.workload.kind == "command" and getattr(spec.workload, "allow_commands", True) is False
    )
    return f"yes: {spec.workload.kind}" + (", off" if off else "")


def _run(toml: str, name: str) -> tuple[str, str]:
    """`fslab run SPEC --quick`; whether it ran, and whether its report names a falloff."""
    spec = Path(tempfile.mkdtemp(prefix="fslab-corpus-")) / f"{name}.toml"
    spec.write_text(toml)
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "run", str(spec), "--quick"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"failed ({done.returncode})", "-"
    return "yes", "yes" if "falloff" in done.stdout.lower() else "no"


if __name__ == "__main__":
    raise SystemExit(main())
