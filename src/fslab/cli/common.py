"""What every command shares: the typer app, the consoles, the common options and the
error guard (an fslab error is one red line and its exit code, never a traceback)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from fslab.base.errors import FslabError
from fslab.store.db import Store, default_db


def new_app(help: str, *, no_args_is_help: bool = True) -> typer.Typer:
    """A command group. Help is plain text: rich markup would eat the "[quick]" of
    "the preset's [quick] form" and every other spec table a help names."""
    return typer.Typer(
        help=help,
        no_args_is_help=no_args_is_help,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


app = new_app(
    help=(
        "fslab finds where Linux filesystem performance falls off, and explains why.\n\n"
        "It builds each filesystem of an experiment on a scratch device (a RAM-backed "
        "loop image by default), runs the workload at every sweep point, and stores the "
        "numbers with what the kernel was doing. Start with `fslab presets` and "
        "`fslab run ext4-fsync-storm --quick`."
    )
)


class _Out(Console):
    """Standard output. Piped into a file or a mail, a table is printed at its own width:
    an 80-column default must not cut a configuration's name or a figure to "…"."""

    def print(self, *objects: object, **kwargs: object) -> None:
        table = objects[0] if len(objects) == 1 else None
        if self.is_terminal or not isinstance(table, Table):
            super().print(*objects, **kwargs)  # type: ignore[arg-type]
            return
        width = self.width
        self.width = max(
            width, Measurement.get(self, self.options.update_width(1000), table).maximum
        )
        try:
            super().print(table, **kwargs)  # type: ignore[arg-type]
        finally:
            self.width = width


out = _Out(highlight=False, soft_wrap=False)
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


def open_store(db: str | Path | None) -> Store:
    return Store(db or default_db())


def campaign_or_latest(store: Store, campaign_id: int | None) -> int:
    """The campaign asked for, or the latest one."""
    return campaign_id if campaign_id is not None else store.latest_campaign_id()


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fail(exc: FslabError) -> typer.Exit:
    # the message may quote input ('[/]' in a name is not markup)
    err.print(f"[bold red]fslab:[/] {escape(str(exc))}", markup=True, highlight=False)
    return typer.Exit(exc.exit_code)


def guarded(func: Callable[[], object]) -> None:
    """Run a command body, turning fslab errors into a message and an exit code."""
    try:
        func()
    except FslabError as exc:
        raise fail(exc) from None
