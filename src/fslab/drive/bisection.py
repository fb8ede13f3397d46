"""Running candidates for bisection: `fslab bisect-run` and `fslab bisect`.

The statistics live in analyze.history.position (decide, bisect_list); this module
runs what they ask for. A CandidateRunner runs a spec on one candidate and
adds repetitions to the campaign it made:

- LocalRunner runs on what is booted now. That is what `git bisect run`
  needs: git checks out each commit (of a spec file, of a tool, or of a
  kernel the user builds and boots), and `fslab bisect-run` measures it.
- GuestRunner boots each candidate kernel (a release, a series, or the path
  of a build) in a qemu guest and runs the spec there: `fslab bisect
  --kernels` takes it through `kernel_runner`.

judge_candidate() repeats until the decision is clear or the limit of runs
per point is reached, and logs every decision with its numbers. A candidate
whose runs spread more than the spec's campaigns' usually do (unsteady: see
analyze.history.position) is run again as a new campaign, UNSTEADY_RERUNS times, then
skipped: more runs would not make its mean trustworthy. Each round
judges the references and the candidate with the host's slowdowns (steal:
see analyze.noise.slowdown) taken out where they slow the headline
(analyze.history.baselines.bisect_model, the rule `fslab compare` uses), refitted
over every run so far, and the logged decision says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.history.baselines import bisect_model
from fslab.analyze.history.position import Verdict
from fslab.analyze.noise.drift import host_drift
from fslab.drive.rounds import plan_round
from fslab.run.campaign import ProgressSink, RunOptions, run_campaign, start_campaign
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec
from fslab.store.db import Store

DEFAULT_MAX_REPEAT = 16  # runs per point before an undecided candidate is skipped
UNSTEADY_RERUNS = 1  # fresh campaigns of an unsteady candidate before it is skipped
Log = Callable[[str], None]


class CandidateRunner(Protocol):
    """Runs a spec on one candidate (a kernel, a commit) and returns the campaign id."""

    def start(self, candidate: str, spec: Spec, spec_toml: str, overrides: dict[str, Any]) -> int:
        """Run the spec's planned points on the candidate; returns the stored campaign's id."""
        ...

    def more(self, campaign_id: int, max_repeat: int) -> bool:
        """Add one run to every point below max_repeat runs; False when none was added."""
        ...


@dataclass
class LocalRunner:
    """Runs on the booted kernel, into the given store (the candidate is only a label)."""

    store: Store
    options: RunOptions
    progress: ProgressSink | None = None

    def start(self, candidate: str, spec: Spec, spec_toml: str, overrides: dict[str, Any]) -> int:
        campaign_id = start_campaign(
            self.store,
            spec,
            spec_toml,
            overrides={**overrides, "candidate": candidate},
            options=self.options,
        )
        run_campaign(self.store, campaign_id, options=self.options, progress=self.progress)
        return campaign_id

    def more(self, campaign_id: int, max_repeat: int) -> bool:
        # a CI half-width of 0 is never reached, so pct=0 asks one more run of every
        # point still below the cap: the round --until-ci would add
        planned = plan_round(load_campaign(self.store, campaign_id), 0.0, max_repeat)
        if not planned:
            return False
        self.store.add_points(campaign_id, planned)
        run_campaign(self.store, campaign_id, options=self.options, progress=self.progress)
        return True


@dataclass
class GuestRunner(LocalRunner):
    """Runs the spec in a qemu guest booting the candidate kernel (its [vm] kept,
    its kernel replaced; a kernel sweep axis is dropped: the candidate is the kernel)."""

    def start(self, candidate: str, spec: Spec, spec_toml: str, overrides: dict[str, Any]) -> int:
        return super().start(candidate, on_kernel(spec, candidate), spec_toml, overrides)


def on_kernel(spec: Spec, kernel: str) -> Spec:
    """The spec with every point in a guest booting `kernel`."""
    data = spec.model_dump(mode="json")
    data["vm"] = {**(data.get("vm") or {}), "kernel": kernel}
    data["sweep"] = {k: v for k, v in data.get("sweep", {}).items() if k != "kernel"}
    return validate_spec(data, f"the spec on kernel {kernel}")


def kernel_runner(store: Store, options: RunOptions) -> CandidateRunner:
    """The runner that boots each candidate kernel in a guest."""
    return GuestRunner(store, options)


def judge_candidate(
    store: Store,
    runner: CandidateRunner,
    candidate: str,
    spec: Spec,
    spec_toml: str,
    overrides: dict[str, Any],
    *,
    good: CampaignData,
    bad: CampaignData,
    max_repeat: int = DEFAULT_MAX_REPEAT,
    log: Log = print,
) -> tuple[int, Verdict]:
    """Run the candidate, then add runs until good/bad is clear or max_repeat is reached.

    Returns (candidate campaign id, verdict). Raises analyze.history.position's
    ReferencesTooClose when the references do not differ beyond the noise.
    """

    def start() -> int:
        """A new campaign of the candidate, its host's drift from the good reference's logged."""
        started = runner.start(candidate, spec, spec_toml, overrides)
        for drift in host_drift(good.campaign.host, load_campaign(store, started).campaign.host):
            log(f"campaign {started}: {drift.describe()} (good reference vs candidate)")
        return started

    reruns = UNSTEADY_RERUNS
    campaign_id = start()
    while True:
        data = load_campaign(store, campaign_id)
        if data.headline is None:
            verdict = Verdict(
                "undecided", float("nan"), float("nan"), float("nan"), reason="no successful run"
            )
            log(f"campaign {campaign_id}: {verdict.describe()}")
            return campaign_id, verdict
        verdict = bisect_model(store, good, bad, data, [data.headline]).verdict()
        runs = min((p.runs for p in verdict.points), default=0)
        log(f"campaign {campaign_id} ({runs} runs/point): {verdict.describe()}")
        for position in verdict.points:
            log(f"  {position.describe()}")
        if verdict.decision != "undecided":
            return campaign_id, verdict
        if verdict.unsteady:
            if not reruns:
                log(f"campaign {campaign_id}: unsteady again: skip")
                return campaign_id, verdict
            reruns -= 1
            log(f"campaign {campaign_id}: unsteady: running {candidate} again")
            campaign_id = start()
            continue
        if not runner.more(campaign_id, max_repeat):
            log(f"campaign {campaign_id}: still undecided at {max_repeat} runs per point: skip")
            return campaign_id, verdict
