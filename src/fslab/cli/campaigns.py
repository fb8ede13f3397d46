"""`fslab list`, `show`, `export` and `import`: the stored campaigns."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fslab.cli.common import (
    DbOption,
    JsonOption,
    LatestCampaignArg,
    app,
    campaign_or_latest,
    guarded,
    open_store,
    out,
    print_json,
)
from fslab.cli.results import print_results
from fslab.report import terminal


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
        with open_store(db) as store:
            campaigns = store.campaigns(host=host)
            counts = store.point_counts()
            if as_json:
                print_json(
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
                out.print(f"no campaigns in {store.location} yet", markup=False)
            else:
                out.print(terminal.campaigns_table(campaigns, counts))

    guarded(body)


@app.command()
def show(
    campaign_id: LatestCampaignArg = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a campaign's results table and its failed points with their reasons."""

    def body() -> None:
        with open_store(db) as store:
            cid = campaign_or_latest(store, campaign_id)
            print_results(store, cid, as_json)

    guarded(body)


@app.command("export")
def export_(
    campaign_id: Annotated[int, typer.Argument(help="Campaign id.")],
    db: DbOption = None,
) -> None:
    """Write a campaign as JSON to stdout (to compare it on another machine)."""
    from fslab.store.exchange import export_campaign

    def body() -> None:
        with open_store(db) as store:
            print_json(export_campaign(store, campaign_id))

    guarded(body)


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="A file written by `fslab export`.")],
    db: DbOption = None,
) -> None:
    """Store a campaign exported elsewhere under a new id, and print that id."""
    from fslab.store.exchange import import_campaign, read_export

    def body() -> None:
        data = read_export(path)  # checked whole before the store is opened
        with open_store(db) as store:
            new_id = import_campaign(store, data)
        out.print(f"imported as campaign {new_id}")

    guarded(body)
