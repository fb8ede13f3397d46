"""Calibrate fslab's comparison verdicts: false alarms, detection power, repetitions.

    .venv/bin/python bench/stats_calibration.py [--tables N] [--seed S]

Synthetic part (runs now). Each simulated comparison is one table of an
8-point sweep (one throughput metric, "fio.write.iops", higher is better),
run through fslab.analyze.campaign.verdicts.compare() exactly as a campaign would be.
Run-to-run noise is multiplicative with a 3% coefficient of variation:

- lognormal: log(value) ~ Normal(0, 0.03);
- heavy: log(value) ~ 0.03 / sqrt(3) x Student-t(3), the same 3% standard
  deviation but heavier tails (stragglers: about 1 run in 40 lies beyond
  4 standard deviations of a normal run).

Figures printed:

- A/A: both sides from the same distribution; the share of points flagged
  better/worse (goal <= 1%). Also for one-point tables, where the
  Benjamini-Hochberg correction has nothing to spread over.
- A/B: the candidate 5% higher at every point; the share of points flagged
  "better" at several repetition counts (goal >= 90% at the recommended
  count) and the smallest count reaching 90% for lognormal noise, which is
  what compare.RECOMMENDED_REPETITIONS should be.
- The same A/B figure at the recommended count for other gate factors.

Figures are computed in parallel (--workers, default: all CPUs), each from
its own seed, so the output does not depend on the worker count. To fit in
about two minutes on two CPUs the bootstrap inside the loop uses 1000
resamples instead of compare()'s 10000: the 2.5% and 97.5% percentiles move
by a few tenths of a percent of the ratio, far less than the Monte Carlo
error of the rates printed (shown as +- one standard error).

Spaced campaigns (--spaced DB, or the recording checked in under
bench/spaced/data/ by default): campaigns of bench/spaced/base.toml,
cost.toml and cost1k.toml recorded by bench/spaced/record.sh, each its own campaign, minutes
to hours apart. Figures, each judged exactly as `fslab compare A B` judges
(analyze.baselines.compare_with_noise: the noise model of A's spec from every
stored campaign of it, B left out):

- A/A: every pair of base campaigns from different cycles of the recording
  (so at least one spacing apart), earlier as baseline; the share of
  comparison sets (a set = one `fslab compare`: 2 points x headline and
  fsync p99) with any row flagged (goal: at most 1 in 20), beside the same
  pairs judged on the runs inside each campaign alone (the old verdict);
- power, real change: every (base, cost) pair, for each cost spec
  (cost.toml: 2 KiB blocks; cost1k.toml: 1 KiB blocks); a set finds the
  change when it flags the headline "worse" at some point and "better" at
  none;
- power, exactly -10%: every pair of base campaigns with the candidate's
  headline scaled by 0.9 (real spaced noise, known change), judged with the
  model `fslab compare A B` would use (analyze.baselines.campaign_model).

A set whose candidate campaign's runs spread more than the spec's campaigns'
runs do (analyze.noise: F test p < 0.01) leaves those rows unjudged ("needs
more runs": the candidate was unsteady); the lines say how many such sets
there were, counted neither as flagged nor as found.

When the spec's series has a change point (analyze.levels: the machine's own
level moved), the family prints the moves as comparisons find them and the
model with a mean per level; the A/A and real-change lines then say how many
sets lay on one level (judged with a mean per level) and how many across a
move (one mean, and a warning), and so does a line under the groups' table.

Groups of campaigns (`fslab compare 12,14,16 13,15,17`, analyze.baselines.group_model:
each side's level against the other's, the noise model fitted over both
sides and the other campaigns of each side's spec, each around its own
mean), for M = 1, 2, 3, 4, 6 and 8 campaigns a side, per family:

- A/A: the family's base campaigns split into two disjoint groups of M whose
  campaigns come from different cycles (no hold of the lock on both sides),
  the group with the earliest campaign as baseline; a set is flagged as above;
- power, headline x0.9: the same splits with the candidate group's headline
  scaled by 0.9 (the model is unchanged: a side's own mean absorbs a shift);
- power, real change: every pair (M base campaigns, M campaigns of a cost
  spec); found as above.

Each figure uses every distinct set when there are at most GROUP_SETS of
them, else GROUP_SETS drawn at random without replacement (seeded by
--seed); the sets share campaigns, so they are not independent and the
intervals (Wilson, 95%, statsmodels) are narrower than the truth. Families
are every FAMILY-base in the data with its FAMILY-cost* specs, whatever
directory they were exported to.

Goals, printed last: A/A flags at most 1 comparison set in 20 (one campaign
a side, and groups), and a real change of about 10% (a cost spec measured
at -5% to -15%: spaced8's device capped at 54000 write IOPS, spaced8s's
2 KiB blocks) is found in at least 80% of sets (the power the noise model
plans for) at some M, also an M above half the base campaigns, where no
A/A split exists; the line names the smallest M that reaches it, beside the
x0.9 figure. They are judged over every family, and again over the
families whose runs all recorded the host's steal, and its CPU speed (fslab
records both with every run now; older families predate them, and
comparisons judge them without taking them out). --covariates steal,speed
takes the speed probe out too, which fslab does not (analyze.slowdown says
why), for a side-by-side figure.

Real runs: with --record-real (root) it first records a real campaign on this
machine (ext4, fsync writes, 2 points x 32 repetitions); with --real-db and
--real-campaign it reads a stored one. Each point's repetitions are split at
random into two halves many times: A/A (how often a difference is flagged
between halves of the same runs) and A/B with the second half x1.05 (how often
a known 5% difference is detected on real noise, which is often larger than
the 3% of the synthetic part).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations, product
from pathlib import Path
from typing import Any

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from fslab.analyze.campaign import verdicts as cmp
from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.history.baselines import (
    GroupModel,
    baseline_campaigns,
    campaign_model,
    compare_with_noise,
    fit_model,
    group_model,
    level_check,
    noise_model,
)
from fslab.analyze.noise import slowdown
from fslab.analyze.noise.model import MIN_CAMPAIGNS
from fslab.analyze.noise.slowdown import SlowdownFit, recorded, take_out_slowdown
from fslab.analyze.versus.comparisons import (
    Comparison,
    campaign_comparisons,
    samples,
    select_metrics,
)
from fslab.spec.load import load_spec
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

CV = 0.03
SHIFT = 1.05
POINTS = 8
METRIC = "fio.write.iops"
N_RESAMPLES = 1000  # reduced inside the loop, see the module docstring
REP_COUNTS = (3, 5, 8, 12, 14, 16, 18, 20)
AA_REP_COUNTS = (3, 5)  # plus the recommended count
POWER_GOAL = 0.90
FALSE_ALARM_GOAL = 0.01
GATE_FACTORS = (0.5, 2.0)  # besides the default cmp.GATE_CV_FACTOR

Samples = Mapping[Any, Mapping[str, Sequence[float]]]
Noise = Callable[[np.random.Generator, int], np.ndarray]


def lognormal(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.exp(rng.normal(0.0, CV, n))


def heavy(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.exp(rng.standard_t(3, n) * CV / np.sqrt(3.0))


NOISES: dict[str, Noise] = {"lognormal": lognormal, "heavy (t3)": heavy}


# --- real runs: the hook -------------------------------------------------------------------


REAL_SPEC = {
    "name": "stats-calibration",
    "target": {"kind": "ram", "size": "1GiB"},
    "filesystems": [{"label": "ext4", "type": "ext4"}],
    # the seed workload, from the preset that defines it
    "workload": load_spec("ext4-fsync-storm")[0].workload.model_dump(mode="json"),
    "sweep": {"numjobs": [1, 8]},
    "run": {"runtime": "2s", "repeat": 2 * cmp.RECOMMENDED_REPETITIONS},
    "collect": {
        "perf": False,
        "offcpu": False,
        "workqueue": False,
        "tpcounters": False,
        "jbd2": False,
        "sysstat": False,
    },
}


def record_real_campaign(db: Path) -> int:
    """Run REAL_SPEC (2 points x 32 repetitions, 2 s each) into `db`; return its id."""
    from fslab.run.campaign import RunOptions, run_campaign, start_campaign
    from fslab.spec.load import validate_spec
    from fslab.store.db import Store

    spec = validate_spec(REAL_SPEC)
    with Store(db) as store:
        cid = start_campaign(store, spec, "", overrides={}, options=RunOptions())
        run_campaign(store, cid, options=RunOptions())
    return cid


def real_samples(db: Path, campaign_id: int) -> Samples:
    """Per-repetition headline values of a stored campaign: {(config, point): {metric: [...]}}."""
    from fslab.analyze.campaign.dataset import load_campaign
    from fslab.store.db import Store

    with Store(db) as store:
        data = load_campaign(store, campaign_id)
    metric = data.headline or METRIC
    return {
        (config, key): {metric: values}
        for config in data.configs()
        for key, values in data.values(metric, config).items()
    }


def real_split(
    samples: Samples, rng: np.random.Generator, shift: float = 1.0
) -> cmp.ComparisonTable:
    """Each point's real repetitions split at random into two halves; the second
    half multiplied by `shift` (1.0: an A/A; 1.05: a known 5% difference on real noise)."""
    base: dict[Any, dict[str, list[float]]] = {}
    cand: dict[Any, dict[str, list[float]]] = {}
    for point, metrics in samples.items():
        for metric, values in metrics.items():
            shuffled = rng.permutation(np.asarray(values, dtype=float))
            half = len(shuffled) // 2
            base.setdefault(point, {})[metric] = list(shuffled[:half])
            cand.setdefault(point, {})[metric] = list(shuffled[half : 2 * half] * shift)
    return cmp.compare(base, cand, n_resamples=N_RESAMPLES)


# --- simulation ----------------------------------------------------------------------------


def simulate_table(
    noise: Noise, rng: np.random.Generator, n_reps: int, shift: float, points: int = POINTS
) -> tuple[Samples, Samples]:
    """A baseline and a candidate sweep; the candidate's true level is `shift` x baseline."""
    base, cand = {}, {}
    for i in range(points):
        key = (("numjobs", 2**i),)
        level = 1000.0 * (i + 1)
        base[key] = {METRIC: list(level * noise(rng, n_reps))}
        cand[key] = {METRIC: list(level * shift * noise(rng, n_reps))}
    return base, cand


def flag_rate(
    noise: Noise,
    n_reps: int,
    shift: float,
    tables: int,
    rng: np.random.Generator,
    *,
    points: int = POINTS,
    gate_cv_factor: float = cmp.GATE_CV_FACTOR,
) -> tuple[float, float]:
    """Share of points flagged (any of better/worse/changed) and its standard error."""
    flagged = total = 0
    for index in range(tables):
        base, cand = simulate_table(noise, rng, n_reps, shift, points)
        table = cmp.compare(
            base, cand, n_resamples=N_RESAMPLES, gate_cv_factor=gate_cv_factor, seed=index
        )
        flagged += len(table.flagged())
        total += len(table.rows)
    rate = flagged / total
    return rate, float(np.sqrt(rate * (1.0 - rate) / total))


@dataclass(frozen=True)
class Figure:
    """One simulated rate: a noise, a repetition count, a true shift, a table size."""

    noise: str
    n_reps: int
    shift: float
    tables: int
    points: int = POINTS
    gate_cv_factor: float = cmp.GATE_CV_FACTOR


def run_figure(job: tuple[Figure, np.random.SeedSequence]) -> tuple[float, float]:
    """A figure's flag rate, from its own seed (so results do not depend on scheduling)."""
    figure, seed = job
    return flag_rate(
        NOISES[figure.noise],
        figure.n_reps,
        figure.shift,
        figure.tables,
        np.random.default_rng(seed),
        points=figure.points,
        gate_cv_factor=figure.gate_cv_factor,
    )


def plan(tables: int) -> list[Figure]:
    """Every figure the report prints."""
    recommended = cmp.recommended_repetitions()
    figures = []
    for noise in NOISES:
        figures += [Figure(noise, n, 1.0, tables) for n in sorted({*AA_REP_COUNTS, recommended})]
        figures.append(Figure(noise, recommended, 1.0, tables * POINTS, points=1))
        figures += [Figure(noise, n, SHIFT, tables) for n in REP_COUNTS]
    figures += [
        Figure("lognormal", recommended, SHIFT, tables, gate_cv_factor=k) for k in GATE_FACTORS
    ]
    return figures


def _pct(rate: float, se: float) -> str:
    return f"{100 * rate:.1f}% +-{100 * se:.1f}"


def report(rates: Mapping[Figure, tuple[float, float]], tables: int) -> None:
    """Print the figures in the order of the module docstring."""
    recommended = cmp.recommended_repetitions()
    print(f"A/A false alarms: share of points flagged (goal <= {FALSE_ALARM_GOAL:.0%})")
    for noise in NOISES:
        sweeps = [f for f in rates if f.noise == noise and f.shift == 1.0 and f.points == POINTS]
        cells = "  ".join(f"n={f.n_reps}: {_pct(*rates[f])}" for f in sweeps)
        print(f"  {noise:<10} {POINTS}-point sweeps  {cells}")
        single = Figure(noise, recommended, 1.0, tables * POINTS, points=1)
        print(f"  {noise:<10} 1-point tables   n={recommended}: {_pct(*rates[single])}")
    print(f"A/B detection of a {SHIFT - 1:.0%} shift at {CV:.0%} CV (goal >= {POWER_GOAL:.0%})")
    for noise in NOISES:
        cells = "  ".join(
            f"n={n}: {100 * rates[Figure(noise, n, SHIFT, tables)][0]:.0f}%" for n in REP_COUNTS
        )
        print(f"  {noise:<10} {cells}")
    worst_se = max(rates[Figure("lognormal", n, SHIFT, tables)][1] for n in REP_COUNTS)
    print(f"  (Monte Carlo standard error up to {100 * worst_se:.1f} points)")
    reaching = [
        n for n in REP_COUNTS if rates[Figure("lognormal", n, SHIFT, tables)][0] >= POWER_GOAL
    ]
    print(
        f"smallest count reaching {POWER_GOAL:.0%} (lognormal): "
        f"{reaching[0] if reaching else 'none tried'}; "
        f"compare.RECOMMENDED_REPETITIONS = {recommended}"
    )
    cells = "  ".join(
        f"{f.gate_cv_factor:g} x CV: {_pct(*rates[f])}"
        for f in rates
        if f.noise == "lognormal" and f.shift == SHIFT and f.n_reps == recommended
    )
    print(f"gate max(2%, k x CV), lognormal, n={recommended}, 5% shift: {cells}")


def report_real(args: argparse.Namespace) -> None:
    """A/A and A/B (x1.05) on real per-repetition values, over many random splits."""
    if args.record_real:
        args.real_db = Path(tempfile.mkdtemp(prefix="fslab-calib-")) / "calib.db"
        args.real_campaign = record_real_campaign(args.real_db)
    samples = real_samples(args.real_db, args.real_campaign)
    rng = np.random.default_rng(args.seed)
    reps = min(len(v) for m in samples.values() for v in m.values())
    cvs = [float(np.std(v, ddof=1) / np.mean(v)) for m in samples.values() for v in m.values()]
    flagged_aa = flagged_ab = rows = 0
    for _ in range(args.real_splits):
        aa = real_split(samples, rng)
        ab = real_split(samples, rng, SHIFT)
        rows += len(aa.rows)
        flagged_aa += len(aa.flagged())
        flagged_ab += sum(1 for r in ab.rows if r.verdict == "better")
    print(
        f"real runs ({args.real_db}, campaign {args.real_campaign}): {len(samples)} points, "
        f">= {reps} repetitions each ({reps // 2} a side), run-to-run CV "
        f"{min(cvs):.1%}..{max(cvs):.1%}"
    )
    print(
        f"  A/A split halves: {flagged_aa} of {rows} rows flagged "
        f"({flagged_aa / rows:.1%}; goal <= {FALSE_ALARM_GOAL:.0%})"
    )
    print(f"  A/B halves x{SHIFT}: {flagged_ab} of {rows} rows detected ({flagged_ab / rows:.1%})")


SPACED_DIR = Path(__file__).parent / "spaced" / "data"
SPACED_SHIFT = 0.90  # the known change applied to real base campaigns
HEADLINE = "fio.write.iops"


def spaced_store(db: Path | None) -> Store:
    """The recorded database, or exports imported into a scratch one: those of a
    directory given, else the checked-in ones."""
    if db is not None and not db.is_dir():
        return Store(db)
    scratch = Store(Path(tempfile.mkdtemp(prefix="fslab-spaced-")) / "spaced.db")
    for path in sorted((db or SPACED_DIR).glob("**/campaign-*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            import_campaign(scratch, json.load(handle))
    return scratch


def _scaled(data: CampaignData, metric: str, factor: float) -> CampaignData:
    """The campaign with one metric multiplied: a known change on real noise."""
    metrics = {
        pid: {k: v * factor if k == metric else v for k, v in values.items()}
        for pid, values in data.metrics.items()
    }
    return CampaignData(campaign=data.campaign, points=data.points, metrics=metrics)


def _flags(comparisons: Sequence[Comparison]) -> tuple[bool, bool]:
    """(any row flagged, the headline found worse at some point and better at none)."""
    rows = [row for c in comparisons for row in c.table.rows]
    head = [row for row in rows if row.metric == HEADLINE]
    found = any(r.verdict == "worse" for r in head) and not any(r.verdict == "better" for r in head)
    return any(row.verdict in cmp.FLAGGED for row in rows), found


@dataclass
class FamilyFigures:
    """One family's figures that the goals are judged on."""

    aa_flagged: int  # one campaign a side: A/A sets flagged with the noise model
    aa_sets: int
    groups: dict[int, GroupFigures]  # by M
    changes: dict[str, float]  # cost spec -> measured change of the headline
    covariates: tuple[str, ...]  # the host's slowdowns every run recorded (analyze.slowdown)


def report_spaced(db: Path | None, seed: int = 2024) -> None:
    """The figures of every recorded family: FAMILY-base campaigns and their FAMILY-cost*."""
    with spaced_store(db) as store:
        rows = [c for c in store.campaigns() if c.status == "complete"]
        families = sorted({c.name.removesuffix("-base") for c in rows if c.name.endswith("-base")})
        by_family: dict[str, FamilyFigures] = {}
        for family in families:
            family_rows = [c for c in rows if c.name.startswith(f"{family}-")]
            source = str(db) if db is not None else "bench/spaced/data"
            family_flagged, family_sets = _report_family(store, family, family_rows, source)
            if family_sets:
                by_family[family] = FamilyFigures(
                    family_flagged,
                    family_sets,
                    report_groups(store, family, family_rows, seed),
                    _cost_changes(store, family, family_rows),
                    _recorded([load_campaign(store, c.id) for c in family_rows]),
                )
        if len(families) > 1 and by_family:
            _print_over_families(by_family, "every family")
        if by_family:
            print_goals(by_family, "every family")
        for covariates, what in (
            ((slowdown.STEAL,), "steal"),
            ((slowdown.STEAL, slowdown.SPEED), "the speed probe"),
        ):
            chosen = {f: v for f, v in by_family.items() if set(covariates) <= set(v.covariates)}
            if chosen and len(chosen) < len(by_family):
                print(
                    f"families whose runs all recorded {what}, as fslab records every run now "
                    f"(the others predate it, and comparisons judge them without): "
                    f"{', '.join(chosen)}"
                )
                if len(chosen) > 1:
                    _print_over_families(chosen, f"the families with {what}")
                print_goals(chosen, f"the families with {what}")


def _recorded(campaigns: Sequence[CampaignData]) -> tuple[str, ...]:
    """The covariates of analyze.slowdown that every run of these campaigns recorded."""
    known = slowdown.KNOWN_COVARIATES
    return tuple(c for c in known if all(recorded(d, c) for d in campaigns))


def _grouped(by_family: Mapping[str, FamilyFigures]) -> dict[int, list[int]]:
    """M -> [A/A flagged, flagged with own means, sets], summed over the families."""
    grouped: dict[int, list[int]] = {}
    for figures in by_family.values():
        for m, fig in figures.groups.items():
            total = grouped.setdefault(m, [0, 0, 0])
            counts = (fig.aa, fig.own, fig.splits)
            grouped[m] = [t + c for t, c in zip(total, counts, strict=True)]
    return grouped


def _print_over_families(by_family: Mapping[str, FamilyFigures], which: str) -> None:
    flagged = sum(f.aa_flagged for f in by_family.values())
    sets = sum(f.aa_sets for f in by_family.values())
    print(
        f"A/A over {which}: {flagged} of {sets} comparison sets flagged "
        f"({flagged / sets:.1%}; goal <= 1 in 20 = 5%) with the noise model"
    )
    grouped = _grouped(by_family)
    for index, how in ((0, "as compare judges"), (1, "own means")):
        cells = "; ".join(f"M={m}: {_rate(v[index], v[2])}" for m, v in grouped.items())
        k, n = (sum(v[i] for v in grouped.values()) for i in (index, 2))
        print(f"grouped A/A over {which}, {how}: {cells}; all M: {_rate(k, n)}")


def print_goals(by_family: Mapping[str, FamilyFigures], which: str) -> None:
    """The goal of comparisons across time, judged on the figures above: A/A flags at most
    1 set in 20, and a real change of about 10% is found (at POWER_GOAL_SPACED, by the
    smallest group size that reaches it)."""
    flagged = sum(f.aa_flagged for f in by_family.values())
    sets = sum(f.aa_sets for f in by_family.values())
    grouped = _grouped(by_family)
    k, n = sum(v[0] for v in grouped.values()), sum(v[2] for v in grouped.values())
    aa_met = flagged <= sets / 20 and k <= n / 20
    print(
        f"goal over {which}, A/A at most 1 set in 20: one campaign a side {flagged} of {sets}, "
        f"groups {k} of {n}: {'met' if aa_met else 'MISSED'}"
    )
    low, high = ABOUT_10_PCT
    tens = [
        (family, name, change)
        for family, figures in by_family.items()
        for name, change in figures.changes.items()
        if low <= -change <= high
    ]
    if not tens:
        print(
            f"goal over {which}, a real change of about 10% found: no recorded cost of "
            f"-{low:.0%}..{high:.0%}"
        )
    for family, name, change in tens:
        parts, reached = [], None
        for m, fig in sorted(by_family[family].groups.items()):
            found, pairs = fig.found[name]
            shifted = f"{fig.shifted}/{fig.splits}" if fig.splits else "- (no A/A split)"
            parts.append(f"M={m} {found}/{pairs}, x{SPACED_SHIFT} {shifted}")
            if reached is None and pairs and found / pairs >= POWER_GOAL_SPACED:
                reached = m
        verdict = f"met with {reached} campaigns a side" if reached else "MISSED at every M"
        print(
            f"goal over {which}, a real change of about 10% found ({name}: {change:+.1%}; "
            f"found in {POWER_GOAL_SPACED:.0%} of sets or more): {'; '.join(parts)}: {verdict}"
        )


GROUP_SIZES = (1, 2, 3, 4, 6, 8, 10)  # A/A splits need 2M base campaigns (spaced8s: 30)
GROUP_SETS = 40  # sets per figure: every distinct one up to this many, else this many drawn
ENUMERATE_MAX = 200_000  # above this many sets, draw them without listing every one
POWER_GOAL_SPACED = 0.80  # the power the noise model plans for (NoisePoint.campaigns_to_find)
ABOUT_10_PCT = (0.05, 0.15)  # a recorded cost counts as "a 10% change" inside this band


def _rate(k: int, n: int) -> str:
    """'3/40 7.5% [2.6-19.9]': count, rate and its Wilson 95% interval in percent."""
    if n == 0:
        return "-"
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * low:.0f}-{100 * high:.0f}]"


def _drawn(sets: list[Any], rng: np.random.Generator) -> tuple[list[Any], bool]:
    """Every set, or GROUP_SETS of them drawn without replacement (True when drawn)."""
    if len(sets) <= GROUP_SETS:
        return sets, False
    picked = sorted(rng.choice(len(sets), GROUP_SETS, replace=False))
    return [sets[i] for i in picked], True


def aa_splits(
    base: Sequence[Any], cycle: Mapping[int, int], m: int, rng: np.random.Generator
) -> tuple[list[tuple[Any, Any]], bool]:
    """Two disjoint groups of m campaigns, no cycle on both sides, the group with the
    earliest campaign first: every split, or GROUP_SETS distinct ones drawn (True when
    drawn); 20 campaigns split 8 and 8 make 31 million, never listed."""
    if 2 * m > len(base):
        return [], False
    if math.comb(len(base), 2 * m) * math.comb(2 * m - 1, m - 1) <= ENUMERATE_MAX:
        out = []
        for chosen in combinations(base, 2 * m):
            for rest in combinations(chosen[1:], m - 1):
                a = (chosen[0], *rest)
                b = tuple(c for c in chosen if c not in a)
                if _apart(a, b, cycle):
                    out.append((a, b))
        return _drawn(out, rng)
    picked: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    for _ in range(100 * GROUP_SETS):  # bounded, for families whose splits mostly share a cycle
        if len(picked) == GROUP_SETS:
            break
        chosen = sorted(int(i) for i in rng.choice(len(base), 2 * m, replace=False))
        rest = sorted(int(i) for i in rng.choice(chosen[1:], m - 1, replace=False))
        a = (chosen[0], *rest)
        b = tuple(i for i in chosen if i not in a)
        if _apart([base[i] for i in a], [base[i] for i in b], cycle):
            picked.add((a, b))
    splits = [(tuple(base[i] for i in a), tuple(base[i] for i in b)) for a, b in sorted(picked)]
    return splits, True


def _apart(a: Sequence[Any], b: Sequence[Any], cycle: Mapping[int, int]) -> bool:
    """No cycle (hold of the machine lock) has campaigns on both sides."""
    return not {cycle[c.id] for c in a} & {cycle[c.id] for c in b}


def group_pairs(
    base: Sequence[Any], cost: Sequence[Any], m: int, rng: np.random.Generator
) -> tuple[list[tuple[Any, Any]], bool]:
    """(m base campaigns, m cost campaigns): every pair, or GROUP_SETS distinct ones drawn
    (True when drawn); 16 campaigns a side at m = 8 make 165 million, never listed."""
    total = math.comb(len(base), m) * math.comb(len(cost), m)
    if total <= ENUMERATE_MAX:
        return _drawn(list(product(combinations(base, m), combinations(cost, m))), rng)
    picked: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    while len(picked) < GROUP_SETS:
        a = tuple(sorted(int(i) for i in rng.choice(len(base), m, replace=False)))
        b = tuple(sorted(int(i) for i in rng.choice(len(cost), m, replace=False)))
        picked.add((a, b))
    return [(tuple(base[i] for i in a), tuple(cost[j] for j in b)) for a, b in sorted(picked)], True


def _group(store: Store, a: Sequence[Any], b: Sequence[Any], **kw: bool) -> GroupModel:
    return group_model(store, [c.id for c in a], [c.id for c in b], **kw)


@dataclass
class GroupFigures:
    """One family's grouped figures at one M: sets flagged or found, of how many."""

    aa: int
    own: int
    splits: int
    shifted: int
    found: dict[str, tuple[int, int]]  # cost spec -> (sets found, sets)


def report_groups(
    store: Store, family: str, rows: Sequence[Any], seed: int
) -> dict[int, GroupFigures]:
    """Print the grouped figures of one family; return them by M (A/A splits, x0.9 and
    each cost; an M with no A/A split, more than half the base campaigns, has the costs
    alone)."""
    base = [c for c in rows if c.name == f"{family}-base"]
    costs = sorted({c.name for c in rows if c.name.startswith(f"{family}-cost")})
    cycle = _cycles(rows)
    rng = np.random.default_rng(seed)
    print(
        f"  groups of M campaigns a side (k/n sets, rate [Wilson 95%]; * = {GROUP_SETS} "
        "sets drawn at random, else every distinct set); own means: the A/A splits judged "
        f"as if the sides were two specs; x{SPACED_SHIFT}: those with the candidate side's "
        "headline scaled"
    )
    header = [
        "M",
        "A/A flagged",
        "A/A own means",
        f"x{SPACED_SHIFT} found",
        *(f"{n} found" for n in costs),
    ]
    widths = [2, *(max(20, len(h)) for h in header[1:])]
    print("  " + " ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    out = {}
    by_level: list[str] = []  # per M: sets on one level / across a move, when levels moved
    for m in GROUP_SIZES:
        splits, drawn = aa_splits(base, cycle, m, rng)
        aa = own = shifted = 0
        levels: dict[str, list[Comparison]] = {"A/A": []}
        for a, b in splits:
            (compared,) = _group(store, a, b).comparisons()
            levels["A/A"].append(compared)
            aa += _flags([compared])[0]
            model = _group(store, a, b, own_means=True)
            own += _flags(model.comparisons())[0]
            scaled = [_scaled(d, HEADLINE, SPACED_SHIFT) for d in model.candidate]
            shifted += _flags(model.comparisons(scaled))[1]
        cells = [
            _rate(aa, len(splits)) + "*" * drawn,
            *(_rate(k, len(splits)) for k in (own, shifted)),
        ]
        found_by_cost = {}
        for name in costs:
            cost = [c for c in rows if c.name == name]
            pairs, drawn = group_pairs(base, cost, m, rng)
            levels[name] = [c for a, b in pairs for c in _group(store, a, b).comparisons()]
            found = sum(_flags([c])[1] for c in levels[name])
            found_by_cost[name] = (found, len(pairs))
            cells.append(_rate(found, len(pairs)) + "*" * drawn)
        if splits or any(pairs for _, pairs in found_by_cost.values()):
            out[m] = GroupFigures(aa, own, len(splits), shifted, found_by_cost)
        print("  " + " ".join(c.ljust(w) for c, w in zip([str(m), *cells], widths, strict=True)))
        counts = [f"{what} {_on_levels(c)}" for what, c in levels.items() if _on_levels(c)]
        if counts:
            by_level.append(f"M={m} " + ", ".join(counts))
    if by_level:
        print(
            "  sets on one level (a mean per level) / across a level move (warned): "
            + "; ".join(by_level)
        )
    return out


def _on_levels(comparisons: Sequence[Comparison]) -> str:
    """'12/28': sets on one level judged with a mean per level / sets across a move; ''
    when no set's baselines moved."""
    checked = [c.levels for c in comparisons if c.levels is not None]
    if not checked:
        return ""
    return f"{sum(c.by_level for c in checked)}/{sum(c.on is None for c in checked)}"


def _report_family(store: Store, family: str, rows: list[Any], source: str) -> tuple[int, int]:
    """Print one family's figures; return its A/A sets flagged with the model, and its sets."""
    base = [c for c in rows if c.name == f"{family}-base"]
    costs = sorted({c.name for c in rows if c.name.startswith(f"{family}-cost")})
    if len(base) < MIN_CAMPAIGNS + 1:
        print(f"{family}: {len(base)} base campaign(s), too few for the figures")
        return 0, 0
    data = {c.id: load_campaign(store, c.id) for c in rows}
    when = {c.id: datetime.fromisoformat(c.started_at) for c in rows}
    span = f"{min(when.values()):%Y-%m-%d %H:%M} .. {max(when.values()):%H:%M} UTC"
    counts = ", ".join(f"{sum(c.name == n for c in rows)} {n}" for n in costs)
    runs = sorted({len(data[c.id].ok_points()) for c in base})
    print(
        f"{family} campaigns ({source}): {len(base)} {family}-base "
        f"({'/'.join(map(str, runs))} runs each), {counts}, {span}"
    )
    model = noise_model(store, base[-1], [HEADLINE])
    for (point, _), noise in model.points.items():
        needed = noise.runs_to_find(1 - SPACED_SHIFT)
        print(
            f"  model at {cmp.point_label(point)}: between-campaign CV "
            f"{noise.between_cv_pct:.1f}%, within {noise.within_cv_pct:.1f}% "
            f"({noise.campaigns} campaigns); runs per campaign to find -10% with 80% power: "
            f"{needed or 'none suffice (drift alone hides it)'}; campaigns a side of "
            f"{noise.runs // noise.campaigns} runs for it (groups): "
            f"{noise.campaigns_to_find(1 - SPACED_SHIFT, noise.runs // noise.campaigns) or '> 64'}"
        )
    # the spec's series as comparisons see it: oldest first, slowdowns out (analyze.slowdown)
    series, fit = take_out_slowdown(
        sorted(
            (load_campaign(store, c.id) for c in baseline_campaigns(store, base[-1])),
            key=lambda d: (d.campaign.started_at, d.id),
        )
    )
    _report_levels(series)
    _report_slowdown(series, fit)
    cycle = _cycles(rows)
    print(f"  {len(set(cycle.values()))} cycles (one hold of the machine lock each)")
    aa_pairs = [
        (a, b) for i, a in enumerate(base) for b in base[i + 1 :] if cycle[a.id] != cycle[b.id]
    ]
    gaps = [abs(when[b.id] - when[a.id]).total_seconds() / 60 for a, b in aa_pairs]
    print(f"  A/A pairs from different cycles: {min(gaps):.0f} to {max(gaps):.0f} min apart")
    aa_model = aa_plain = power_10 = unsteady_10 = 0
    aa_levels: list[Comparison] = []
    for a, b in aa_pairs:
        (compared,) = compare_with_noise(store, a.id, b.id)
        aa_levels.append(compared)
        aa_model += _flags([compared])[0]
        aa_plain += _flags(campaign_comparisons(data[a.id], data[b.id]))[0]
        # x0.9: B's headline scaled, judged with the model `fslab compare A B` would use
        names = select_metrics([data[a.id]])
        model = campaign_model(store, data[a.id], data[b.id], names)
        shifted = _scaled(model.b, HEADLINE, SPACED_SHIFT)  # B as judged (slowdowns out)
        judged = model.comparisons(candidate=shifted)
        power_10 += _flags(judged)[1]
        unsteady_10 += _unsteady(judged)
    n = len(aa_pairs)
    print(
        f"  A/A: {aa_model} of {n} comparison sets flagged ({aa_model / n:.1%}; goal <= 1 in "
        f"20 = 5%) with the noise model; {aa_plain} of {n} ({aa_plain / n:.1%}) judged on "
        f"the runs inside each campaign{_level_counts(aa_levels)}"
        f"{_unsteady_count(sum(_unsteady([c]) for c in aa_levels))}"
    )
    print(
        f"  power, headline x{SPACED_SHIFT} on real base campaigns: found in {power_10} of "
        f"{n} sets ({power_10 / n:.1%}){_unsteady_count(unsteady_10)}"
    )
    for name in costs:
        cost = [c for c in rows if c.name == name]
        ab_pairs = [(a, b) for a in base for b in cost]
        compared = [c for a, b in ab_pairs for c in compare_with_noise(store, a.id, b.id)]
        found = sum(_flags([c])[1] for c in compared)
        print(
            f"  power, real change ({name}: {_real_change(data, base, cost)}): found in "
            f"{found} of {len(ab_pairs)} sets ({found / len(ab_pairs):.1%}), "
            f"{len(base)} x {len(cost)} campaigns{_level_counts(compared)}"
            f"{_unsteady_count(sum(_unsteady([c]) for c in compared))}"
        )
    return aa_model, n


def _unsteady(comparisons: Sequence[Comparison]) -> bool:
    """Whether the set left a row unjudged because the candidate's runs spread out
    (analyze.noise: the candidate was unsteady)."""
    return any(row.unsteady for c in comparisons for row in c.table.rows)


def _unsteady_count(sets: int) -> str:
    """'; 57 with the candidate unsteady (rows not judged)', or '' for none."""
    return f"; {sets} with the candidate unsteady (rows not judged)" if sets else ""


def _report_slowdown(adjusted: Sequence[CampaignData], fit: SlowdownFit | None) -> None:
    """Whether comparisons take the host's slowdowns out of the spec's headline
    (analyze.slowdown), and the model of its campaigns with them taken out."""
    if fit is None:
        print(
            f"  host slowdowns ({', '.join(slowdown.COVARIATES)}): not taken out (runs "
            f"without them, or no slowdown with them)"
        )
        return
    print(f"  {fit.describe()}")
    model = fit_model(adjusted, [HEADLINE], host="", fingerprint="")
    for (point, _), noise in model.points.items():
        print(
            f"  model at {fit.short_at()} at {cmp.point_label(point)}: between-campaign CV "
            f"{noise.between_cv_pct:.1f}%, within {noise.within_cv_pct:.1f}% "
            f"({noise.campaigns} campaigns); campaigns a side of {noise.runs // noise.campaigns} "
            f"runs to find -10% (groups): "
            f"{noise.campaigns_to_find(1 - SPACED_SHIFT, noise.runs // noise.campaigns) or '> 64'}"
        )


def _report_levels(series: Sequence[CampaignData]) -> None:
    """The level moves of the spec's series, as comparisons find them (analyze.levels), and
    the model with a mean per level that comparisons on one level are judged with."""
    check = level_check(series, series[-1:], series[-1:])
    if check is None:
        print(f"  level moves of the spec's {len(series)} campaigns (as `fslab series`): none")
        return
    moves = "; ".join(m.describe() for m in check.moves)
    print(f"  level moves of the spec's {len(series)} campaigns (as `fslab series`): {moves}")
    blocks = {d.id: check.level_of(d.campaign.started_at) for d in series}
    first = series[0].campaign
    model = fit_model(series, [HEADLINE], host=first.hostname or "", fingerprint="", blocks=blocks)
    for (point, _), noise in model.points.items():
        runs = noise.runs // noise.campaigns
        print(
            f"  model with a mean per level at {cmp.point_label(point)}: between-campaign CV "
            f"{noise.between_cv_pct:.1f}%, within {noise.within_cv_pct:.1f}% "
            f"({noise.campaigns} campaigns, {len(check.levels)} levels); campaigns a side of "
            f"{runs} runs to find -10% (groups): "
            f"{noise.campaigns_to_find(1 - SPACED_SHIFT, runs) or '> 64'}"
        )


def _level_counts(comparisons: Sequence[Comparison]) -> str:
    """'; 40 on one level (a mean per level), 51 across a level move (warned)', or ''."""
    checked = [c.levels for c in comparisons if c.levels is not None]
    if not checked:
        return ""
    by_level = sum(c.by_level for c in checked)
    across = sum(c.on is None for c in checked)
    rest = len(checked) - by_level - across
    few = f", {rest} on a level of too few baselines" if rest else ""
    return (
        f"; {by_level} on one level (a mean per level), {across} across a level move (warned){few}"
    )


def _cycles(rows: Sequence[Any]) -> dict[int, int]:
    """Campaign id -> cycle: campaigns run back to back (< 30 s apart) share a cycle."""
    out: dict[int, int] = {}
    number, previous_end = 0, None
    for row in sorted(rows, key=lambda c: c.started_at):
        start = datetime.fromisoformat(row.started_at)
        if previous_end is not None and (start - previous_end).total_seconds() > 30:
            number += 1
        out[row.id] = number
        previous_end = datetime.fromisoformat(row.ended_at or row.started_at)
    return out


def _cost_changes(store: Store, family: str, rows: Sequence[Any]) -> dict[str, float]:
    """Each cost spec's measured change of the headline, over the family's points: the
    ratio of geometric means of campaign medians, minus 1, averaged in logs."""
    base = [c for c in rows if c.name == f"{family}-base"]
    data = {c.id: load_campaign(store, c.id) for c in rows}
    out = {}
    for name in sorted({c.name for c in rows if c.name.startswith(f"{family}-cost")}):
        cost = [c for c in rows if c.name == name]
        logs = [math.log1p(v) for v in _point_changes(data, base, cost).values()]
        out[name] = math.expm1(sum(logs) / len(logs))
    return out


def _real_change(data: Mapping[int, CampaignData], base: Sequence[Any], cost: Sequence[Any]) -> str:
    """The measured change per point, as printed."""
    return ", ".join(
        f"{change * 100:+.1f}% at {label}"
        for label, change in _point_changes(data, base, cost).items()
    )


def _point_changes(
    data: Mapping[int, CampaignData], base: Sequence[Any], cost: Sequence[Any]
) -> dict[str, float]:
    """The measured change: ratio of geometric means of campaign medians, minus 1, by
    point label."""
    out = {}
    for point in samples(data[base[0].id], [HEADLINE]):

        def level(rows: Sequence[Any], point: Any = point) -> float:
            medians = [
                float(np.median(samples(data[c.id], [HEADLINE])[point][HEADLINE]))
                for c in rows
                if point in samples(data[c.id], [HEADLINE])
            ]
            return float(np.exp(np.mean(np.log(medians))))

        label = cmp.point_label(tuple(kv for kv in point if kv[0] != "config"))
        out[label] = level(cost) / level(base) - 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=150, help="simulated sweeps per figure")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--real-db", type=Path, help="a results database with repeated runs")
    parser.add_argument("--real-campaign", type=int, help="campaign id in --real-db")
    parser.add_argument(
        "--record-real",
        action="store_true",
        help="record real runs first (as root: 2 points x 32 repetitions, ~3 min)",
    )
    parser.add_argument("--real-splits", type=int, default=50, help="random splits of real runs")
    parser.add_argument(
        "--spaced",
        type=Path,
        help="database of spaced campaigns, or a directory of their exports (default: the "
        "checked-in ones, bench/spaced/data)",
    )
    parser.add_argument(
        "--spaced-only", action="store_true", help="only the spaced-campaign figures"
    )
    parser.add_argument(
        "--covariates",
        default=",".join(slowdown.COVARIATES),
        help="the host's slowdowns comparisons take out (analyze.slowdown): 'steal' as fslab "
        "does (the default), 'steal,speed' with the speed probe too, 'none'",
    )
    args = parser.parse_args(argv)
    chosen = tuple(c for c in args.covariates.split(",") if c and c != "none")
    if any(c not in slowdown.KNOWN_COVARIATES for c in chosen):
        parser.error(f"--covariates: each of {', '.join(slowdown.KNOWN_COVARIATES)} or none")
    slowdown.COVARIATES = chosen  # every comparison below judges with these
    print(f"host slowdowns comparisons may take out: {', '.join(chosen) or 'none'}")
    started = time.monotonic()
    if args.spaced_only:
        report_spaced(args.spaced, args.seed)
        print(f"took {time.monotonic() - started:.0f} s")
        return 0
    print(
        f"{args.tables} simulated {POINTS}-point sweeps per figure, "
        f"{N_RESAMPLES} bootstrap resamples per row, seed {args.seed}"
    )
    figures = plan(args.tables)
    seeds = np.random.SeedSequence(args.seed).spawn(len(figures))
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = list(pool.map(run_figure, zip(figures, seeds, strict=True)))
    report(dict(zip(figures, results, strict=True)), args.tables)
    if args.real_db or args.record_real:
        report_real(args)
    else:
        print("real runs: skipped (give --record-real, or --real-db and --real-campaign)")
    report_spaced(args.spaced, args.seed)
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
