"""`fslab reproduce` over the report corpus: per report, the tool read, the essential
fields read right against tests/data/reports/expected.toml (k/n), and whether the spec
written loads as `fslab run SPEC` loads it, with its workload kind ("yes: dbench"; a
report's shell command is written switched off: "yes: command, off"). With --run, each
spec that loads and may run runs as `fslab run SPEC --quick` (root, minutes each; stopped
with Ctrl-C's own clean-up past --timeout) and the last two columns say whether it ran,
and whether it changed the way the report says (expected.toml's direction: performance as
the swept value grows). That is judged along the report's own variable with the falloff
test (`fall_test`, one-sided, the headline metric's better direction up): a workload axis
on the first configuration from its first to its last value, a mkfs or mount option from
the first configuration to the last; "down: yes" is the report's direction, shown; "flat"
is neither way shown; a report whose variable is the kernel says "not here (kernels)".
A report whose variable is not the kernel runs on this host (`--host`), not in a guest.

    .venv/bin/python bench/reproduce_corpus.py [--run] [--only NAME ...] [--save DIR]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.metrics_catalog import metric_def
from fslab.analyze.campaign.stats import bootstrap_ratio_ci
from fslab.analyze.curve.falloff import fall_test
from fslab.base.errors import FslabError, UsageError
from fslab.base.units import parse_size_bytes
from fslab.reproduce.experiment import FIELDS, compare, experiment_of
from fslab.reproduce.extract import extract_facts
from fslab.reproduce.scale import HostShape
from fslab.reproduce.specwrite import build_spec
from fslab.spec.load import load_spec
from fslab.store.db import Store

REPORTS = Path(__file__).resolve().parent.parent / "tests" / "data" / "reports"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run each loading spec --quick")
    parser.add_argument(
        "--only", nargs="+", default=[], help="these reports (name prefixes, or whole .txt names)"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take")
    parser.add_argument("--save", type=Path, help="keep each run's spec, output and database")
    parser.add_argument(
        "--repeat",
        type=int,
        help="runs a point (--quick's 4 resolve a large change; a small one needs 10 or more)",
    )
    args = parser.parse_args()
    expected = tomllib.loads((REPORTS / "expected.toml").read_text())
    host = HostShape.current()
    rows = [("report", "tool", "fields right", "spec loads", "ran --quick", "falloff")]
    wrong: list[str] = []
    for path in sorted(REPORTS.glob("*.txt")):
        if args.only and not any(_named(path.name, o) for o in args.only):
            continue
        facts = extract_facts(path.read_text())
        found = experiment_of(facts)
        right = "-"
        if path.name in expected:
            marks = compare(found, expected[path.name])
            right = f"{sum(marks.values())}/{len(FIELDS)}"
            wrong += [
                f"{path.name}: {f}: read {getattr(found, f)!r}" for f in FIELDS if not marks[f]
            ]
        # a variable other than the kernel is judged on this host, as `fslab reproduce
        # --run --quick --host` runs it: a guest for the reporter's kernel only slows it
        # (under TCG here a 5.10 guest did not boot in 300 s)
        guests = _kernel_variable(expected.get(path.name)) or not args.run
        try:
            spec = build_spec(facts, source_name=path.name, host=host, guests=guests)
            loads = _loads(spec.toml)
        except UsageError:
            spec, loads = None, "no (exit 2)"
        ran, falloff = "not run", "not run"
        if args.run and spec is not None and loads.startswith("yes") and "off" not in loads:
            where = args.save / path.stem if args.save else Path(tempfile.mkdtemp())
            ran, falloff = _run(
                spec.toml, where, expected.get(path.name), args.timeout, args.repeat
            )
            print(f"{path.name}: ran {ran}; {falloff}", flush=True)
        rows.append((path.name, found.tool or "-", right, loads, ran, falloff))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(_summary(rows[1:], expected))
    if wrong:
        print("\nread wrong:")
        print("\n".join(f"  {line}" for line in wrong))
    return 0


def _summary(rows: list[tuple[str, ...]], expected: dict[str, Any]) -> str:
    """The table in one line: how many read right, exit 2, ran, and showed the direction."""
    judged = [r for r in rows if r[0] in expected]
    kernels = sum(_kernel_variable(expected[r[0]]) for r in judged)
    line = (
        f"\n{len(rows)} reports; {len(judged)} with expectations: "
        f"{sum(r[2] == f'{len(FIELDS)}/{len(FIELDS)}' for r in judged)} read "
        f"{len(FIELDS)}/{len(FIELDS)}, {sum(r[3] == 'no (exit 2)' for r in judged)} exit 2 "
        f"saying why; {kernels} vary only the kernel or a commit"
    )
    ran = [r for r in judged if r[4] != "not run"]
    if ran:
        shown = sum(": yes (" in r[5] for r in ran)
        line += (
            f"\nran {len(ran)}: {sum(r[4].startswith('yes') for r in ran)} ran --quick, "
            f"{shown} showed the reported direction, "
            f"{sum(r[5].startswith('not here') for r in ran)} not here (kernels), "
            f"{sum(r[5] == 'no sweep' for r in ran)} no sweep"
        )
    return line


def _named(name: str, only: str) -> bool:
    """A whole file name matches itself only; anything else is a prefix."""
    return name == only if only.endswith(".txt") else name.startswith(only)


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


def _run(
    toml: str, where: Path, expected: dict[str, Any] | None, timeout: float, repeat: int | None
) -> tuple[str, str]:
    """`fslab run SPEC --quick` in its own database; whether it ran, and its direction."""
    where.mkdir(parents=True, exist_ok=True)
    spec, db = where / "spec.toml", where / "campaign.db"
    spec.write_text(toml)
    argv = [sys.executable, "-m", "fslab", "run", str(spec), "--quick", "--db", str(db)]
    if repeat:
        argv += ["--set", f"run.repeat={repeat}"]
    started = time.monotonic()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)  # fslab releases mounts and loops on Ctrl-C
            out, err = child.communicate()
            (where / "output.txt").write_text(out + err)
            return f"timed out ({timeout / 60:.0f} min)", "-"
        except KeyboardInterrupt:
            # a SIGINT sent to this script alone (not the terminal's process group)
            # must still reach the run, or its mounts outlive the bench
            child.send_signal(signal.SIGINT)
            child.wait()
            raise
    (where / "output.txt").write_text(out + err)
    if child.returncode != 0:
        last = err.strip().splitlines()[-1][:50] if err.strip() else ""
        return f"failed ({child.returncode}: {last})", "-"
    return f"yes ({(time.monotonic() - started) / 60:.1f} min)", _direction(db, expected)


def _kernel_variable(expected: dict[str, Any] | None) -> bool:
    """Whether the report's direction is between kernels (or commits)."""
    parts = ("sweep", "compare")
    return bool(expected) and any(
        (expected or {}).get(part, {}).get("axis") in ("kernel", "commit") for part in parts
    )


def _direction(db: Path, expected: dict[str, Any] | None) -> str:
    """Which way the headline went along the report's own variable, against the report.

    A workload axis is judged from its first to its last value, the other axes at their
    last (heaviest) value; a variable fslab makes configurations of (mkfs or mount
    options) from the first configuration to the last, at the sweep's last point.
    """
    if not expected or "direction" not in expected:
        return "-"
    if _kernel_variable(expected):
        return "not here (kernels)"  # the direction is the kernels'; one runs here
    with Store(str(db)) as store:
        (campaign,) = store.campaigns()
        data = load_campaign(store, campaign.id)
    if data.headline is None or not data.configs():
        return "no headline"
    axis = expected["sweep"]["axis"]
    sweep = data.campaign.spec.sweep
    if axis in sweep:
        first, last, label = _along_axis(data, data.configs()[0], axis, sweep)
    elif len(data.configs()) > 1 and _configures(axis):
        first, last, label = _across_configs(data)
    else:
        return "no sweep"  # the spec does not vary the report's variable
    if not first or not last:
        return "no sweep"
    change = statistics.median(last) / statistics.median(first)
    low, high = bootstrap_ratio_ci(first, last, rng=0)  # runs interleaved by fslab run
    if metric_def(data.headline).direction == "lower":
        first, last = [-v for v in first], [-v for v in last]
        change, low, high = 1 / change, 1 / high, 1 / low
    went = (
        "down" if fall_test(first, last).shows else "up" if fall_test(last, first).shows else "flat"
    )
    mark = "yes" if went == expected["direction"] else "no"
    runs = f"{len(first)} and {len(last)} runs"
    return f"{went}: {mark} (x{change:.2f}, 95% CI {low:.2f}-{high:.2f}, {runs}; {label})"


def _along_axis(
    data: CampaignData, config: str, axis: str, sweep: dict[str, list[Any]]
) -> tuple[list[float], list[float], str]:
    values = data.values(data.headline, config)
    others = {a: v[-1] for a, v in sweep.items() if a != axis}
    at = {k: v for k, v in values.items() if all(dict(k).get(a) == x for a, x in others.items())}
    declared = sorted(
        (v for v in sweep[axis] if any(dict(k).get(axis) == v for k in at)), key=_magnitude
    )
    if len(declared) < 2:
        return [], [], axis
    pick = {dict(k)[axis]: v for k, v in at.items()}
    return pick[declared[0]], pick[declared[-1]], axis


def _configures(axis: str) -> bool:
    """Whether the report's variable is one fslab makes configurations of (the filesystem,
    its mkfs or mount options), so that comparing them judges it; another variable the
    spec left out is not judged by configurations that vary something else."""
    return axis in ("filesystem", "mount_options", "mkfs_options") or axis.startswith(
        ("mkfs", "mount")
    )


def _magnitude(value: Any) -> float:
    """A swept value's size, so "as the value grows" holds whatever order the report
    gave (dbench at 32 clients, then 1); a value with no size keeps its place."""
    try:
        return float(parse_size_bytes(value))
    except (TypeError, ValueError, FslabError):
        return 0.0


def _across_configs(data: CampaignData) -> tuple[list[float], list[float], str]:
    first, last = data.configs()[0], data.configs()[-1]
    a, b = data.values(data.headline, first), data.values(data.headline, last)
    common = [k for k in a if k in b]
    if not common:
        return [], [], "configs"
    return a[common[-1]], b[common[-1]], f"{first} -> {last}"


if __name__ == "__main__":
    raise SystemExit(main())
