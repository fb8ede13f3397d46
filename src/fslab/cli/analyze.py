"""Analysis commands registered on the fslab app: compare, scale, profile.

Thin by design: each command loads campaigns, calls one library function in
fslab.analyze (comparisons, campaign_scaling, point_profile) and prints its
result as a table or JSON. Nothing here computes a statistic.
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from fslab.analyze.campaign.dataset import CampaignData, load_campaign
from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.analyze.campaign.stats import MIN_REPS
from fslab.analyze.campaign.verdicts import RECOMMENDED_REPETITIONS, ComparisonRow
from fslab.analyze.curve import point_profile as pp
from fslab.analyze.curve.falloff import Curve
from fslab.analyze.curve.scaling import CurveFit, ScaleReport, fit_campaign
from fslab.analyze.curve.usl import UslFit
from fslab.analyze.history.baselines import compare_with_noise, compare_with_noise_groups
from fslab.analyze.noise.model import TEST_NAME as NOISE_TEST
from fslab.analyze.versus.comparisons import Comparison, min_repetitions
from fslab.analyze.versus.hosts import HostFact, campaigns_across_hosts, host_facts_side_by_side
from fslab.analyze.versus.within import axis_comparisons, config_comparisons
from fslab.base.errors import UsageError
from fslab.base.format import format_pct, format_share
from fslab.base.vocab import point_label
from fslab.cli.common import DbOption, JsonOption, app, err, guarded, open_store, out, print_json
from fslab.report.flamegraph import diff_flamegraph_svg, flamegraph_svg
from fslab.report.speedscope import speedscope_json
from fslab.report.terminal import comparison_tables, shows_call_chain_shares
from fslab.report.verdict_cells import SHARE_LEGEND
from fslab.stacks.fold import folded_to_text
from fslab.stacks.profile import Profile, folded_diff_text, format_chains, format_diff
from fslab.store.db import Store
from fslab.workload.registry import metric_label

CampaignArg = Annotated[int, typer.Argument(help="Campaign id (see `fslab list`).")]


def _say(text: str = "", *, end: str = "\n") -> None:
    """Plain text: kernel frames like [unknown] must not be read as rich markup."""
    out.print(text, markup=False, end=end)


def _say_err(text: str) -> None:
    err.print(text, markup=False)


def _title(text: str) -> None:
    out.print(f"[bold]{escape(text)}[/]", markup=True)


# ------------------------------------------------------------------ compare


@app.command()
def compare(
    campaign_a: Annotated[
        str,
        typer.Argument(
            help="Baseline campaign id, or ids comma-separated (12,14,16): a group of campaigns."
        ),
    ],
    campaign_b: Annotated[
        str | None,
        typer.Argument(help="Candidate campaign id or ids (13,15,17); omit with --by filesystem."),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="'filesystem': compare the configurations of campaign A; 'host': campaign A "
            "against the latest campaign of the same spec on each other host; a sweep axis "
            "(kernel, possible_cpus, numjobs...): compare its values inside campaign A.",
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", help="Also compare metrics matching this glob ('wq.*')."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="With --by: the baseline configuration, or the axis value (default: the "
            "first configuration with a successful point, or the first value).",
        ),
    ] = None,
    fail_on_regression: Annotated[
        float | None,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 if a significant regression is worse than PCT percent.",
            metavar="PCT",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Is a difference real? Medians, ratio with 95% CI, BH-corrected test, verdict.

    Two campaigns (A baseline, B candidate; points matched by configuration
    and sweep values), or with --by filesystem the configurations inside
    campaign A, each against the first with a successful point (or
    --baseline), or with --by host
    campaign A against the same spec run on each other host of a shared
    store, after a table of what differs between the machines, or with
    --by AXIS (kernel, possible_cpus, any sweep axis) that axis's values
    inside campaign A: how kernels and CPU counts of guests are compared.

    Groups of campaigns (12,14,16 13,15,17; each side one spec on one host)
    compare the mean level of each side's campaigns, with the drift between
    campaigns from the noise model: power grows with the campaigns a side.
    """

    def body() -> None:
        hosts: list[HostFact] = []
        group_a = _campaign_ids(campaign_a)
        group_b = _campaign_ids(campaign_b) if campaign_b is not None else None
        with open_store(db) as store, warnings.catch_warnings():
            # scipy warns on evidence metrics that are constant on one side (e.g. jbd2
            # times in whole ms); the test still returns a defined p, so keep the table clean
            warnings.simplefilter("ignore", RuntimeWarning)
            if len(group_a) > 1 or (group_b is not None and len(group_b) > 1):
                if by is not None or baseline is not None or group_b is None:
                    raise UsageError(
                        "groups of campaigns (ids comma-separated) compare two sides: give "
                        "both, without --by or --baseline"
                    )
                comparisons = compare_with_noise_groups(store, group_a, group_b, metric)
            elif by == "host":
                hosts, comparisons = _host_comparisons(store, group_a[0], _one(group_b), metric)
            else:
                comparisons = _comparisons(store, group_a[0], _one(group_b), by, baseline, metric)
        regressions = _regressions(comparisons, fail_on_regression)
        if as_json:
            print_json(
                {
                    **({"hosts": [h.to_dict() for h in hosts]} if hosts else {}),
                    "comparisons": [c.to_dict(fail_on_regression) for c in comparisons],
                    "fail_on_regression_pct": fail_on_regression,
                    "failed": bool(regressions),
                }
            )
        else:
            if hosts:
                out.print(_hosts_table(hosts))
            _print_comparisons(comparisons)
        if regressions:
            _report_regressions(regressions, fail_on_regression or 0.0)
            raise typer.Exit(1)

    guarded(body)


def _campaign_ids(text: str) -> list[int]:
    """'12' or '12,14,16' as campaign ids (exit 2 naming the word that is not one)."""
    words = [word.strip() for word in text.split(",")]
    for word in words:
        if not word.isdigit():
            raise UsageError(
                f"campaign {word!r} is not a campaign id: give ids, comma-separated for a "
                "group (12,14,16; see `fslab list`)"
            )
    return [int(word) for word in words]


def _one(ids: list[int] | None) -> int | None:
    return ids[0] if ids else None


def _host_comparisons(
    store: Store, a: int, b: int | None, patterns: list[str] | None
) -> tuple[list[HostFact], list[Comparison]]:
    if b is not None:
        raise UsageError(
            "--by host compares campaign A with the same spec on the other hosts: give one id"
        )
    across = campaigns_across_hosts(store, a)
    comparisons = [
        c for other in across[1:] for c in compare_with_noise(store, a, other.id, patterns)
    ]
    return host_facts_side_by_side(across), comparisons


def _hosts_table(hosts: Sequence[HostFact]) -> Table:
    """The machines side by side; '≠' marks a fact that differs between them."""
    table = Table(
        title="hosts (≠: differs)", title_justify="left", box=box.SIMPLE, show_header=False
    )
    for _ in range(len(hosts[0].values) + 2):
        table.add_column("")
    for fact in hosts:
        # the facts come from each host's campaign, imports too: text, not rich markup
        table.add_row("≠" if fact.differs else "", escape(fact.label), *map(escape, fact.values))
    return table


def _comparisons(
    store: Store,
    a: int,
    b: int | None,
    by: str | None,
    baseline: str | None,
    patterns: list[str] | None,
) -> list[Comparison]:
    if by is not None:
        if b is not None:
            raise UsageError(f"--by {by} compares inside one campaign: give one id")
        if by in ("filesystem", "config"):
            return config_comparisons(load_campaign(store, a), baseline, patterns)
        return axis_comparisons(load_campaign(store, a), by, baseline, patterns)
    if b is None:
        raise UsageError(
            "give a second campaign id, or --by filesystem|AXIS to compare inside one campaign"
        )
    if baseline is not None:
        raise UsageError("--baseline applies with --by")
    return compare_with_noise(store, a, b, patterns)


def _regressions(
    comparisons: Sequence[Comparison], pct: float | None
) -> list[tuple[Comparison, ComparisonRow]]:
    if pct is None:
        return []
    if not pct >= 0:
        raise UsageError(f"--fail-on-regression takes a percentage >= 0, not {pct}")
    return [(c, row) for c in comparisons for row in c.regressions(pct)]


def _print_comparisons(comparisons: Sequence[Comparison]) -> None:
    for comparison in comparisons:
        for label, detail in comparison.details.items():
            _say(f"{label}: {detail}")
        if comparison.provisional:
            _say("PROVISIONAL verdicts: no between-campaign noise model backs them (see below)")
        for title, table in comparison_tables(comparison):
            _title(title)
            out.print(table)
        for line in comparison.table.describe():
            _say(f"  {line}")
        for note in comparison.notes:
            _say(textwrap.fill(note, 80, initial_indent="  ", subsequent_indent="    "))
        _say()
    modelled = any(row.test == NOISE_TEST for c in comparisons for row in c.table.rows)
    if modelled and any(c.groups for c in comparisons):
        _say("base, cand: each side's level (geometric mean of its campaigns' mean runs; n:")
        _say("their runs); ratio, 95% CI and p: the levels compared with between- and")
        _say("within-campaign variance, p Benjamini-Hochberg adjusted")
    elif modelled:
        _say("base: the level of the baseline campaigns (geometric mean; n: their runs/the")
        _say("candidate's); ratio, 95% CI and p: the candidate campaign against that level")
        _say("with between- and within-campaign variance, p Benjamini-Hochberg adjusted")
    else:
        _say("ratio: candidate/baseline medians, CI: its 95% bootstrap interval,")
        _say("p: test on per-run values, Benjamini-Hochberg adjusted over the table")
    if shows_call_chain_shares(comparisons):
        _say(textwrap.fill(f"{SHARE_LEGEND}.", 80))
    reps = min_repetitions(comparisons)
    if 0 < reps < MIN_REPS:
        _say(
            f"only {reps} run(s) per point on a side: a verdict needs {MIN_REPS} or more\n"
            f"({RECOMMENDED_REPETITIONS} to catch a 5% shift at 3% noise): rerun with "
            "--set run.repeat=N\nor `fslab run --until-ci PCT`"
        )


def _report_regressions(found: list[tuple[Comparison, ComparisonRow]], pct: float) -> None:
    _say_err(f"{len(found)} significant regression(s) worse than {format_pct(pct, None)}:")
    for comparison, row in found:
        _say_err(
            f"  {comparison.candidate} vs {comparison.baseline}: {metric_label(row.metric)} "
            f"at {point_label(row.point)} {format_pct(row.worse_by_pct, 1)} worse"
        )


# ------------------------------------------------------------------ scale


@app.command()
def scale(
    campaign_id: CampaignArg,
    config: Annotated[str | None, typer.Option("--config", help="Only this configuration.")] = None,
    metric: Annotated[
        str | None, typer.Option("--metric", help="Throughput metric (default: the headline).")
    ] = None,
    axis: Annotated[
        str | None,
        typer.Option("--axis", help="Concurrency axis (default: numjobs, iodepth or cpus)."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Where throughput falls off: peak, knee and cliff per configuration; the USL where identified.

    A USL fit is shown only with at least 4 points (6 advised), points on both
    sides of the observed peak and N* near the measured range; otherwise the
    output says why, and gives the observed peak and the falloff ratio.
    """

    def body() -> None:
        with open_store(db) as store:
            data = load_campaign(store, campaign_id)
        report = fit_campaign(data, config=config, metric=metric, axis=axis)
        if as_json:
            print_json(report.to_dict())
        else:
            _print_scale(data, report)
        if report.reason or not any(c.measured for c in report.curves):
            raise typer.Exit(1)

    guarded(body)


def _print_scale(data: CampaignData, report: ScaleReport) -> None:
    if report.reason:
        _say_err(f"no scaling fit: {report.reason}")
        return
    _say(
        f"campaign {data.id} {data.campaign.name}: {metric_label(report.metric or '')} "
        f"over {report.axis}"
    )
    for curve in report.curves:
        _say()
        _title(curve.label)
        if curve.measured is not None and curve.measured.points:
            out.print(curve_table(curve))
        for line in curve.describe()[1:]:
            _say(line)
    if report.moves:
        _say()
        _title("which coefficient moved (95% intervals do not overlap)")
        for move in report.moves:
            _say(f"{move.candidate} vs {move.baseline}:")
            for line in move.lines:
                _say(textwrap.fill(line, 80, initial_indent="  ", subsequent_indent="    "))


def curve_table(curve: CurveFit) -> Table:
    """Measured medians (analyze.curve.falloff), the USL beside them where it was fitted."""
    assert curve.measured is not None
    measured, fit = curve.measured, curve.fit
    model = fit.predict(fit.n) if fit is not None else None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    columns = [curve.axis, "median", "min..max", "runs"] + (["USL"] if fit else []) + [""]
    for name in columns:
        table.add_column(name, justify="left" if name == "" else "right")
    for i, point in enumerate(measured.points):
        reps = point.values
        spread = (
            f"{format_value(curve.metric, min(reps))}..{format_value(curve.metric, max(reps))}"
            if len(reps) > 1
            else ""
        )
        row = [f"{point.n:g}", format_value(curve.metric, point.median), spread, str(len(reps))]
        if fit is not None and model is not None:
            row.append(format_value(curve.metric, float(model[i])) if i < fit.n_fitted else "-")
        table.add_row(*row, _curve_mark(measured, point.n or 0.0, fit))
    return table


def _curve_mark(measured: Curve, n: float, fit: UslFit | None) -> str:
    marks = []
    if measured.knee_n == n:
        marks.append("knee")
    if measured.peak.n == n:
        marks.append("peak")
    cliff = measured.cliff
    if cliff is not None and n == cliff.n_before:
        marks.append("last before cliff")
    if cliff is not None and n == cliff.n_after:
        refit = fit is not None and fit.n_fitted < len(fit.n)
        marks.append("after cliff" + (" (not fitted)" if refit else ""))
    return ", ".join(marks)


# ------------------------------------------------------------------ profile


@app.command()
def profile(
    campaign_id: CampaignArg,
    point: Annotated[
        int | None, typer.Option("--point", help="Point by run order (the #N profile titles show).")
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="Configuration.")] = None,
    sweep: Annotated[
        list[str] | None,
        typer.Option("--sweep", help="Sweep value, e.g. numjobs=1024. Repeatable."),
    ] = None,
    diff: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--diff",
            help="Two points, A then B: seqs or config:axis=value selectors.",
            metavar="A B",
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="Functions to list.", min=1)] = 15,
    offcpu: Annotated[
        bool, typer.Option("--offcpu", help="Where threads wait (off-CPU), not on-CPU.")
    ] = False,
    folded: Annotated[
        Path | None, typer.Option("--folded", help="Write folded stacks (diff: 3 columns).")
    ] = None,
    speedscope: Annotated[
        Path | None, typer.Option("--speedscope", help="Write speedscope JSON.")
    ] = None,
    svg: Annotated[
        Path | None, typer.Option("--svg", help="Write a flame graph (diff: differential).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Kernel profile of a point (default: the worst point, as the report picks it), or a diff.

    Top functions by inclusive and self share and the hottest call chains;
    with --diff A B, functions, chains and threads ranked by the change in
    inclusive share from A to B.
    """
    kind: pp.ProfileKind = "offcpu" if offcpu else "oncpu"
    exports = {"folded": folded, "speedscope": speedscope, "svg": svg}

    def body() -> None:
        with open_store(db) as store:
            data = load_campaign(store, campaign_id)
            if diff is not None:
                if point is not None or config is not None or sweep:
                    raise UsageError("--diff A B names its points; drop --point/--config/--sweep")
                _profile_diff(store, data, diff, kind, top, exports, as_json)
            else:
                selector = _selector(point, config, sweep)
                _profile_one(store, data, selector, kind, top, exports, as_json)

    guarded(body)


def _selector(point: int | None, config: str | None, sweep: list[str] | None) -> pp.Selector:
    if point is not None:
        if config is not None or sweep:
            raise UsageError("--point names one point; drop --config/--sweep")
        return pp.Selector(seq=point)
    return pp.Selector(config=config, sweep=pp.parse_sweep(sweep or []))


def _profile_one(
    store: Store,
    data: CampaignData,
    selector: pp.Selector,
    kind: pp.ProfileKind,
    top: int,
    exports: dict[str, Path | None],
    as_json: bool,
) -> None:
    row = pp.select_point(store, data, selector, kind)
    prof = pp.load_profile(store, data, row, kind)
    view = pp.profile_view(prof, row, kind, top=top)
    title = f"campaign {data.id} {pp.row_label(row)} ({_kind_label(kind)})"
    written = _export_one(
        prof, title, exports, pp.sample_period_s(data, row, kind), offcpu=kind == "offcpu"
    )
    if as_json:
        print_json({**view.to_dict(), "written": written})
        return
    print_profile_view(view, title)


def print_profile_view(view: pp.ProfileView, title: str) -> None:
    unit = "thread-samples (blocked)" if view.kind == "offcpu" else "samples"
    _title(title)
    line = f"{view.total} {unit}"
    if view.kind == "oncpu":
        line += f", idle {format_share(view.idle_share, 1)}"
    if view.states:
        line += ", " + ", ".join(f"{s} {format_share(v, 1)}" for s, v in view.states.items())
    _say(line)
    _say()
    _say(f"top {len(view.top_inclusive)} functions by inclusive share")
    _say(_shares_text(view, view.top_inclusive, by_self=False))
    _say(f"top {len(view.top_self)} functions by self share")
    _say(_shares_text(view, view.top_self, by_self=True))
    _say("hottest call chains")
    _say(format_chains(view.chains, view.total), end="")


def _shares_text(view: pp.ProfileView, ranked: Sequence[Any], *, by_self: bool) -> str:
    """Aligned lines: the ranking share first, then the other one, then the function."""
    lines = ["   self    incl  function" if by_self else "   incl    self  function"]
    for func in ranked:
        incl, self_ = view.shares.get(func.name, (0.0, 0.0))
        first, second = (self_, incl) if by_self else (incl, self_)
        text = f"{format_share(first, 2):>7} {format_share(second, 2):>7}  {func.name}"
        lines.append(text if len(text) <= 80 else text[:77] + "...")
    return "\n".join(lines) + "\n"


def _profile_diff(
    store: Store,
    data: CampaignData,
    selectors: tuple[str, str],
    kind: pp.ProfileKind,
    top: int,
    exports: dict[str, Path | None],
    as_json: bool,
) -> None:
    if exports.get("speedscope") is not None:
        raise UsageError("--speedscope exports one profile; use --svg or --folded with --diff")
    rows = [pp.select_point(store, data, pp.parse_selector(s), kind) for s in selectors]
    a, b = (pp.load_profile(store, data, row, kind) for row in rows)
    result = pp.profile_diff(a, b, rows[0], rows[1], kind, top=top)
    title = (
        f"campaign {data.id} {_kind_label(kind)} diff: "
        f"A {pp.row_label(rows[0])}, B {pp.row_label(rows[1])}"
    )
    written = _export_diff(a, b, title, exports)
    if as_json:
        print_json({**result.to_dict(), "written": written})
        return
    print_profile_diff(result)


def print_profile_diff(result: pp.ProfileDiff) -> None:
    _title(f"{_kind_label(result.kind)} profile diff")
    _say(f"A {pp.row_label(result.a)} ({result.total_a} samples)")
    _say(f"B {pp.row_label(result.b)} ({result.total_b} samples)")
    _say("change = B - A in inclusive share (points of the total)")
    for heading, rows in (
        ("functions", result.functions),
        ("call chains (thread: hot function <- callers)", result.chains),
        ("threads", result.comms),
    ):
        _say()
        _say(heading)
        _say(format_diff(rows), end="")


def _kind_label(kind: pp.ProfileKind) -> str:
    return "off-CPU" if kind == "offcpu" else "on-CPU"


def _export_one(
    prof: Profile,
    title: str,
    exports: dict[str, Path | None],
    period_s: float | None,
    *,
    offcpu: bool = False,
) -> list[str]:
    texts = {
        "folded": lambda: folded_to_text(prof.to_counts()),
        "speedscope": lambda: speedscope_json(prof, title, sample_period_s=period_s),
        "svg": lambda: flamegraph_svg(prof, title=title, offcpu=offcpu),
    }
    return _write(exports, texts)


def _export_diff(a: Profile, b: Profile, title: str, exports: dict[str, Path | None]) -> list[str]:
    texts = {
        "folded": lambda: folded_diff_text(a, b),
        "svg": lambda: diff_flamegraph_svg(a, b, title=title),
    }
    return _write(exports, texts)


def _write(exports: dict[str, Path | None], texts: dict[str, Any]) -> list[str]:
    written = []
    for name, path in exports.items():
        if path is None or name not in texts:
            continue
        try:
            path.write_text(texts[name]())
        except OSError as exc:
            raise UsageError(f"--{name} {path}: {exc}") from None
        _say_err(f"wrote {path} ({name})")
        written.append(str(path))
    return written
