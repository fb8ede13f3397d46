"""The fslab command line: parse, call the library, print. Nothing else lives here."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fslab import doctor as doctor_mod
from fslab.adaptive import check_options, run_until_ci
from fslab.analyze.summary import summarize
from fslab.errors import FslabError, UsageError
from fslab.fleet.campaigns import fleet_campaign
from fslab.preflight import run_preflight
from fslab.report import terminal
from fslab.roles import COLLECT_MODES, CollectMode
from fslab.runner import (
    RunOptions,
    check_resume_mode,
    leftover_warning,
    run_campaign,
    start_campaign,
)
from fslab.spec import Spec, load_spec, preset_names, preset_path, target_overrides
from fslab.store.db import PointOutcome, PointRow, Store, default_db

app = typer.Typer(
    help=(
        "fslab finds where Linux filesystem performance falls off, and explains why.\n\n"
        "It builds each filesystem of an experiment on a scratch device (a RAM-backed "
        "loop image by default), runs the workload at every sweep point, and stores the "
        "numbers with what the kernel was doing. Start with `fslab presets` and "
        "`fslab run ext4-fsync-storm --quick`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
presets_app = typer.Typer(help="Built-in experiments (the seed reports among them).")
app.add_typer(presets_app, name="presets")

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="FSLAB_DB",
        show_envvar=True,
        help=(
            "Results database: a SQLite file (default $XDG_DATA_HOME/fslab/results.db) "
            "or a shared PostgreSQL, postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME."
        ),
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
LatestCampaignArg = Annotated[int | None, typer.Argument(help="Campaign id (default: the latest).")]


def _store(db: str | Path | None) -> Store:
    return Store(db or default_db())


def _campaign_id(store: Store, campaign_id: int | None) -> int:
    """The campaign asked for, or the latest one."""
    return campaign_id if campaign_id is not None else store.latest_campaign_id()


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _fail(exc: FslabError) -> typer.Exit:
    err.print(f"[bold red]fslab:[/] {exc}", markup=True, highlight=False)
    return typer.Exit(exc.exit_code)


def _guarded(func: Callable[[], None]) -> None:
    """Run a command body, turning fslab errors into a message and an exit code."""
    try:
        func()
    except FslabError as exc:
        raise _fail(exc) from None


# ------------------------------------------------------------------ progress


class RichProgress:
    """Progress bar with ETA on stderr, one line per finished point."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task_id: Any = None

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def campaign_started(self, campaign_id: int, total: int, done: int) -> None:
        self.task_id = self.progress.add_task(
            f"campaign {campaign_id}", total=total, completed=done
        )

    def point_started(self, point: PointRow) -> None:
        sweep = " ".join(f"{k}={v}" for k, v in point.sweep.items())
        run = "evidence" if point.role == "evidence" else f"#{point.repeat}"
        self.progress.update(self.task_id, description=f"{point.config} {sweep} {run}")

    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None:
        sweep = " ".join(f"{k}={v}" for k, v in point.sweep.items())
        if point.role == "evidence":
            sweep += " (evidence run)"
        if outcome.status == "ok":
            headline = next(
                (
                    (name, outcome.metrics[name])
                    for name in ("fio.write.iops", "fio.read.iops", "dd.bw_bytes_s")
                    if name in outcome.metrics
                ),
                None,
            )
            figure = terminal.format_value(*headline) if headline else ""
            self.progress.console.print(f"  ok     {point.config} {sweep}: {figure}")
        else:
            self.progress.console.print(f"  FAILED {point.config} {sweep}: {outcome.error}")
        self.progress.advance(self.task_id)

    def message(self, text: str) -> None:
        self.progress.console.print(text)


# ------------------------------------------------------------------ results


def _campaign_view(store: Store, campaign_id: int) -> dict[str, Any]:
    campaign = store.campaign(campaign_id)
    points = store.points(campaign_id)
    rows = summarize(points, store.metrics(campaign_id))
    return {"campaign": campaign, "points": points, "rows": rows}


def _print_results(store: Store, campaign_id: int, as_json: bool) -> None:
    view = _campaign_view(store, campaign_id)
    campaign, points, rows = view["campaign"], view["points"], view["rows"]
    if as_json:
        _print_json(
            {
                "campaign": {
                    "id": campaign.id,
                    "name": campaign.name,
                    "status": campaign.status,
                    "started_at": campaign.started_at,
                    "ended_at": campaign.ended_at,
                    "host": campaign.host,
                    "device": campaign.device,
                },
                "results": [r.to_dict() for r in rows],
                "failures": [
                    {"seq": p.seq, "config": p.config, "sweep": p.sweep, "error": p.error}
                    for p in points
                    if p.status == "failed"
                ],
            }
        )
        return
    host = campaign.host
    title = (
        f"campaign {campaign.id} {campaign.name} ({campaign.status}) - kernel "
        f"{host.get('kernel_release')}, {host.get('online_cpus')} CPUs "
        f"(nr_cpu_ids {host.get('nr_cpu_ids')})"
    )
    out.print(terminal.results_table(rows, title))
    if any(p.status == "failed" for p in points):
        out.print(terminal.failures_table(points))
    pending = sum(1 for p in points if p.status == "pending")
    if pending:
        out.print(f"{pending} point(s) not run yet: fslab run --resume {campaign.id}")


# ------------------------------------------------------------------ commands


@app.command()
def run(
    spec: Annotated[
        str | None,
        typer.Argument(help="A preset name (see `fslab presets`) or a spec TOML file."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Override a spec field, e.g. --set sweep.numjobs=[1,64] --set run.repeat=5.",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Smoke-sized run: the preset's [quick] form.")
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help="Where to build filesystems: 'ram' (default), 'file:DIR' (a sparse image "
            "in DIR, on a real disk) or 'device:/dev/X' (needs --allow-device).",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", help="Same as --target device:PATH (needs --allow-device)."),
    ] = None,
    allow_device: Annotated[
        list[str] | None,
        typer.Option("--allow-device", help="Allow fslab to format this device. Repeatable."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Format an allowed device even if it has a signature.")
    ] = False,
    collect: Annotated[
        str | None,
        typer.Option(
            "--collect",
            metavar="MODE",
            help="separate (default): headline figures come from clean repetitions (no "
            "collector) and one extra instrumented run per sweep point gathers the evidence "
            "and states its perturbation; inline: every repetition runs the collectors and "
            "counts (the headline is measured under them); off: no collector at all.",
        ),
    ] = None,
    no_collect: Annotated[
        bool, typer.Option("--no-collect", help="Run without any collector (--collect=off).")
    ] = False,
    resume: Annotated[
        int | None, typer.Option("--resume", help="Continue an interrupted campaign by id.")
    ] = None,
    no_preflight: Annotated[
        bool,
        typer.Option(
            "--no-preflight",
            help="Skip trying mkfs, mount and fio options on a scratch image before the run.",
        ),
    ] = False,
    until_ci: Annotated[
        float | None,
        typer.Option(
            "--until-ci",
            metavar="PCT",
            help="Then repeat each point until its headline's 95% CI is within +-PCT%.",
        ),
    ] = None,
    max_repeat: Annotated[
        int | None,
        typer.Option("--max-repeat", help="With --until-ci: most runs per point (default 16)."),
    ] = None,
    fleet_key: Annotated[
        str | None,
        typer.Option(
            "--fleet-key",
            help="Set by `fslab fleet run`: resume this host's unfinished campaign started "
            "with the same key, or show the finished one, instead of starting over.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run an experiment: a preset or a spec file, over all its points."""

    def body() -> None:
        cap = check_options(until_ci, max_repeat)  # before anything runs
        mode = _collect_mode(collect, no_collect)
        options = RunOptions(
            allow_devices=tuple(allow_device or ()), force=force, collect=mode or "separate"
        )
        with _store(db) as store:
            earlier = fleet_campaign(store, fleet_key) if fleet_key else None
            if earlier is not None and earlier.status == "complete":
                err.print(f"campaign {earlier.id} of this fleet run is complete")
                _print_results(store, earlier.id, as_json)
                return
            if resume is not None or earlier is not None:
                campaign_id = resume if resume is not None else earlier.id  # type: ignore[union-attr]
                store.campaign(campaign_id)
                check_resume_mode(store, campaign_id, mode)
            else:
                if spec is None:
                    raise FslabError("give a preset name or spec file (or --resume ID)")
                overrides = list(set_ or [])
                target_text = f"device:{device}" if device is not None else target
                if target_text is not None:
                    overrides += target_overrides(target_text)
                loaded, text = load_spec(spec, overrides=overrides, quick=quick)
                if not no_preflight:
                    _preflight(loaded)
                warning = leftover_warning()
                if warning:
                    err.print(f"[yellow]warning:[/] {warning}", markup=True)
                campaign_id = start_campaign(
                    store,
                    loaded,
                    text,
                    overrides={
                        "set": overrides,
                        "quick": quick,
                        "source": spec,
                        **({"fleet_key": fleet_key} if fleet_key else {}),
                    },
                    options=options,
                )
            err.print(f"campaign {campaign_id} -> {store.location}")
            try:
                with RichProgress(err) as progress:
                    run_campaign(store, campaign_id, options=options, progress=progress)
                    if until_ci is not None:
                        run_until_ci(
                            store,
                            campaign_id,
                            pct=until_ci,
                            max_repeat=cap,
                            options=options,
                            progress=progress,
                        )
            except KeyboardInterrupt:
                err.print(
                    f"interrupted: mounts and loop devices released; "
                    f"continue with `fslab run --resume {campaign_id}`"
                )
                raise typer.Exit(130) from None
            if store.spooled():
                raise FslabError(
                    f"campaign {campaign_id} ran, but {store.location} went away: "
                    f"{store.spooled()} write(s) are kept on this host and sent when it is "
                    "back (`fslab store flush`, or any fslab opening it)"
                )
            _print_results(store, campaign_id, as_json)

    _guarded(body)


def _collect_mode(collect: str | None, no_collect: bool) -> CollectMode | None:
    """--collect / --no-collect as a mode; None when neither was given."""
    if collect is not None and collect not in COLLECT_MODES:
        raise UsageError(f"--collect must be one of {', '.join(COLLECT_MODES)}, not {collect!r}")
    if no_collect:
        if collect not in (None, "off"):
            raise UsageError(f"--no-collect contradicts --collect={collect}")
        return "off"
    return collect  # type: ignore[return-value]


def _preflight(spec: Spec) -> None:
    """Try mkfs, mount and fio options before the campaign exists (a SpecError, exit 2)."""
    try:
        result = run_preflight(spec)
    except KeyboardInterrupt:
        err.print("interrupted during preflight: nothing was created")
        raise typer.Exit(130) from None
    err.print(f"preflight ok ({result.seconds:.1f} s)")


@presets_app.callback(invoke_without_command=True)
def presets(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the built-in presets with one-line descriptions."""
    if ctx.invoked_subcommand is not None:
        return
    entries = []
    for name in preset_names():
        loaded, _ = load_spec(name)
        entries.append({"name": name, "description": loaded.description})
    if as_json:
        _print_json(entries)
        return
    for entry in entries:
        out.print(f"[bold]{entry['name']}[/]\n    {entry['description']}", markup=True)
    out.print("\n`fslab presets show NAME` prints one to copy and edit.")


@presets_app.command("show")
def presets_show(name: Annotated[str, typer.Argument(help="Preset name.")]) -> None:
    """Print a preset's TOML, to copy and edit."""
    _guarded(lambda: sys.stdout.write(preset_path(name).read_text()))


@app.command("list")
def list_(
    host: Annotated[
        str | None, typer.Option("--host", help="Only the campaigns of this host.")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the campaigns in the database (of every host writing to it)."""

    def body() -> None:
        with _store(db) as store:
            campaigns = store.campaigns(host=host)
            counts = store.point_counts()
            if as_json:
                _print_json(
                    [
                        {
                            "id": c.id,
                            "name": c.name,
                            "host": c.hostname,
                            "status": c.status,
                            "started_at": c.started_at,
                            "ended_at": c.ended_at,
                            "points": counts.get(c.id, {}),
                        }
                        for c in campaigns
                    ]
                )
            elif not campaigns:
                out.print(f"no campaigns in {store.location} yet")
            else:
                out.print(terminal.campaigns_table(campaigns, counts))

    _guarded(body)


@app.command()
def show(
    campaign_id: LatestCampaignArg = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a campaign's results table and its failed points with their reasons."""

    def body() -> None:
        with _store(db) as store:
            cid = _campaign_id(store, campaign_id)
            _print_results(store, cid, as_json)

    _guarded(body)


@app.command()
def doctor(
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup", help="Release mounts, loop devices, images left by a killed fslab."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check this machine can run fslab, and say exactly how to fix what is missing."""
    from fslab.target.leftovers import cleanup_leftovers, find_leftovers

    checks = doctor_mod.run_checks()
    leftovers = cleanup_leftovers() if cleanup else find_leftovers()
    if as_json:
        _print_json({"checks": [c.to_dict() for c in checks], "leftovers": vars(leftovers)})
    else:
        for check in checks:
            mark = (
                "[green]ok[/]  "
                if check.ok
                else ("[red]FAIL[/]" if check.required else "[yellow]warn[/]")
            )
            out.print(f"{mark} {check.name}: {check.detail}", markup=True)
            if check.fix:
                out.print(f"       fix: {check.fix}")
        verb = "released" if cleanup else "found"
        if leftovers.empty():
            out.print("[green]ok[/]   no fslab leftovers", markup=True)
        else:
            out.print(
                f"[yellow]warn[/] leftovers {verb}: mounts {leftovers.mounts}, loop devices "
                f"{leftovers.loop_devices}, images {leftovers.images}",
                markup=True,
            )
            if not cleanup:
                out.print("       fix: fslab doctor --cleanup")
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)


@app.command("export")
def export_(
    campaign_id: Annotated[int, typer.Argument(help="Campaign id.")],
    db: DbOption = None,
) -> None:
    """Write a campaign as JSON to stdout (to compare it on another machine)."""
    from fslab.store.exchange import export_campaign

    def body() -> None:
        with _store(db) as store:
            _print_json(export_campaign(store, campaign_id))

    _guarded(body)


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A file written by `fslab export`.")],
    db: DbOption = None,
) -> None:
    """Store a campaign exported elsewhere under a new id, and print that id."""
    from fslab.store.exchange import import_campaign

    def body() -> None:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path}: cannot read a campaign export: {exc}") from None
        with _store(db) as store:
            new_id = import_campaign(store, data)
        out.print(f"imported as campaign {new_id}")

    _guarded(body)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "bisect-run":
        cli_timeseries.bisect_run_main()
        return
    app()


# Command groups in modules of their own; imported last, they register on `app`.
from fslab import (  # noqa: E402, F401
    cli_analyze,
    cli_diagnose,
    cli_fleet,
    cli_kernels,
    cli_report,
    cli_reproduce,
    cli_store,
    cli_timeseries,
)
