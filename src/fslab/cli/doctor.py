"""`fslab doctor`: can this machine run fslab, and what did a killed fslab leave behind."""

from __future__ import annotations

from typing import Annotated

import typer

from fslab import doctor as doctor_mod
from fslab.cli.common import JsonOption, app, out, print_json


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
        print_json({"checks": [c.to_dict() for c in checks], "leftovers": vars(leftovers)})
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
