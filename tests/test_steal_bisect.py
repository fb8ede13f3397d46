"""`fslab bisect-run` judges at zero steal (analyze.baselines.bisect_model: the rule of
analyze.slowdown that comparisons use), on the recording whose runs carry their steal:
bench/spaced/steal8k (tests/test_steal.py says what it is).

Its campaigns, oldest first, alternate in pairs: base (4 KiB blocks) 1, 4, 5, 8, 9, 12,
13, 16, 17, 20 and 1 KiB blocks ("cost", -19.5%) 2, 3, 6, 7, 10, 11, 14, 15, 18, 19,
about 2 min apart. The cases below were found by judging every (good base, bad cost,
candidate) triple of the recording both ways: at zero steal no base candidate was judged
bad and no cost candidate good; without it none was decided at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.history.baselines import baseline_campaigns, bisect_model, noise_model
from fslab.analyze.history.position import ReferencesTooClose, Verdict, decide
from fslab.analyze.noise.slowdown import take_out_slowdown
from fslab.drive.bisection import judge_candidate
from fslab.store.db import Store
from tests.spaced_support import imported, spaced_exports, without_steal

STEAL8K = Path(__file__).parent.parent / "bench" / "spaced" / "steal8k"
HEADLINE = "fio.write.iops"
# (good, bad, candidate, decision at zero steal): campaign ids of the recording
LIKE_GOOD = (9, 2, 13, "good")
LIKE_BAD = (9, 2, 6, "bad")
CASES = [LIKE_GOOD, LIKE_BAD]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with imported(tmp_path_factory.mktemp("steal") / "steal.db", spaced_exports(STEAL8K)) as s:
        yield s


@pytest.fixture(scope="module")
def old(tmp_path_factory):
    """The same recording as a store before fslab recorded the host's steal."""
    exports = without_steal(spaced_exports(STEAL8K))
    with imported(tmp_path_factory.mktemp("old") / "old.db", exports) as s:
        yield s


def _load(store: Store, *ids: int) -> list[CampaignData]:
    return [load_campaign(store, i) for i in ids]


def _raw(store: Store, good: CampaignData, bad: CampaignData, cand: CampaignData) -> Verdict:
    """The decision as bisect-run made it before it took steal out."""
    noise = noise_model(store, good.campaign, [HEADLINE], exclude=[bad.id, cand.id])
    return decide(good, bad, cand, noise)


def test_the_recording_is_what_the_cases_say(store) -> None:
    names = {c.id: c.name for c in store.campaigns()}
    for good, bad, cand, decision in CASES:
        assert names[good] == "spaced8k-base" and names[bad] == "spaced8k-cost-1k"
        assert names[cand] == ("spaced8k-base" if decision == "good" else "spaced8k-cost-1k")


@pytest.mark.parametrize(("good", "bad", "cand", "decision"), CASES)
def test_bisect_decides_at_zero_steal_what_the_raw_runs_leave_undecided(
    store, good, bad, cand, decision
) -> None:
    g, b, c = _load(store, good, bad, cand)
    verdict = bisect_model(store, g, b, c, [HEADLINE]).verdict()
    assert verdict.decision == decision and not verdict.provisional, verdict.describe()
    # the fit is take_out_slowdown's over the references, the candidate and the good
    # reference's stored campaigns (the noise model's), as `fslab compare` pools them
    stored = [row.id for row in baseline_campaigns(store, g.campaign)]
    pooled = _load(store, *dict.fromkeys([good, bad, cand, *stored]))
    _, fit = take_out_slowdown(pooled)
    assert fit is not None and verdict.slowdown == fit
    assert verdict.describe().endswith("; " + fit.describe())
    raw = _raw(store, g, b, c)
    assert raw.decision == "undecided" and raw.slowdown is None, raw.describe()
    assert "steal" not in raw.describe()


def test_references_too_close_in_the_raw_runs_differ_at_zero_steal(store) -> None:
    """Campaigns 1 and 2: the drift of the raw runs hides the 1 KiB cost (exit 128:
    nothing to bisect); at zero steal the candidate, base campaign 13, is good."""
    g, b, c = _load(store, 1, 2, 13)
    with pytest.raises(ReferencesTooClose):
        _raw(store, g, b, c)
    verdict = bisect_model(store, g, b, c, [HEADLINE]).verdict()
    assert verdict.decision == "good" and verdict.slowdown is not None


class _Stored:
    """A CandidateRunner whose candidate is a stored campaign; it runs nothing more."""

    def __init__(self, campaign_id: int) -> None:
        self.campaign_id = campaign_id
        self.rounds = 0

    def start(self, candidate, spec, spec_toml, overrides) -> int:
        return self.campaign_id

    def more(self, campaign_id: int, max_repeat: int) -> bool:
        self.rounds += 1
        return False


def _judge(store: Store, good: int, bad: int, cand: int) -> tuple[Verdict, list[str], int]:
    runner, lines = _Stored(cand), []
    g, b = _load(store, good, bad)
    _, verdict = judge_candidate(
        store, runner, "c", None, "", {}, good=g, bad=b, max_repeat=5, log=lines.append
    )
    return verdict, lines, runner.rounds


@pytest.mark.parametrize(("good", "bad", "cand", "decision"), CASES)
def test_bisect_run_logs_the_decision_at_zero_steal(store, good, bad, cand, decision) -> None:
    verdict, lines, rounds = _judge(store, good, bad, cand)
    assert verdict.decision == decision and rounds == 0
    assert verdict.slowdown is not None
    (logged,) = [line for line in lines if line.startswith(f"campaign {cand} (5 runs/point)")]
    assert logged.endswith(f"{decision}: " + verdict.describe().split(": ", 1)[1])
    assert "; steal taken out: write IOPS" in logged


@pytest.mark.parametrize(("good", "bad", "cand", "decision"), CASES)
def test_bisect_run_over_runs_without_their_steal_is_as_it_was(
    old, good, bad, cand, decision
) -> None:
    verdict, lines, rounds = _judge(old, good, bad, cand)
    raw = _raw(old, *_load(old, good, bad, cand))
    assert verdict.decision == raw.decision == "undecided" and rounds == 1
    assert (verdict.position, verdict.low, verdict.high) == (raw.position, raw.low, raw.high)
    assert verdict.slowdown is None and not any("steal" in line for line in lines)
    assert lines[-1] == f"campaign {cand}: still undecided at 5 runs per point: skip"
