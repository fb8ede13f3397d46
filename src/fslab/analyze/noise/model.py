"""Between-campaign noise: how far campaigns of one spec spread from one another.

Repetitions inside one campaign are interleaved, so their spread misses the
drift of the machine between campaigns (page cache, thermal state, other
tenants, the hour of the day). Two campaigns of the same spec run twenty
minutes apart differ by more than their repetitions say, and a test that
treats repetitions as independent samples of one condition flags that drift
as a change.

The model, per host, spec and metric (and sweep point), is one-way random
effects on the log scale with the campaign as a block:

    log(value_ij) = mu + c_j + e_ij,   c_j ~ N(0, between_var),  e_ij ~ N(0, within_var)

fitted by REML with statsmodels' MixedLM on every stored campaign that
repeats the spec (analyze.history.baselines finds them; A among them, B left out).
Campaign B is then compared with the spec's level, the mean of the K
baseline campaigns' mean logs: the difference has variance

    between_var x (1 + 1/K) + within_var x (1/n_B + mean(1/n_j) / K)

with Satterthwaite's degrees of freedom (the between part is known from K
campaigns, K - 1 degrees of freedom; the within part from the runs), and a
t test and interval on it. Rows are judged by analyze.campaign.verdicts's rules
(judge()): the same Benjamini-Hochberg family, the same magnitude gate, with
the campaign mean's total spread in place of the run-to-run CV.

Groups of campaigns (`fslab compare 12,14,16 13,15,17`): each side's level
is the mean of its K campaigns' mean logs, and the difference has variance

    between_var x (1/K_A + 1/K_B) + within_var x (mean_A(1/n_j)/K_A + mean_B(1/n_j)/K_B)

so the drift between campaigns shrinks with the campaigns a side, as runs
cannot make it. The sides usually differ in spec (a mount option changed),
so between_var is fitted with a fixed level per block (each side, and the
other stored campaigns of each side's spec) and the campaign as the random
effect: each campaign's effect is measured around its own block's mean.

When the baselines' own level moved (analyze.noise.levels: their headline series
has a change point) the same blocks give each level its own mean: between_var
is the drift around each level's mean over every baseline (campaigns minus
levels degrees of freedom), and a candidate on one level is compared with
that level's mean, K being its campaigns.

Nothing is stored besides the campaigns: the model is derived from them when
a comparison asks, which takes milliseconds, so it always reflects every
campaign in the database (docs/statistics.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from fslab.analyze.campaign import stats
from fslab.analyze.campaign.verdicts import CONFIDENCE, ComparisonRow, unjudged_row
from fslab.base.vocab import PointKey
from fslab.spec.model import Spec
from fslab.store.db import CampaignRow

MIN_CAMPAIGNS = 3  # baselines below which no between-campaign variance is estimated
MIN_RUNS_PER_CAMPAIGN = 2  # a campaign with fewer runs at a point says nothing about within
TEST_NAME = "mixed model (campaign block)"
#: The degrees of freedom of the median campaign spread (PointNoise.steady_within_var),
#: as a share of the pooled spread's: a median is noisier than a mean, and at 0.7 the
#: F test of unsteady_p holds its 1% rate on steady runs for 5 to 30 campaigns of 5
#: runs (tests/test_unsteady.py simulates it).
STEADY_DF_SHARE = 0.7

#: Spec fields that do not change what is measured: dropped from the fingerprint.
#: sweep and run.repeat go too: the model is per point, and a campaign of more
#: repetitions (or fewer sweep points) measures the same condition at each point.
_IGNORED_TOP = ("name", "description", "reported", "quick", "sweep")
_IGNORED_RUN = ("repeat", "timeout_factor", "setup_timeout")


def spec_fingerprint(spec: Spec) -> str:
    """A short hash of the validated spec, minus what names it or does not change a point.

    Hashed from the model with its defaults filled in, so a campaign stored by
    an older fslab (whose JSON lacks fields added since) has the fingerprint of
    the same spec run today.
    """
    kept = {k: v for k, v in spec.model_dump(mode="json").items() if k not in _IGNORED_TOP}
    if isinstance(kept.get("run"), Mapping):
        kept["run"] = {k: v for k, v in kept["run"].items() if k not in _IGNORED_RUN}
    if isinstance(kept.get("filesystems"), list):
        kept["filesystems"] = [
            {k: v for k, v in fs.items() if k != "description"} if isinstance(fs, Mapping) else fs
            for fs in kept["filesystems"]
        ]
    text = json.dumps(kept, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def host_key(campaign: CampaignRow) -> str:
    """The machine as booted: host and kernel (a different kernel is a different host).

    The host is the name the campaign is stored under (a fleet's inventory
    name, kept by export and import), else the hostname it recorded: fleet
    hosts cloned from one image share a hostname but are different machines.
    """
    host = campaign.hostname or campaign.host.fact("hostname") or "?"
    return f"{host} {campaign.host.fact('kernel_release') or '?'}"


@dataclass(frozen=True)
class PointNoise:
    """Variance components of log(metric) at one point, from `campaigns` campaigns."""

    campaigns: int
    runs: int
    between_var: float  # of a campaign's level, log scale
    within_var: float  # of one run around its campaign's level, log scale
    level: float = 0.0  # mean over the campaigns of their mean log value
    inv_runs: float = 1.0  # mean over the campaigns of 1 / runs
    blocks: int = 1  # fixed levels the campaigns spread around (groups: sides and baselines)
    # the campaigns behind `level` and `inv_runs` when they are one block's (the baselines'
    # level moved: the level of the reference's block, analyze.noise.levels); 0: all campaigns
    level_campaigns: int = 0
    # the spread of a run in a typical campaign, log scale: the median of the campaigns'
    # variances, each scaled by its chi-square median so that steady runs give within_var;
    # campaigns the machine slowed part-way widen the pooled within_var, not this
    steady_within_var: float = math.nan

    @property
    def level_k(self) -> int:
        """K: the baseline campaigns whose mean is the level."""
        return self.level_campaigns or self.campaigns

    @property
    def between_cv_pct(self) -> float:
        return 100.0 * math.sqrt(self.between_var)

    @property
    def within_cv_pct(self) -> float:
        return 100.0 * math.sqrt(self.within_var)

    def mean_var(self, runs: int) -> float:
        """Variance of one campaign's mean log value over `runs` runs."""
        return self.between_var + self.within_var / max(runs, 1)

    def df(self, *runs: int) -> float:
        """Satterthwaite degrees of freedom of a difference of campaign means."""
        between = len(runs) * self.between_var
        within = self.within_var * sum(1.0 / max(n, 1) for n in runs)
        return self.satterthwaite(between, within)

    def satterthwaite(self, between: float, within: float) -> float:
        """Degrees of freedom of a variance `between + within` made of the two components
        (between_var known from campaigns - blocks degrees, within_var from the runs)."""
        df_between = max(self.campaigns - self.blocks, 1)
        df_within = max(self.runs - self.campaigns, 1)
        denominator = between**2 / df_between + within**2 / df_within
        return (between + within) ** 2 / denominator if denominator > 0 else float(df_within)

    def level_var(self) -> float:
        """Variance of the level: the mean of the baseline campaigns' mean logs."""
        return (self.between_var + self.within_var * self.inv_runs) / self.level_k

    def versus_level(self, runs: int) -> tuple[float, float]:
        """(variance, Satterthwaite df) of one campaign's mean log minus the level."""
        between = self.between_var * (1.0 + 1.0 / self.level_k)
        within = self.within_var * (1.0 / max(runs, 1) + self.inv_runs / self.level_k)
        return between + within, self.satterthwaite(between, within)

    def unsteady_p(self, logs: np.ndarray) -> float:
        """p of an F test that one campaign's runs (log values) spread more than the runs
        of a typical campaign of the spec do (steady_within_var; NaN: not testable)."""
        median = math.isfinite(self.steady_within_var)
        df_within = (STEADY_DF_SHARE if median else 1.0) * (self.runs - self.campaigns)
        if len(logs) < MIN_RUNS_PER_CAMPAIGN or df_within < 1 or self.steady_var <= 0:
            return math.nan
        spread = float(np.var(logs, ddof=1))
        return float(sps.f.sf(spread / self.steady_var, len(logs) - 1, df_within))

    @property
    def steady_var(self) -> float:
        """The spread unsteady_p tests against: the median campaign's, else the pooled."""
        steady = self.steady_within_var
        return steady if math.isfinite(steady) else self.within_var

    @property
    def steady_cv_pct(self) -> float:
        return 100.0 * math.sqrt(self.steady_var)

    def runs_to_find(
        self, change: float, *, alpha: float = stats.ALPHA, power: float = 0.8, most: int = 64
    ) -> int | None:
        """Runs per candidate campaign for a t test against the level to find a change
        of `change` (0.10: 10%) with the given power; None when the drift between
        campaigns alone hides it at `most` runs (more campaigns are needed, not runs).
        Normal approximation, the baselines as they are."""
        effect = abs(math.log1p(-change)) if change < 1 else abs(math.log(change))
        z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
        for runs in range(2, most + 1):
            if effect / math.sqrt(self.versus_level(runs)[0]) >= z:
                return runs
        return None

    def campaigns_to_find(
        self,
        change: float,
        runs: int,
        *,
        alpha: float = stats.ALPHA,
        power: float = 0.8,
        most: int = 64,
    ) -> int | None:
        """Campaigns a side (of `runs` runs each) for a comparison of groups to find a
        change of `change` with the given power: the variance of the difference is
        2 (between + within / runs) / K. Normal approximation; None beyond `most`."""
        effect = abs(math.log1p(-change)) if change < 1 else abs(math.log(change))
        z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))
        for k in range(1, most + 1):
            if effect / math.sqrt(2.0 * self.mean_var(runs) / k) >= z:
                return k
        return None

    def to_dict(self) -> dict[str, float | int]:
        return {
            "campaigns": self.campaigns,
            "runs": self.runs,
            "between_cv_pct": self.between_cv_pct,
            "within_cv_pct": self.within_cv_pct,
        }


@dataclass
class NoiseModel:
    """The fitted components of one (host, spec), per (point, metric), and what backs them."""

    host: str
    fingerprint: str
    baseline_ids: list[int]  # the campaigns the fit used
    points: dict[tuple[PointKey, str], PointNoise] = field(default_factory=dict)

    def get(self, point: PointKey, metric: str) -> PointNoise | None:
        return self.points.get((point, metric))

    @property
    def calibrated(self) -> bool:
        return bool(self.points)

    def describe(self) -> str:
        """One line: which model, and how many baselines back it."""
        if not self.calibrated:
            return (
                f"no between-campaign noise model: {len(self.baseline_ids)} earlier "
                f"campaign(s) of this spec on {self.host} (needs {MIN_CAMPAIGNS})"
            )
        counts = sorted({noise.campaigns for noise in self.points.values()})
        backing = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        return (
            f"noise model: mixed model with the campaign as a block (statsmodels MixedLM, "
            f"REML), {backing} baseline campaigns of spec {self.fingerprint} on {self.host}"
        )


def fit_point_noise(
    values_by_campaign: Mapping[int, Sequence[float]],
    blocks: Mapping[int, Hashable] | None = None,
    reference: Hashable | None = None,
) -> PointNoise | None:
    """REML variance components of log(values), the campaign as a block; None if too few.

    `blocks` (campaign id -> block) gives each block its own fixed level, so a
    campaign's effect is measured around its block's mean (groups of
    campaigns of two specs; baselines whose level moved); without it every
    campaign shares one level. `reference`: the block whose campaigns make
    the level a candidate is compared with (None: every campaign's).
    Campaigns with fewer than MIN_RUNS_PER_CAMPAIGN runs are left out; so are
    non-positive values (no logarithm). The between-campaign variance needs
    MIN_CAMPAIGNS - 1 degrees of freedom (campaigns minus blocks). A fit that
    does not converge leaves the between-campaign variance at the
    method-of-moments estimate, which is what REML gives for balanced data.
    """
    groups = {
        cid: np.log(np.asarray([v for v in values if v > 0 and math.isfinite(v)], dtype=float))
        for cid, values in values_by_campaign.items()
    }
    groups = {cid: logs for cid, logs in groups.items() if len(logs) >= MIN_RUNS_PER_CAMPAIGN}
    block_of = {cid: (blocks or {}).get(cid) for cid in groups}
    names = list(dict.fromkeys(block_of.values()))
    if len(groups) - len(names) < MIN_CAMPAIGNS - 1:
        return None
    endog = np.concatenate(list(groups.values()))
    labels = np.concatenate([np.full(len(logs), cid) for cid, logs in groups.items()])
    per_run = np.concatenate(
        [np.full(len(logs), names.index(block_of[c])) for c, logs in groups.items()]
    )
    exog = (per_run[:, None] == np.arange(len(names))[None, :]).astype(float)
    between, within = _mixedlm(endog, labels, exog)
    if not (math.isfinite(between) and math.isfinite(within)):
        between, within = _moments(
            [[logs for c, logs in groups.items() if block_of[c] == name] for name in names]
        )
    level_of = [logs for c, logs in groups.items() if reference is None or block_of[c] == reference]
    if not level_of:
        return None
    return PointNoise(
        campaigns=len(groups),
        runs=len(endog),
        between_var=max(between, 0.0),
        within_var=max(within, 0.0),
        level=float(np.mean([logs.mean() for logs in level_of])),
        inv_runs=float(np.mean([1.0 / len(logs) for logs in level_of])),
        blocks=len(names),
        level_campaigns=len(level_of) if reference is not None else 0,
        steady_within_var=median_spread(list(groups.values())),
    )


def median_spread(groups: Sequence[np.ndarray]) -> float:
    """The median of the groups' variances, each over its chi-square median per degree of
    freedom (a consistent estimate of a common variance that a few wide groups do not move)."""
    scaled = [
        float(np.var(logs, ddof=1)) / (sps.chi2.median(len(logs) - 1) / (len(logs) - 1))
        for logs in groups
    ]
    return float(np.median(scaled)) if scaled else math.nan


def _mixedlm(endog: np.ndarray, groups: np.ndarray, exog: np.ndarray) -> tuple[float, float]:
    import statsmodels.api as sm  # slow to import: only when a model is fitted

    fixed = exog @ np.linalg.lstsq(exog, endog, rcond=None)[0]
    if float(np.var(endog - fixed)) == 0.0:
        return 0.0, 0.0
    model = sm.MixedLM(endog, exog, groups=groups)
    # L-BFGS's gradient steps can reach a singular X'V^-1X with several fixed means
    # (groups of campaigns); Powell's search, without gradients, does not
    for methods in (["lbfgs", "powell"], ["powell"]):
        with warnings.catch_warnings():
            # boundary fits (no between-campaign variance) warn but are valid estimates
            warnings.simplefilter("ignore")
            try:
                fit = model.fit(reml=True, method=methods)
            except (np.linalg.LinAlgError, ValueError):
                continue
        return float(np.asarray(fit.cov_re)[0, 0]), float(fit.scale)
    return math.nan, math.nan


def _moments(blocks: Sequence[Sequence[np.ndarray]]) -> tuple[float, float]:
    """ANOVA estimates (between, within) of the variance components, campaigns
    nested in blocks (one block: the one-way ANOVA)."""
    groups = [g for block in blocks for g in block]
    sizes = np.array([len(g) for g in groups], dtype=float)
    within = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / (sizes.sum() - len(groups)))
    df_between = len(groups) - len(blocks)
    msb = n0_sum = 0.0
    for block in blocks:
        block_sizes = np.array([len(g) for g in block], dtype=float)
        means = np.array([g.mean() for g in block])
        grand = float((block_sizes * means).sum() / block_sizes.sum())
        msb += float((block_sizes * (means - grand) ** 2).sum())
        n0_sum += block_sizes.sum() - (block_sizes**2).sum() / block_sizes.sum()
    return (msb / df_between - within) / (n0_sum / df_between), within


def model_row(
    point: PointKey,
    metric: str,
    cand_values: Sequence[float],
    noise: PointNoise,
) -> ComparisonRow | None:
    """The candidate campaign against the level of the baseline campaigns (verdict: judge()).

    The baseline is the spec's level on the host, the mean of its K baseline
    campaigns' mean logs, known to (between + within/n)/K; the candidate is
    one campaign, off that level by between + within/n_B. So a comparison
    has the between-campaign drift once, not twice, and more baselines make
    it sharper. The base columns describe the baselines: the level as the
    geometric mean, their runs, and the total spread of one run. None when a
    value is not positive (no logarithm: the caller falls back to the test
    on runs).

    A candidate whose runs spread more than the baselines' runs do (F test,
    analyze.campaign.verdicts.UNSTEADY_P) is marked unsteady and not judged: on a host
    whose speed dips for tens of seconds with no steal to show it, the runs
    caught in a dip spread out and pull the campaign's mean by a fifth, which
    no between-campaign variance that leaves power for a 10% change covers
    (docs/statistics.md, spaced8s).
    """
    b = np.asarray([v for v in cand_values if math.isfinite(v)], dtype=float)
    if len(b) == 0 or (b <= 0).any():
        return None
    diff = float(np.log(b).mean() - noise.level)
    p, low, high = _t_test(diff, *noise.versus_level(len(b)))
    level = math.exp(noise.level)
    row = unjudged_row(
        point,
        metric,
        np.asarray([level]),
        b,
        ratio=math.exp(diff),
        ci=(low, high),
        p_raw=p,
        test=TEST_NAME,
        # the spread of a campaign's mean, between-campaign drift included: the gate's CV
        baseline_cv=math.sqrt(noise.mean_var(len(b))),
    )
    row.n_baseline = noise.runs
    row.sd_pct_baseline = 100.0 * math.sqrt(noise.between_var + noise.within_var)
    row.unsteady_p = noise.unsteady_p(np.log(b))
    return row


@dataclass(frozen=True)
class SideLevel:
    """One side of a group comparison at one point: its campaigns' level."""

    campaigns: int  # K
    level: float  # mean over the K campaigns of their mean log value
    inv_runs: float  # mean over the K campaigns of 1 / runs
    runs: np.ndarray  # every run of the side, pooled (the table's mean and spread)

    @classmethod
    def of(cls, values_by_campaign: Mapping[int, Sequence[float]]) -> SideLevel | None:
        """None when a value is not positive (no logarithm) or a side has no runs."""
        logs = [np.log(np.asarray(v, dtype=float)) for v in values_by_campaign.values() if len(v)]
        pooled = np.concatenate(logs) if logs else np.asarray([])
        if not logs or not np.isfinite(pooled).all():
            return None
        return cls(
            campaigns=len(logs),
            level=float(np.mean([g.mean() for g in logs])),
            inv_runs=float(np.mean([1.0 / len(g) for g in logs])),
            runs=np.exp(pooled),
        )

    def level_var(self, noise: PointNoise) -> tuple[float, float]:
        """(between, within) parts of the variance of this side's level."""
        return (
            noise.between_var / self.campaigns,
            noise.within_var * self.inv_runs / self.campaigns,
        )


def group_row(
    point: PointKey,
    metric: str,
    base: Mapping[int, Sequence[float]],
    cand: Mapping[int, Sequence[float]],
    noise: PointNoise,
) -> ComparisonRow | None:
    """The level of the candidate campaigns against the level of the baseline campaigns.

    Each side's level is the mean of its campaigns' mean logs; the difference
    has variance between (1/K_A + 1/K_B) + within (mean_A(1/n)/K_A +
    mean_B(1/n)/K_B), Satterthwaite's degrees of freedom, a t test and a 95%
    interval, the ratio being of geometric means. The base and cand columns
    are the two levels (geometric means); n, mean and spread are of the runs
    pooled. The gate's CV is the spread of the candidate side's level, which
    for one campaign is model_row's (one campaign mean's spread). None when a
    value is not positive (the caller falls back to the test on runs).
    """
    a, b = SideLevel.of(base), SideLevel.of(cand)
    if a is None or b is None:
        return None
    between_a, within_a = a.level_var(noise)
    between_b, within_b = b.level_var(noise)
    between, within = between_a + between_b, within_a + within_b
    p, low, high = _t_test(
        b.level - a.level, between + within, noise.satterthwaite(between, within)
    )
    row = unjudged_row(
        point,
        metric,
        a.runs,
        b.runs,
        ratio=math.exp(b.level - a.level),
        ci=(low, high),
        p_raw=p,
        test=TEST_NAME,
        baseline_cv=math.sqrt(between_b + within_b),
    )
    row.median_baseline, row.median_candidate = math.exp(a.level), math.exp(b.level)
    return row


def _t_test(diff: float, var: float, df: float) -> tuple[float, float, float]:
    """Two-sided p and the 95% interval (as ratios) of a log difference."""
    se = math.sqrt(var)
    if se > 0:
        p = float(2.0 * sps.t.sf(abs(diff) / se, df))
        half = float(sps.t.ppf(0.5 + CONFIDENCE / 2.0, df)) * se
    else:
        p, half = (1.0 if diff == 0 else 0.0), 0.0
    return p, math.exp(diff - half), math.exp(diff + half)
