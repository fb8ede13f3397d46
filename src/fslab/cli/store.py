"""`fslab store`: upgrade a results database, copy results between databases,
send the writes a shared database missed while it was down."""

from __future__ import annotations

from typing import Annotated

import typer

from fslab.cli.common import DbOption, app, err, guarded, new_app, open_store, out
from fslab.store.copy import copy_store
from fslab.store.db import database_url, default_db, shown_location, upgrade_database

store_app = new_app(
    help=(
        "The results database: a SQLite file by default, or a PostgreSQL shared by many "
        "hosts (--db postgresql://USER@HOST/DBNAME, or $FSLAB_DB)."
    ),
    no_args_is_help=True,
)
app.add_typer(store_app, name="store")


def _shown(location: str) -> str:
    return shown_location(database_url(location))


@store_app.command("migrate")
def migrate(db: DbOption = None) -> None:
    """Upgrade a database to the schema this fslab writes.

    SQLite files upgrade when opened; a shared PostgreSQL waits for this command,
    to run once every host writing to it has this fslab.
    """

    def body() -> None:
        location = db or default_db()
        before, after = upgrade_database(location)
        if before == after:
            out.print(f"{_shown(location)}: schema {after}, nothing to do", markup=False)
        else:
            out.print(f"{_shown(location)}: schema {before or 'none'} -> {after}", markup=False)

    guarded(body)


@store_app.command("copy")
def copy(
    source: Annotated[str, typer.Argument(help="Database to read: a file or postgresql:// URL.")],
    target: Annotated[str, typer.Argument(help="Database to add to: a file or URL.")],
) -> None:
    """Copy every campaign of SOURCE into TARGET (SQLite and PostgreSQL either way).

    Campaigns get new ids in TARGET; those it already holds (same name, host and
    start time) are skipped, so copying again adds only what is new.
    """

    def on_campaign(old: int, new: int | None) -> None:
        if new is None:
            err.print(f"campaign {old}: already in {_shown(target)}, skipped", markup=False)
        else:
            err.print(f"campaign {old} -> {new}")

    def body() -> None:
        result = copy_store(source, target, on_campaign=on_campaign)
        out.print(
            f"copied {result.copied} campaign(s) from {_shown(source)} to {_shown(target)}"
            f"; {result.skipped} already there",
            soft_wrap=True,
        )

    guarded(body)


@store_app.command("flush")
def flush(db: DbOption = None) -> None:
    """Send the writes kept on this host while the shared database was unreachable.

    Any fslab that opens the database sends them too; this says what is left.
    """

    def body() -> None:
        with open_store(db) as store:  # opening sends the spool
            left = store.spooled()
            out.print(
                f"{store.location}: "
                + (f"{left} write(s) still waiting" if left else "nothing waiting")
            )

    guarded(body)
