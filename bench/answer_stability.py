#!/usr/bin/env python3
"""Does the main job tell the whole story, every time? (`make demo`'s fslab commands, N times)

Each run is the demo's main job, in new processes with a new database: `fslab run
ext4-fsync-storm --quick`, the HTML report, `fslab compare ID --by filesystem`,
`fslab diagnose`. Its wall time is measured end to end. Then the story is read
back from its database with fslab's own analysis, part by part:

- falloff: ext4-default's falloff is shown (the test, not just the medians);
- first: jbd2-reserved-credits ranks first for ext4-default;
- confirms: the 1 GiB journal, which held up at the bad point, confirms it;
- wq out: the single-threaded workqueue theory is among the ruled out;
- remedy: ext4-journal1g against ext4-default at 1024 jobs reads "better".

It prints one row per run (the parts told, wall time, warm-up runs discarded,
runs the questions added, questions left open) and the count of runs that told
all five. Run it on a quiet machine: nothing else may measure beside it.

    bench/answer_stability.py --runs 10
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.versus.within import verdicts_at
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.drive.questions import campaign_questions
from fslab.spec.points import expand_points
from fslab.store.db import Store

PRESET = "ext4-fsync-storm"
FOCUS, REMEDY = "ext4-default", "ext4-journal1g"
MECHANISM, WORKQUEUE = "jbd2-reserved-credits", "workqueue-serialisation"
BAD_POINT = (("numjobs", 1024),)
PARTS = ("falloff", "first", "confirms", "wq out", "remedy")


@dataclass
class Told:
    parts: dict[str, bool]
    wall_s: float
    warmups: int
    added: int
    open_questions: int
    note: str = ""

    @property
    def whole(self) -> bool:
        return all(self.parts.values())


def fslab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fslab", *args], capture_output=True, text=True, check=False
    )


def main_job(db: Path, out: Path) -> tuple[float, str]:
    """The demo's commands; their wall time, and the first failure's stderr (or "")."""
    started = time.monotonic()
    run = fslab("run", PRESET, "--quick", "--db", str(db))
    if run.returncode != 0:
        return time.monotonic() - started, run.stderr[-2000:]
    with Store(str(db)) as store:
        (campaign,) = store.campaigns()
    for args in (
        ("report", str(campaign.id), "--format", "html", "-o", str(out / "report.html")),
        ("compare", str(campaign.id), "--by", "filesystem"),
        ("diagnose", str(campaign.id)),
    ):
        done = fslab(*args, "--db", str(db))
        if done.returncode != 0:
            return time.monotonic() - started, done.stderr[-2000:]
    return time.monotonic() - started, ""


def story(db: Path, wall_s: float, failure: str) -> Told:
    """The parts of the story the campaign tells, read with fslab's own analysis."""
    parts = dict.fromkeys(PARTS, False)
    if failure:
        return Told(parts, wall_s, 0, 0, 0, failure.strip().splitlines()[-1][:60])
    with Store(str(db)) as store:
        (campaign,) = store.campaigns()
        data = load_campaign(store, campaign.id)
        by_config = {d.config: d for d in diagnose_campaign(store, campaign.id)}
        questions = campaign_questions(store, data)
    focus = by_config[FOCUS]
    parts["falloff"] = focus.falloff is not None and focus.falloff.shown
    parts["first"] = focus.top == MECHANISM
    top = focus.candidates[0] if focus.candidates else None
    parts["confirms"] = top is not None and any(
        cf.config == REMEDY and cf.verdict == "confirms" for cf in top.counterfactuals
    )
    parts["wq out"] = any(c.mechanism == WORKQUEUE for c in focus.ruled_out)
    remedy = [v for v in verdicts_at(data, FOCUS, BAD_POINT) if v.candidate == REMEDY]
    parts["remedy"] = bool(remedy) and remedy[0].row.verdict == "better"
    warmups = sum(1 for p in data.points if p.role == "warmup")
    planned = len(expand_points(data.campaign.spec, data.campaign.overrides.collect or "separate"))
    added = sum(1 for p in data.points if p.seq >= planned)  # the questions' runs come last
    open_questions = sum(1 for q in questions if q.status != "settled")
    return Told(parts, wall_s, warmups, added, open_questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="main jobs to run (default 10)")
    args = parser.parse_args()
    rows: list[Told] = []
    print(f"{'run':>3}  " + "  ".join(f"{p:>8}" for p in PARTS) + "    wall  warm-up  added  open")
    for index in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="fslab-stability-") as scratch:
            db = Path(scratch) / "results.db"
            wall_s, failure = main_job(db, Path(scratch))
            told = story(db, wall_s, failure)
        rows.append(told)
        marks = "  ".join(f"{'yes' if told.parts[p] else 'NO':>8}" for p in PARTS)
        print(
            f"{index:>3}  {marks}  {told.wall_s / 60:5.2f}m  {told.warmups:>7}  {told.added:>5}"
            f"  {told.open_questions:>4}  {told.note}",
            flush=True,
        )
    whole = sum(1 for r in rows if r.whole)
    walls = [r.wall_s for r in rows]
    print()
    for part in PARTS:
        print(f"{part:>8}: told in {sum(1 for r in rows if r.parts[part])} of {len(rows)} runs")
    print(f"whole story: {whole} of {len(rows)} runs")
    print(
        f"wall time: median {statistics.median(walls) / 60:.2f} min, "
        f"longest {max(walls) / 60:.2f} min; under 5 min: "
        f"{sum(1 for w in walls if w < 300)} of {len(rows)}"
    )


if __name__ == "__main__":
    main()
