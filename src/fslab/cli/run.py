"""`fslab run` and `fslab presets`: run an experiment, list and print the built-in ones."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from fslab.base.errors import FslabError, UsageError
from fslab.base.roles import COLLECT_MODES, CollectMode
from fslab.cli.common import (
    DbOption,
    JsonOption,
    app,
    err,
    guarded,
    new_app,
    open_store,
    out,
    print_json,
)
from fslab.cli.progress import RichProgress
from fslab.cli.results import print_results
from fslab.drive.rounds import (
    AnswerResult,
    check_budget,
    check_options,
    run_until_answered,
    run_until_ci,
)
from fslab.fleet.campaigns import fleet_campaign
from fslab.measure import plan
from fslab.run.campaign import (
    RunOptions,
    check_resume_mode,
    leftover_warning,
    run_campaign,
    start_campaign,
)
from fslab.run.preflight import run_preflight
from fslab.spec.load import (
    guest_overrides,
    load_spec,
    preset_names,
    preset_path,
    spec_data,
    target_overrides,
)
from fslab.spec.model import Spec

presets_app = new_app(
    help="Built-in experiments (the seed reports among them).", no_args_is_help=False
)
app.add_typer(presets_app, name="presets")


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
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            metavar="RELEASE|PATH",
            help="Run every point in a qemu guest booting this kernel: a release or series "
            "from `fslab kernels list` (6.1.0-57-amd64, 6.1) or your own build's path.",
        ),
    ] = None,
    cpus: Annotated[
        int | None,
        typer.Option("--cpus", metavar="N", help="Guest vCPUs (default 2)."),
    ] = None,
    possible_cpus: Annotated[
        int | None,
        typer.Option(
            "--possible-cpus",
            metavar="M",
            help="The guest's possible CPUs (nr_cpu_ids), e.g. 1728 for the reporter's box.",
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            metavar="SIZE",
            help="Guest RAM (default: the target image + 1 GiB, at least 2 GiB).",
        ),
    ] = None,
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
    adaptive: Annotated[
        bool | None,
        typer.Option(
            "--adaptive/--grid",
            help="Adaptive: scan the first configuration's curve coarsely and let the "
            "campaign's questions add points where it falls and the other configurations "
            "where the answer needs them (at most 1/4 of the grid's machine time by "
            "default). Grid: every configuration at every sweep point. Default: the "
            "spec's run.adaptive.",
        ),
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            metavar="DURATION",
            help="Machine time the campaign's runs may take in all (10m, 1h). After the "
            "planned runs fslab adds runs where its questions are still open: does each "
            "configuration fall off, does each other one differ at the bad point, is the "
            "first mechanism's lead stable. Default: 255s with --quick, else 1.5 x the planned "
            "runs; 0: the planned runs only. Not with --until-ci.",
        ),
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
        budget_s = check_budget(budget, until_ci)
        mode = _collect_mode(collect, no_collect)
        options = RunOptions(
            allow_devices=tuple(allow_device or ()), force=force, collect=mode or "separate"
        )
        with open_store(db) as store:
            earlier = fleet_campaign(store, fleet_key) if fleet_key else None
            if earlier is not None and earlier.status == "complete":
                err.print(f"campaign {earlier.id} of this fleet run is complete")
                print_results(store, earlier.id, as_json)
                return
            if resume is not None or earlier is not None:
                campaign_id = resume if resume is not None else earlier.id  # type: ignore[union-attr]
                store.campaign(campaign_id)
                check_resume_mode(store, campaign_id, mode)
            else:
                if spec is None:
                    raise FslabError("give a preset name or spec file (or --resume ID)")
                overrides = list(set_ or [])
                if adaptive is not None:
                    overrides.append(f"run.adaptive={str(adaptive).lower()}")
                target_text = f"device:{device}" if device is not None else target
                if target_text is not None:
                    overrides += target_overrides(target_text)
                guest_flags = {
                    "kernel": kernel,
                    "cpus": cpus,
                    "possible_cpus": possible_cpus,
                    "memory": memory,
                }
                if any(value is not None for value in guest_flags.values()):
                    data, _ = spec_data(spec, overrides=overrides, quick=quick)
                    overrides += guest_overrides(guest_flags, data.get("sweep") or {})
                loaded, text = load_spec(spec, overrides=overrides, quick=quick)
                _say_opted_in(loaded)
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
            err.print(f"campaign {campaign_id} -> {store.location}", markup=False)
            answered: AnswerResult | None = None
            try:
                # one lock from the planned runs through the questions' rounds: another
                # fslab resuming the campaign between two rounds would add rounds too
                with store.campaign_lock(campaign_id), RichProgress(err) as progress:
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
                    else:
                        answered = run_until_answered(
                            store,
                            campaign_id,
                            budget_s=budget_s,
                            options=options,
                            progress=progress,
                        )
            except KeyboardInterrupt:
                err.print(
                    f"interrupted: mounts, loop devices and guests released; "
                    f"continue with `fslab run --resume {campaign_id}`"
                )
                raise typer.Exit(130) from None
            if store.spooled():
                raise FslabError(
                    f"campaign {campaign_id} ran, but {store.location} went away: "
                    f"{store.spooled()} write(s) are kept on this host and sent when it is "
                    "back (`fslab store flush`, or any fslab opening it)"
                )
            print_results(store, campaign_id, as_json)
            if answered is not None:
                _say_questions(answered)

    guarded(body)


def _say_questions(answered: AnswerResult) -> None:
    """What the campaign settled and what it left open, after its results."""
    if not answered.questions:
        return
    settled = [q for q in answered.questions if q.status == "settled"]
    added = (
        f"; {answered.added} run(s) added in {answered.rounds} round(s)" if answered.rounds else ""
    )
    err.print(
        f"questions: {len(settled)} of {len(answered.questions)} settled{added}", markup=False
    )
    for question in answered.questions:
        mark = "  settled" if question.status == "settled" else "  OPEN   "
        err.print(f"{mark} {question.describe()}", markup=False, soft_wrap=False)


def _say_opted_in(spec: Spec) -> None:
    """A spec that opted in to commands says, before anything runs, what they are."""
    plan.check_workload(spec)
    for found in plan.opted_in_commands(spec):
        err.print(
            f"[yellow]allow_commands:[/] the workload runs {escape(found.shown)} ({found.reason})",
            markup=True,
        )


def _collect_mode(collect: str | None, no_collect: bool) -> CollectMode | None:
    """--collect / --no-collect as a mode; None when neither was given."""
    if collect is not None and collect not in COLLECT_MODES:
        raise UsageError(f"--collect must be one of {', '.join(COLLECT_MODES)}, not {collect!r}")
    if no_collect:
        if collect not in (None, "off"):
            raise UsageError(f"--no-collect contradicts --collect={collect}")
        return "off"
    return next(mode for mode in COLLECT_MODES if mode == collect) if collect else None


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
        print_json(entries)
        return
    for entry in entries:
        out.print(f"[bold]{entry['name']}[/]\n    {entry['description']}", markup=True)
    out.print("\n`fslab presets show NAME` prints one to copy and edit.")


@presets_app.command("show")
def presets_show(name: Annotated[str, typer.Argument(help="Preset name.")]) -> None:
    """Print a preset's TOML, to copy and edit."""
    guarded(lambda: sys.stdout.write(preset_path(name).read_text()))
