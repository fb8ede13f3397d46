"""Commands about campaigns over time: calibrate, series, bisect-run, bisect.

Thin like the other command modules: the noise model is analyze.noise and
analyze.history.baselines, change points analyze.history.series, decisions analyze.history.position,
and running candidates fslab.drive.bisection.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.exceptions import TyperException

from fslab.analyze.campaign.dataset import load_campaign
from fslab.analyze.history.baselines import noise_model
from fslab.analyze.history.position import (
    EXIT_CODES,
    Decision,
    ReferencesTooClose,
    Verdict,
    bisect_list,
)
from fslab.analyze.history.series import P_VALUE, build_series, select_campaigns
from fslab.analyze.noise.model import MIN_CAMPAIGNS, spec_fingerprint
from fslab.base.errors import FslabError, SpecError, UsageError
from fslab.base.format import format_pct
from fslab.base.units import parse_duration_s
from fslab.base.vocab import point_label
from fslab.cli.common import DbOption, JsonOption, app, err, guarded, open_store, print_json
from fslab.cli.progress import RichProgress
from fslab.drive.bisection import DEFAULT_MAX_REPEAT, LocalRunner, judge_candidate, kernel_runner
from fslab.report.series_text import series_lines
from fslab.run.campaign import RunOptions, run_campaign, start_campaign
from fslab.spec.load import load_spec, read_spec_source
from fslab.spec.model import Spec
from fslab.store.db import CampaignRow, Store
from fslab.workload.registry import metric_label

SetOption = Annotated[
    list[str] | None, typer.Option("--set", help="Override a spec field, as for `fslab run`.")
]
QuickOption = Annotated[bool, typer.Option("--quick", help="The spec's [quick] form.")]
NoCollectOption = Annotated[bool, typer.Option("--no-collect", help="Run without any collector.")]
BISECT_ABORT = 128  # git bisect run stops on exit codes above 127
FIND_CHANGE = 0.10  # the change `fslab calibrate` says how many runs would find


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _load(spec: str, set_: list[str] | None, quick: bool) -> tuple[Spec, str, dict[str, Any]]:
    overrides = list(set_ or [])
    loaded, text = load_spec(spec, overrides=overrides, quick=quick)
    return loaded, text, {"set": overrides, "quick": quick, "source": spec}


# ------------------------------------------------------------------ calibrate


@app.command()
def calibrate(
    spec: Annotated[str, typer.Argument(help="A preset name or a spec TOML file.")],
    times: Annotated[int, typer.Option("--times", help="Campaigns to run.", min=1)] = 5,
    spacing: Annotated[
        str,
        typer.Option(
            "--spacing",
            help="Idle time between campaigns (e.g. 10m): drift between campaigns is what "
            "is measured, and back-to-back campaigns understate it.",
        ),
    ] = "10m",
    set_: SetOption = None,
    quick: QuickOption = False,
    no_collect: NoCollectOption = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Measure how far campaigns of a spec spread on this host: run it N times, spaced.

    Each campaign is an ordinary one (fslab list shows them); with every
    earlier campaign of the same spec on this host and kernel they back the
    between-campaign noise model that `fslab compare` and `fslab bisect-run`
    use. Prints the model: per point, the between- and within-campaign CV.
    """

    def body() -> None:
        try:
            pause_s = parse_duration_s(spacing)
        except ValueError as exc:
            raise UsageError(f"--spacing: {exc}") from None
        loaded, text, overrides = _load(spec, set_, quick)
        options = RunOptions(collect="off" if no_collect else "separate")
        with open_store(db) as store:
            ids = []
            for i in range(times):
                if i:
                    err.print(f"calibrate: idle {spacing} before campaign {i + 1}/{times}")
                    time.sleep(pause_s)
                with RichProgress(err) as progress:
                    campaign_id = start_campaign(
                        store, loaded, text, overrides=overrides, options=options
                    )
                    run_campaign(store, campaign_id, options=options, progress=progress)
                ids.append(campaign_id)
                err.print(f"calibrate: campaign {campaign_id} done ({i + 1}/{times})")
            _report_model(store, ids[-1], ids, as_json)

    guarded(body)


def _report_model(store: Store, reference_id: int, new_ids: list[int], as_json: bool) -> None:
    data = load_campaign(store, reference_id)
    metrics = [m for m in (data.headline, data.latency) if m]
    model = noise_model(store, data.campaign, metrics)
    if as_json:
        print_json(
            {
                "campaigns_run": new_ids,
                "baselines": model.baseline_ids,
                "fingerprint": model.fingerprint,
                "host": model.host,
                "points": [
                    {
                        "point": point_label(point),
                        "metric": metric,
                        **noise.to_dict(),
                        "runs_to_find_10pct": noise.runs_to_find(FIND_CHANGE),
                    }
                    for (point, metric), noise in model.points.items()
                ],
            }
        )
        return
    _say(model.describe())
    if not model.calibrated:
        _say(f"run more campaigns of the spec: the model needs {MIN_CAMPAIGNS}")
        return
    _say(
        f"{'point':<28} {'metric':<12} {'campaigns':>9} {'between CV':>10} {'within CV':>9} "
        f"{'runs for 10%':>12}"
    )
    for (point, metric), noise in model.points.items():
        needed = noise.runs_to_find(FIND_CHANGE)
        _say(
            f"{point_label(point):<28} {metric_label(metric):<12} {noise.campaigns:>9} "
            f"{format_pct(noise.between_cv_pct, 1):>10} {format_pct(noise.within_cv_pct, 1):>9} "
            f"{needed if needed is not None else 'drift':>12}"
        )
    _say("between CV: spread of a campaign's level; within CV: of one run inside a campaign")
    _say(
        "runs for 10%: runs per campaign for `fslab compare` to find a 10% change with 80% "
        "power ('drift': the spread between campaigns alone hides it)"
    )


# ------------------------------------------------------------------ series


@app.command()
def series(
    selector: Annotated[
        str,
        typer.Argument(
            help="A campaign name (campaigns of that name), or a spec file or preset "
            "(campaigns of that exact spec, matched by fingerprint; --set and --quick apply)."
        ),
    ],
    set_: SetOption = None,
    quick: QuickOption = False,
    pvalue: Annotated[
        float, typer.Option("--pvalue", help="Keep change points with a t-test p below this.")
    ] = P_VALUE,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """A spec's campaigns over time, kernels or commits, and where the level moved.

    One line per campaign with its median headline at each point; a change
    point (E-Divisive means, kept when a t test between the segments on
    either side is significant) is marked where a new level starts. When the
    runs' steal slows the headline within campaigns, the medians are at zero
    steal (as `fslab compare` judges them) and the output says so.
    """

    def body() -> None:
        if not 0 < pvalue < 1:
            raise UsageError(f"--pvalue must be between 0 and 1, not {pvalue}")
        with open_store(db) as store:
            built = build_series(
                store, _series_campaigns(store, selector, set_, quick), selector, p_value=pvalue
            )
        if as_json:
            print_json(built.to_dict())
        else:
            for line in series_lines(built):
                _say(line)

    guarded(body)


def _series_campaigns(
    store: Store, selector: str, set_: list[str] | None, quick: bool
) -> list[CampaignRow]:
    by_name = [] if (set_ or quick) else select_campaigns(store, name=selector)
    if by_name:
        return by_name
    try:
        read_spec_source(selector)
    except SpecError:
        raise UsageError(
            f"no campaign named {selector!r} in {store.location}, and it is no spec file or preset"
        ) from None
    loaded, _, _ = _load(selector, set_, quick)
    found = select_campaigns(store, fingerprint=spec_fingerprint(loaded))
    if not found:
        raise UsageError(
            f"no stored campaign of the spec {selector} (as given) in {store.location}"
        )
    return found


# ------------------------------------------------------------------ bisect-run


@app.command("bisect-run")
def bisect_run(
    spec: Annotated[str, typer.Argument(help="The spec file (as checked out now) or preset.")],
    good: Annotated[int, typer.Option("--good", help="Campaign id of the good reference.")],
    bad: Annotated[int, typer.Option("--bad", help="Campaign id of the bad reference.")],
    set_: SetOption = None,
    quick: QuickOption = False,
    max_repeat: Annotated[
        int,
        typer.Option("--max-repeat", help="Runs per point before an unclear candidate is skipped."),
    ] = DEFAULT_MAX_REPEAT,
    candidate: Annotated[
        str | None,
        typer.Option("--candidate", help="Label stored with the run (default: git HEAD here)."),
    ] = None,
    log_file: Annotated[
        Path | None, typer.Option("--log", help="Also append each decision to this file.")
    ] = None,
    no_collect: NoCollectOption = False,
    db: DbOption = None,
) -> None:
    """For `git bisect run`: run SPEC on what is booted now, exit 0 good, 1 bad, 125 skip.

    The candidate's headline is placed between the good and bad reference
    campaigns with the noise model of the good one's spec, all at zero steal
    when the runs' steal slows the headline (as `fslab compare` does; the log
    says so); repetitions are added until the 99% interval of its position is
    clearly on one side, or --max-repeat runs per point (then skip). A
    candidate whose runs spread more than the spec's campaigns' usually do (the
    machine was unsteady) is run again once, then skipped. A spec
    that does not load at this commit, or a run with no successful point, is
    a skip. Anything that makes bisection meaningless (unknown references,
    references that do not differ) exits 128, which stops `git bisect run`.
    """
    lines: list[str] = []

    def log(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)
        lines.append(text)

    code = BISECT_ABORT
    try:
        code = _bisect_run(spec, good, bad, set_, quick, max_repeat, candidate, no_collect, db, log)
    except KeyboardInterrupt:
        log("bisect-run: interrupted")
        code = BISECT_ABORT
    except FslabError as exc:
        log(f"bisect-run: {exc} (exit {BISECT_ABORT}: stops git bisect)")
    finally:
        if log_file is not None:
            with log_file.open("a", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
    raise typer.Exit(code)


def bisect_run_main() -> None:
    """`fslab bisect-run` as git bisect run calls it: a usage error stops the bisection.

    click exits 2 on a bad option, which git bisect run would read as "bad"
    and go on marking every commit bad; 128 stops it instead.
    """
    try:
        code = app(standalone_mode=False)  # returns the command's exit code
    except typer.Abort:
        sys.exit(BISECT_ABORT)
    except TyperException as exc:  # a usage error: unknown option, missing --good
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        err.print(f"bisect-run: exit {BISECT_ABORT} (stops git bisect)", markup=False)
        sys.exit(BISECT_ABORT)
    sys.exit(code if isinstance(code, int) else 0)


def _bisect_run(
    spec: str,
    good_id: int,
    bad_id: int,
    set_: list[str] | None,
    quick: bool,
    max_repeat: int,
    candidate: str | None,
    no_collect: bool,
    db: str | None,
    log: Callable[[str], None],
) -> int:
    if max_repeat < 2:
        raise UsageError(f"--max-repeat must be at least 2, not {max_repeat}")
    label = candidate or _git_head() or "booted kernel"
    with open_store(db) as store:
        good, bad = load_campaign(store, good_id), load_campaign(store, bad_id)
        try:
            loaded, text, overrides = _load(spec, set_, quick)
        except SpecError as exc:
            log(f"bisect-run {label}: the spec does not load here: {exc}: skip (125)")
            return EXIT_CODES["undecided"]
        log(f"bisect-run {label}: good campaign {good_id}, bad campaign {bad_id}")
        runner = LocalRunner(store, RunOptions(collect="off" if no_collect else "separate"))
        try:
            campaign_id, verdict = judge_candidate(
                store,
                runner,
                label,
                loaded,
                text,
                overrides,
                good=good,
                bad=bad,
                max_repeat=max_repeat,
                log=log,
            )
        except ReferencesTooClose as exc:
            raise FslabError(str(exc)) from None
    word = {"good": "good", "bad": "bad", "undecided": "skip"}[verdict.decision]
    _say(
        f"{word} (exit {verdict.exit_code}): {label}, campaign {campaign_id}: {verdict.describe()}"
    )
    return verdict.exit_code


def _git_head() -> str | None:
    """The commit checked out in the current directory, for the campaign's label."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


# ------------------------------------------------------------------ bisect


@app.command()
def bisect(
    spec: Annotated[str, typer.Argument(help="A preset name or a spec TOML file.")],
    kernels: Annotated[
        list[str],
        typer.Option("--kernels", help="Kernel images in order, oldest first. Repeatable."),
    ],
    good: Annotated[str, typer.Option("--good", help="The good kernel (one of --kernels).")],
    bad: Annotated[str, typer.Option("--bad", help="The bad kernel (one of --kernels).")],
    set_: SetOption = None,
    quick: QuickOption = False,
    max_repeat: Annotated[
        int, typer.Option("--max-repeat", help="Runs per point before a kernel is skipped.")
    ] = DEFAULT_MAX_REPEAT,
    db: DbOption = None,
) -> None:
    """Bisect an ordered list of kernel images in guests: the first bad one, with evidence.

    Runs SPEC in a guest of the good and bad kernels, then of the kernel in
    the middle, deciding each as `fslab bisect-run` does, until one kernel
    is the first bad. Each kernel is booted in a qemu guest (docs/guests.md).
    """

    def body() -> None:
        order = list(kernels)
        for name, value in (("--good", good), ("--bad", bad)):
            if value not in order:
                raise UsageError(f"{name} {value!r} is not one of --kernels")
        lo, hi = order.index(good), order.index(bad)
        if lo >= hi:
            raise UsageError("--good must come before --bad in --kernels (oldest first)")
        loaded, text, overrides = _load(spec, set_, quick)
        with open_store(db) as store:
            runner = kernel_runner(store, RunOptions())
            refs = {i: runner.start(order[i], loaded, text, overrides) for i in (lo, hi)}
            good_data, bad_data = load_campaign(store, refs[lo]), load_campaign(store, refs[hi])
            verdicts: dict[int, tuple[int, Verdict]] = {}

            def judge(i: int) -> Decision:
                verdicts[i] = judge_candidate(
                    store,
                    runner,
                    order[i],
                    loaded,
                    text,
                    overrides,
                    good=good_data,
                    bad=bad_data,
                    max_repeat=max_repeat,
                    log=lambda t: err.print(t, markup=False, soft_wrap=True),
                )
                return verdicts[i][1].decision

            result = bisect_list(len(order), judge, good=lo, bad=hi)
        if result.first_bad is None:
            _say(
                "undecided: the first bad kernel is one of "
                + ", ".join(order[i] for i in result.candidates)
            )
            raise typer.Exit(1)
        first = result.first_bad
        evidence = verdicts.get(first)
        _say(
            f"first bad kernel: {order[first]}"
            + (f" (campaign {evidence[0]}: {evidence[1].describe()})" if evidence else "")
        )

    guarded(body)
