"""`fslab fleet`: the same campaign on every host of an Ansible inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fslab.base.errors import FslabError
from fslab.cli.common import DbOption, JsonOption, app, err, guarded, new_app, out, print_json
from fslab.fleet.campaigns import fleet_campaign
from fslab.fleet.run import FleetPlan, run_fleet
from fslab.fleet.state import FleetState, HostOutcome, host_outcomes
from fslab.spec.load import load_spec
from fslab.store.db import Store, StoreUnavailable, default_db

fleet_app = new_app(
    help=(
        "Run one campaign on many hosts through ansible-playbook (a playbook fslab ships): "
        "fslab and its Debian packages are installed on each host, checked with "
        "`fslab doctor`, and the campaign runs with the host's own fslab_allow_devices. "
        "Results land in the shared store (--db postgresql://...)."
    ),
    no_args_is_help=True,
)
app.add_typer(fleet_app, name="fleet")


@fleet_app.command("run")
def run(
    inventory: Annotated[Path, typer.Argument(help="Ansible inventory (INI or YAML).")],
    spec: Annotated[str, typer.Argument(help="Preset name or spec file.")],
    limit: Annotated[
        str | None, typer.Option("--limit", help="Only these hosts (an ansible host pattern).")
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="As `fslab run --quick`.")] = False,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="As `fslab run --set K=V`. Repeatable.")
    ] = None,
    new: Annotated[
        bool,
        typer.Option("--new", help="Start every host over instead of resuming this fleet run."),
    ] = False,
    db: DbOption = None,
) -> None:
    """Run SPEC on every host of INVENTORY; re-running resumes unfinished hosts.

    Each host needs root (mkfs, loop devices). Per host, the inventory may set
    fslab_allow_devices, fslab_target, fslab_home, fslab_command and fslab_db
    (the header of the shipped playbook, fslab/fleet/playbook.yml, says what
    each does). A host that cannot reach the --db store runs into its own
    database; its campaign is fetched back and imported.
    """

    def body() -> None:
        run_args = (("--quick",) if quick else ()) + tuple(
            arg for item in set_ or [] for arg in ("--set", item)
        )
        load_spec(spec, overrides=list(set_ or []), quick=quick)  # bad input stops here
        plan = FleetPlan(
            inventory=inventory,
            spec=spec,
            run_args=run_args,
            db=db or default_db(),
            limit=limit,
            fresh=new,
        )
        err.print(f"fleet run {plan.key()}: {spec} -> {plan.db and _shown(plan.db)}", markup=False)
        outcomes = run_fleet(plan, echo=lambda line: err.print(line, markup=False))
        _print_outcomes(outcomes, plan.db, plan.key())
        if any(o.state != "done" for o in outcomes):
            raise typer.Exit(1)

    guarded(body)


def _shown(db: str) -> str:
    from fslab.store.db import database_url, shown_location

    return shown_location(database_url(db))


def _progress(store: Store | None, key: str, host: str) -> str:
    if store is None:
        return ""
    campaign = fleet_campaign(store, key, host)
    if campaign is None:
        return "no campaign yet"
    counts = store.point_counts().get(campaign.id, {})
    done = counts.get("ok", 0) + counts.get("failed", 0)
    total = done + counts.get("pending", 0)
    return f"campaign {campaign.id} {campaign.status}, {done}/{total} points"


def _print_outcomes(outcomes: list[HostOutcome], db: str, key: str | None = None) -> None:
    store: Store | None = None
    if db and key:
        try:
            store = Store(db)
        except StoreUnavailable as exc:
            err.print(f"progress not shown: {exc}", markup=False)
    try:
        for outcome in outcomes:
            progress = _progress(store, key, outcome.host) if key else ""
            line = outcome.describe() + (f" [{progress}]" if progress else "")
            out.print(line, markup=False, soft_wrap=True)
    finally:
        if store is not None:
            store.close()
    failed = [o for o in outcomes if o.state != "done"]
    summary = f"{len(outcomes) - len(failed)}/{len(outcomes)} hosts done"
    out.print(
        summary + (f"; not done: {', '.join(o.host for o in failed)}" if failed else ""),
        soft_wrap=True,
    )


@fleet_app.command("status")
def status(
    key: Annotated[
        str | None, typer.Argument(help="Fleet run key (default: the latest fleet run).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per-host progress of a fleet run, also while it runs."""

    def body() -> None:
        state = FleetState.load(key)
        outcomes = host_outcomes(state.events())
        if not outcomes:
            raise FslabError(f"fleet run {state.info['key']}: no host has reported yet")
        if as_json:
            print_json({**state.info, "hosts": [o.to_dict() for o in outcomes]})
            return
        finished = state.info.get("finished_at") or "still running"
        out.print(
            f"fleet run {state.info['key']}: {state.info['spec']} on {state.info['inventory']}"
            f" (started {state.info['started_at']}, finished: {finished})",
            markup=False,
            soft_wrap=True,
        )
        _print_outcomes(outcomes, db or default_db(), state.info["key"])

    guarded(body)
