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

then, for each adaptive campaign, whether each part agrees with the grid and the
ratio of machine times (adaptive / grid). The answer judged is the one the
preset's question names: the falloff and its bracket, the mechanism first, the
1 GiB journal's and dioread_lock's counterfactuals and the verdicts at the bad
point. The other counterfactuals are printed, not judged, and so is the worst
point: around 1024 jobs the fsync storm is chaotic (runs at one point spread
x2), so which of 768, 1024 and 2048 is lowest moves between campaigns.
Parts read as the grid's own runs can tell them:

- worst point: the same, or one whose grid runs are not shown higher than the
  grid's worst point's by the falloff test (`fall_test`): the grid cannot tell
  them apart either (an adaptive worst point the grid never measured is held
  against the adaptive campaign's own runs at the grid's worst point);
- bracket: inside the grid's falling stretch, the adjacent steps around its
  steepest fall that each fall by FALLOFF_MIN_DROP or more;
- verdicts: each one the grid gave, the same; one the grid left at "needs more
  runs" is no answer to contradict (the adaptive campaign may have settled it).

Run it on a quiet machine; it takes the grid's time and a quarter more per
adaptive campaign. `--order adaptive,grid,adaptive` sets two adaptive
campaigns on either side of the grid, so drift falls on both.

    bench/time_to_answer.py [--order grid,adaptive] [--set run.runtime=10s ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.curve.falloff import FALLOFF_MIN_DROP, fall_test, steepest_fall
from fslab.analyze.versus.within import verdicts_at
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.drive.rounds import machine_seconds
from fslab.store.db import Store

PRESET, FOCUS = "ext4-fsync-storm", "ext4-default"
JUDGED_COUNTERFACTUALS = ("ext4-journal1g", "ext4-dioread_lock")
"""The counterfactuals the answer names (the maintainer's two remedies)."""


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
    curve: list[tuple[float, list[float]]] = field(default_factory=list)  # FOCUS: (N, runs)
    error: str = ""

    def runs_at(self, label: str) -> list[float] | None:
        for n, values in self.curve:
            if label == f"numjobs={n:g}":
                return values
        return None


def run(mode: str, overrides: list[str], scratch: Path, log: Path | None) -> Answer:
    db = scratch / f"{mode}-{time.monotonic_ns()}.db"
    sets = [word for item in overrides for word in ("--set", item)]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "run", PRESET, f"--{mode}", "--db", str(db), *sets],
        capture_output=True,
        text=True,
        check=False,
    )
    answer = Answer(wall_s=time.monotonic() - started)
    if log is not None:
        log.write_text(done.stdout + done.stderr)
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
        if found.curve:
            answer.curve = [(p.n or 0.0, list(p.values)) for p in found.curve.points]
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
    judged = {c: grid.counterfactuals.get(c) for c in JUDGED_COUNTERFACTUALS}
    return {
        "falloff shown": grid.shown == adaptive.shown,
        "fall bracketed where the grid falls": _inside_fall(grid, adaptive.bracket),
        "mechanism first": grid.first == adaptive.first,
        "counterfactuals (1 GiB journal, dioread_lock)": judged
        == {c: adaptive.counterfactuals.get(c) for c in JUDGED_COUNTERFACTUALS},
        "verdicts at the bad point": _same_verdicts(grid.verdicts, adaptive.verdicts),
    }


def _same_verdicts(grid: dict[str, str], adaptive: dict[str, str]) -> bool:
    """Every verdict the grid gave, the same; where the grid's runs left one open ("needs
    more runs"), whatever the adaptive campaign's further runs settled."""
    if set(grid) != set(adaptive):
        return False
    return all(g == "needs more runs" or g == adaptive[c] for c, g in grid.items())


def _same_worst(grid: Answer, adaptive: Answer) -> bool:
    """The same point, or two that the runs of a campaign which measured both cannot tell
    apart (the grid's, else the adaptive campaign's own: it may measure a point between
    the grid's, such as 1448 jobs)."""
    if grid.worst == adaptive.worst:
        return True
    for side in (grid, adaptive):
        low, other = (
            side.runs_at(side.worst),
            side.runs_at(adaptive.worst if side is grid else grid.worst),
        )
        if low and other and len(low) >= 2 and len(other) >= 2:
            return not fall_test(other, low).shows
    return False


def _inside_fall(grid: Answer, bracket: tuple[float, float] | None) -> bool:
    """Whether `bracket` lies in the grid's falling stretch around its steepest fall."""
    if grid.bracket is None or bracket is None:
        return False
    if not grid.curve:
        return grid.bracket[0] <= bracket[0] < bracket[1] <= grid.bracket[1]
    ns = [n for n, _ in grid.curve]
    medians = [statistics.median(v) for _, v in grid.curve]
    falls = [medians[i + 1] <= (1.0 - FALLOFF_MIN_DROP) * medians[i] for i in range(len(ns) - 1)]
    lo = hi = ns.index(grid.bracket[0])
    while lo > 0 and falls[lo - 1]:
        lo -= 1
    while hi < len(falls) and falls[hi]:
        hi += 1
    return ns[lo] <= bracket[0] < bracket[1] <= ns[hi]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--order", default="grid,adaptive", help="campaigns in run order (a mode may repeat)"
    )
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--save", type=Path, help="write each campaign's answer (MODE-K.json) and output here"
    )
    parser.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="MODE=FILE",
        help="take that mode's answer from a --save of an earlier run instead of running it "
        "(repeatable; say so when quoting the ratio: the two did not run side by side)",
    )
    args = parser.parse_args()
    reused: dict[str, list[str]] = {}
    for item in args.reuse:  # a mode given again takes the next file, in --order's turn
        mode, _, path = item.partition("=")
        reused.setdefault(mode, []).append(path)
    answers: list[tuple[str, Answer]] = []
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fslab-tta-") as scratch:
        for k, mode in enumerate(args.order.split(","), 1):
            name = f"{mode}-{k}"
            source = reused[mode].pop(0) if reused.get(mode) else None
            if source is not None:
                answer = Answer(**json.loads(Path(source).read_text()))
                answer.bracket = tuple(answer.bracket or ()) or None  # type: ignore[assignment]
            else:
                log = args.save / f"{name}.log" if args.save else None
                answer = run(mode, args.sets, Path(scratch), log)
            if args.save:
                (args.save / f"{name}.json").write_text(json.dumps(asdict(answer)))
            answers.append((mode, answer))
            print(
                f"{name}: {answer.runs} runs, machine {answer.machine_s / 60:.1f} min, "
                f"wall {answer.wall_s / 60:.1f} min {answer.error}"
                + (f" (reused from {source})" if source is not None else ""),
                flush=True,
            )
    grids = [a for mode, a in answers if mode == "grid"]
    adaptives = [a for mode, a in answers if mode == "adaptive"]
    if len(grids) != 1 or not adaptives:
        for mode, a in answers:  # one side only: its answer, to set beside a --save
            print(json.dumps({mode: asdict(a)}, indent=1))
        return
    (grid,) = grids
    print_side_by_side(grid, adaptives)
    ratios, agreeing = [], 0
    for k, adaptive in enumerate(adaptives, 1):
        print()
        parts = agrees(grid, adaptive)
        for part, same in parts.items():
            print(f"adaptive {k}, same answer, {part}: {'yes' if same else 'NO'}")
        tied = "yes" if _same_worst(grid, adaptive) else "NO"
        print(f"adaptive {k}, also (not judged), worst point or tied: {tied}")
        if grid.machine_s:
            ratios.append(adaptive.machine_s / grid.machine_s)
            print(f"adaptive {k}: machine time ratio (adaptive / grid): {ratios[-1]:.2f}")
        print(f"adaptive {k}: the same answer: {'yes' if all(parts.values()) else 'NO'}")
        agreeing += all(parts.values())
    if len(ratios) > 1:
        low, high = min(ratios), max(ratios)
        print(f"\nratio over {len(ratios)} adaptive campaigns: {low:.2f} .. {high:.2f}")
        print(f"the grid's answer in {agreeing} of {len(adaptives)} adaptive campaigns")


def print_side_by_side(grid: Answer, adaptives: list[Answer]) -> None:
    columns = [grid, *adaptives]
    heads = ["grid", *(f"adaptive {k}" for k in range(1, len(adaptives) + 1))]
    print()
    print(f"{'':34}" + "".join(f" {h:>28}" for h in heads))

    def row(label: str, cells: list[str]) -> None:
        print(f"{label:34}" + "".join(f" {c:>28}" for c in cells))

    row("machine time (min)", [f"{a.machine_s / 60:.1f}" for a in columns])
    row("runs", [str(a.runs) for a in columns])
    row("best -> worst", [f"{a.best} -> {a.worst}" for a in columns])
    row("falloff shown", [str(a.shown) for a in columns])
    row("steepest fall between", [str(a.bracket) for a in columns])
    row("mechanism first", [str(a.first) for a in columns])
    configs = sorted({c for a in columns for c in a.verdicts})
    for c in configs:
        row(f"{c}: counterfactual", [a.counterfactuals.get(c, "-") for a in columns])
    for c in configs:
        row(f"{c}: verdict", [a.verdicts.get(c, "-") for a in columns])
    for n in sorted({n for a in columns for n, _ in a.curve}):
        cells = []
        for a in columns:
            values = dict(a.curve).get(n)
            cells.append(f"{statistics.median(values):.0f} ({len(values)})" if values else "-")
        row(f"{FOCUS} numjobs={n:g}: median (runs)", cells)


if __name__ == "__main__":
    main()
