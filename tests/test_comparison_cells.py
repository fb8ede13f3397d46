"""One comparison renderer: `fslab compare`'s rich table, the text/HTML report's
robot form and the reply's sentences print the same cells (report/comparison),
on a real campaign imported from tests/data (campaign_fsync_quick: two ext4
journals at six thread counts, perf profiles on).

Where the two tables used to disagree, the rule that won:
- a profile share is in percent in `fslab compare` too (it printed 0.622),
  and a call-chain share is named by its function there too (it printed
  profile.inclusive.FUNCTION; the robot form named the function);
- the reply prints p as the tables do (3 decimals, "<0.001"), not to two
  significant digits.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.campaign.verdicts import ComparisonRow
from fslab.analyze.versus.within import config_comparisons, with_profile_shares
from fslab.report import text_tables as tx
from fslab.report.reply import reply_text
from fslab.report.terminal import comparison_table
from fslab.report.verdict_cells import MARKS, comparison_cells, comparison_label
from fslab.store.db import Store
from fslab.store.exchange import import_campaign

DATA = Path(__file__).parent / "data"
BASELINE = "ext4-default"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, int, list[ComparisonRow]]:
    store = Store(tmp_path_factory.mktemp("cells") / "r.db")
    cid = import_campaign(store, json.loads((DATA / "campaign_fsync_quick.json").read_text()))
    data = load_campaign(store, cid)
    comparisons = with_profile_shares(data, config_comparisons(data, BASELINE), BASELINE)
    rows = [row for c in comparisons for row in c.table.rows]
    yield store, cid, rows
    store.close()


def _rich(rows: list[ComparisonRow]) -> str:
    console = Console(width=200, no_color=True, record=True)
    console.print(comparison_table(rows))
    return console.export_text()


def test_both_tables_print_the_same_label_and_values(recorded) -> None:
    _, _, rows = recorded
    shares = [r for r in rows if r.metric.startswith("profile.inclusive.")]
    assert shares and any(not r.metric.startswith("profile.") for r in rows)
    rendered = _rich(rows).splitlines()
    rule = next(i for i, line in enumerate(rendered) if "───" in line)
    rich_lines = [line for line in rendered[rule + 1 :] if line.strip()]
    robot = tx.comparison_table(rows)
    robot_rows = [r for r in robot.rows if not robot.is_group(r)]
    assert len(robot_rows) == len(rows)
    for row, robot_row, line in zip(rows, robot_rows, rich_lines, strict=True):
        c = comparison_cells(row)
        assert robot_row[-1] == c.metric and robot_row[-2] == MARKS[row.verdict]
        assert f" {c.metric} " in line and line.rstrip().endswith(f" {c.verdict}")
        assert f" {c.median_baseline} " in line and f" {c.median_candidate} " in line
    # the rule that won: shares in percent, named by function, in `fslab compare` too
    share = comparison_cells(shares[0])
    function = shares[0].metric.removeprefix("profile.inclusive.")
    assert share.metric == function and share.median_baseline.endswith("%")
    assert f"{100 * shares[0].median_baseline:.2f}%" == share.median_baseline
    assert "profile.inclusive." not in _rich(shares)
    assert f" {function} " in _rich(shares)


def test_only_call_chain_shares_lose_their_family_name() -> None:
    assert comparison_label("profile.inclusive.ext4_do_writepages") == "ext4_do_writepages"
    assert comparison_label("profile.self.ext4_do_writepages") == "profile.self.ext4_do_writepages"
    assert comparison_label("fio.sync.lat_ns_p99") == "fsync p99"


def test_a_side_without_runs_prints_dashes(recorded) -> None:
    _, _, rows = recorded
    nan = math.nan
    empty = replace(
        rows[0], median_candidate=nan, mean_candidate=nan, ratio=nan, ci_low=nan, ci_high=nan
    )
    c = comparison_cells(empty)
    assert (c.median_candidate, c.mean_candidate, c.ratio, c.ci, c.change) == ("-",) * 5
    assert "nan" not in _rich([empty]).lower()
    half = replace(rows[0], ci_high=math.inf)  # the old table printed "0.59--"
    assert comparison_cells(half).ci == "-"


def test_reply_prints_p_as_the_tables_do(recorded) -> None:
    store, cid, rows = recorded
    text = " ".join(reply_text(store, cid).split())
    headline = [r for r in rows if r.metric == "fio.write.iops" and math.isfinite(r.p_adjusted)]
    shown = [c.p for c in map(comparison_cells, headline) if f", p {c.p} (" in text]
    assert shown, text
    assert all(len(p) == 5 or p == "<0.001" for p in shown)  # "0.169", never "0.17"
