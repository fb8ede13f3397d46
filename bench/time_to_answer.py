#!/usr/bin/env python3
"""The full ext4-fsync-storm preset as a grid and adaptively: machine time and answers.

Runs `fslab run ext4-fsync-storm --grid` (every configuration at every numjobs,
the preset's repeats, an evidence run a point) and `fslab run ext4-fsync-storm
--adaptive` (ext4-default's curve scanned coarsely, the campaign's questions
adding points where it falls and the other configurations at the bad point),
each in a new database, in the order given (--order), with the same --set
overrides. It prints, side by side, each campaign's machine time (the sum of
its runs' wall times) and its answer:

- ext4-default's falloff: best and worst point, shown or not, and the steepest
  fall's bracket (the adjacent measured points it lies between);
- the mechanism ranked first for ext4-default;
- each configuration's counterfactual verdict on it (confirms, weakens);
- each configuration's verdict against ext4-default at the bad point;

then whether each part agrees and the ratio of machine times (adaptive / grid).
Run it on a quiet machine; it takes the grid's time and a quarter more.

    bench/time_to_answer.py [--order grid,adaptive] [--set run.runtime=10s ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.curve.falloff import steepest_fall
from fslab.analyze.versus.within import verdicts_at
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.drive.rounds import machine_seconds
from fslab.store.db import Store

PRESET, FOCUS = "ext4-fsync-storm", "ext4-default"


@dataclass
class Answer:
    machine_s: float = 0.0
    wall_s: float = 0.0
    runs: int = 0
    best: str = ""
    worst: str = ""
    shown: bool = False
    bracket: tuple[float, float] | None = None
    first: str | None = None
    counterfactuals: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    error: str = ""


def run(mode: str, overrides: list[str], scratch: Path) -> Answer:
    db = scratch / f"{mode}.db"
    sets = [word for item in overrides for word in ("--set", item)]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "run", PRESET, f"--{mode}", "--db", str(db), *sets],
        capture_output=True,
        text=True,
        check=False,
    )
    answer = Answer(wall_s=time.monotonic() - started)
    if done.returncode != 0:
        answer.error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        return answer
    return read_answer(db, answer)


def read_answer(db: Path, answer: Answer) -> Answer:
    """The campaign's answer, read with fslab's own analysis."""
    with Store(str(db)) as store:
        (campaign,) = store.campaigns()
        data = load_campaign(store, campaign.id)
        by_config = {d.config: d for d in diagnose_campaign(store, campaign.id)}
    answer.machine_s = machine_seconds(data.points)
    answer.runs = sum(1 for p in data.points if p.status != "pending")
    focus = by_config[FOCUS]
    found = focus.falloff
    if found is not None:
        answer.best, answer.worst, answer.shown = found.best.label, found.worst.label, found.shown
        fall = steepest_fall(found.curve) if found.curve else None
        answer.bracket = (fall[0].n or 0.0, fall[1].n or 0.0) if fall else None
    answer.first = focus.top
    if focus.candidates:
        answer.counterfactuals = {
            cf.config: cf.verdict for cf in focus.candidates[0].counterfactuals
        }
    if found is not None:
        answer.verdicts = {
            v.candidate: v.row.verdict for v in verdicts_at(data, FOCUS, found.worst.key)
        }
    return answer


def agrees(grid: Answer, adaptive: Answer) -> dict[str, bool]:
    """Part by part: does the adaptive campaign give the grid's answer?"""
    bracket_ok = (
        grid.bracket is not None
        and adaptive.bracket is not None
        and grid.bracket[0] <= adaptive.bracket[0] < adaptive.bracket[1] <= grid.bracket[1]
    )
    return {
        "falloff shown": grid.shown == adaptive.shown,
        "worst point": grid.worst == adaptive.worst,
        "fall bracketed within the grid's": bracket_ok,
        "mechanism first": grid.first == adaptive.first,
        "counterfactuals": grid.counterfactuals == adaptive.counterfactuals,
        "verdicts at the bad point": grid.verdicts == adaptive.verdicts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", default="grid,adaptive", help="which runs first")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--save", type=Path, help="write each campaign's answer here as JSON (MODE.json)"
    )
    parser.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="MODE=FILE",
        help="take that mode's answer from a --save of an earlier run instead of running it "
        "(say so when quoting the ratio: the two did not run side by side)",
    )
    args = parser.parse_args()
    reused = dict(item.split("=", 1) for item in args.reuse)
    answers: dict[str, Answer] = {}
    with tempfile.TemporaryDirectory(prefix="fslab-tta-") as scratch:
        for mode in args.order.split(","):
            if mode in reused:
                answers[mode] = Answer(**json.loads(Path(reused[mode]).read_text()))
                answers[mode].bracket = tuple(answers[mode].bracket or ()) or None  # type: ignore[assignment]
            else:
                answers[mode] = run(mode, args.sets, Path(scratch))
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{mode}.json").write_text(json.dumps(asdict(answers[mode])))
            a = answers[mode]
            print(
                f"{mode}: {a.runs} runs, machine {a.machine_s / 60:.1f} min, "
                f"wall {a.wall_s / 60:.1f} min {a.error}"
                + (f" (reused from {reused[mode]})" if mode in reused else ""),
                flush=True,
            )
    if set(answers) != {"grid", "adaptive"}:
        for mode, a in answers.items():  # one side only: its answer, to set beside a --save
            print(json.dumps({mode: asdict(a)}, indent=1))
        return
    grid, adaptive = answers["grid"], answers["adaptive"]
    print()
    print(f"{'':34} {'grid':>30} {'adaptive':>30}")
    rows = [
        ("machine time (min)", f"{grid.machine_s / 60:.1f}", f"{adaptive.machine_s / 60:.1f}"),
        ("runs", str(grid.runs), str(adaptive.runs)),
        ("best -> worst", f"{grid.best} -> {grid.worst}", f"{adaptive.best} -> {adaptive.worst}"),
        ("falloff shown", str(grid.shown), str(adaptive.shown)),
        ("steepest fall between", str(grid.bracket), str(adaptive.bracket)),
        ("mechanism first", str(grid.first), str(adaptive.first)),
    ]
    configs = sorted(set(grid.verdicts) | set(adaptive.verdicts))
    rows += [
        (
            f"{c}: counterfactual",
            grid.counterfactuals.get(c, "-"),
            adaptive.counterfactuals.get(c, "-"),
        )
        for c in configs
    ]
    rows += [
        (f"{c}: verdict", grid.verdicts.get(c, "-"), adaptive.verdicts.get(c, "-")) for c in configs
    ]
    for label, g, a in rows:
        print(f"{label:34} {g:>30} {a:>30}")
    print()
    for part, same in agrees(grid, adaptive).items():
        print(f"same answer, {part}: {'yes' if same else 'NO'}")
    if grid.machine_s:
        print(f"machine time ratio (adaptive / grid): {adaptive.machine_s / grid.machine_s:.2f}")


if __name__ == "__main__":
    main()
