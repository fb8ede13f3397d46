"""One comparison row's cells, whatever prints them.

`fslab compare` prints a comparison as a rich table (medians, ratio, interval,
p, verdict); the text and HTML reports print it in the kernel test robot's
form (mean ± %stddev, %change, mark). Both are columns picked from the same
`ComparisonCells`, built here once, so a metric has one label, one unit and
one verdict word in every output:

- a profile share (the fraction of samples with a function on the stack) is
  in percent, its change in percentage points; a call-chain share
  (profile.inclusive.FUNCTION) is named by its function, as perf and the
  robot print it;
- a value that is not a number (no runs on a side) is "-".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.stats import ALPHA
from fslab.analyze.campaign.verdicts import ComparisonRow, Verdict
from fslab.base.format import (
    format_change_pct,
    format_p,
    format_pct,
    format_points,
    format_ratio,
    format_share,
)
from fslab.base.vocab import point_label
from fslab.workload.registry import metric_label

CALL_CHAIN_SHARE = "profile.inclusive."
MARKS: dict[Verdict, str] = {
    "better": "+",
    "worse": "-",
    "changed": "~",
    "no change shown": "=",
    "needs more runs": "?",
}
MARK_LEGEND = (
    f"verdict marks: + better, - worse (BH-adjusted p < {ALPHA:g} and a change beyond "
    "the run-to-run noise), ~ changed (evidence metric), = no change shown, "
    "? needs more runs"
)
SHARE_LEGEND = (
    "Rows in % are perf-profile call-chain shares (samples with the function on the stack)"
)


@dataclass(frozen=True)
class ComparisonCells:
    """Every printable cell of one ComparisonRow; a presentation picks its columns."""

    point: str  # "numjobs=1024"
    metric: str  # the reader-facing label
    share: bool  # a profile share: values in %, change in percentage points
    n: str  # "4", or "25/5" when the sides differ
    median_baseline: str
    median_candidate: str
    ratio: str  # candidate/baseline medians, "1.02"; "-" when not a number
    ci_low: str  # its 95% interval's ends, "-" when either is not a number
    ci_high: str
    p: str  # BH-adjusted: "0.022", "<0.001", "-"
    verdict: Verdict
    mark: str  # the verdict as one character (MARKS)
    mean_baseline: str
    sd_baseline: str  # "± 12%", empty below 2% as the robot does
    change: str  # of the means: "+12.3%", or percentage points for a share: "+1.5"
    mean_candidate: str
    sd_candidate: str

    @property
    def ci(self) -> str:
        """The interval as one cell: "0.59-1.47", or "-"."""
        return f"{self.ci_low}-{self.ci_high}" if self.ci_low != "-" else "-"


def comparison_cells(row: ComparisonRow) -> ComparisonCells:
    share = row.unit == "share"
    same = row.n_baseline == row.n_candidate
    n = str(row.n_baseline) if same else f"{row.n_baseline}/{row.n_candidate}"
    interval = math.isfinite(row.ci_low) and math.isfinite(row.ci_high)
    return ComparisonCells(
        point=point_label(row.point),
        metric=comparison_label(row.metric),
        share=share,
        n=n,
        median_baseline=_value(row.metric, row.median_baseline, share),
        median_candidate=_value(row.metric, row.median_candidate, share),
        ratio=format_ratio(row.ratio),
        ci_low=format_ratio(row.ci_low) if interval else "-",
        ci_high=format_ratio(row.ci_high) if interval else "-",
        p=format_p(row.p_adjusted),
        verdict=row.verdict,
        mark=MARKS[row.verdict],
        mean_baseline=_value(row.metric, row.mean_baseline, share),
        sd_baseline=_sd(row.sd_pct_baseline),
        change=_change(row, share),
        mean_candidate=_value(row.metric, row.mean_candidate, share),
        sd_candidate=_sd(row.sd_pct_candidate),
    )


def comparison_label(metric: str) -> str:
    """A metric's name in a comparison: its label; a call-chain share: its function."""
    if metric.startswith(CALL_CHAIN_SHARE):
        return metric.removeprefix(CALL_CHAIN_SHARE)
    return metric_label(metric)


def _value(metric: str, value: float, share: bool) -> str:
    return format_share(value, 2) if share else format_value(metric, value)


def _sd(pct: float) -> str:
    """The robot leaves out a spread below 2%; so does fslab."""
    return "± " + format_pct(pct).rjust(3) if math.isfinite(pct) and pct >= 2 else ""


def _change(row: ComparisonRow, share: bool) -> str:
    base, cand = row.mean_baseline, row.mean_candidate
    if not (math.isfinite(base) and math.isfinite(cand)):
        return "-"
    if share:
        return format_points(100 * (cand - base))
    return format_change_pct(100 * (cand / base - 1), 1) if base else "-"
