"""`fslab doctor`: can this machine run fslab, and what did a killed fslab leave behind."""

from __future__ import annotations

from typing import Annotated

import typer

from fslab.cli.common import JsonOption, app, out, print_json
from fslab.run import doctor as doctor_mod


def _print_leftovers(what: str, none: str, empty: bool, found: str, cleaned: bool) -> None:
    if empty:
        out.print(f"[green]ok[/]   {none}", markup=True)
        return
    verb = "released" if cleaned else "found"
    out.print(f"[yellow]warn[/] {what} {verb}: {found}", markup=True)
    if not cleaned:
        out.print("       fix: fslab doctor --cleanup")


@app.command()
def doctor(
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="Release mounts, loop devices, images and qemu guests left by a killed fslab.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check this machine can run fslab, and say exactly how to fix what is missing."""
    from fslab.guest.leftovers import find_guest_leftovers, stop_guest_leftovers
    from fslab.target.leftovers import cleanup_leftovers, find_leftovers
    from fslab.workload.registry import process_names

    checks = doctor_mod.run_checks()
    guests = stop_guest_leftovers() if cleanup else find_guest_leftovers()
    leftovers = cleanup_leftovers(workloads=process_names()) if cleanup else find_leftovers()
    if as_json:
        print_json(
            {
                "checks": [c.to_dict() for c in checks],
                "leftovers": vars(leftovers),
                "guest_leftovers": vars(guests),
            }
        )
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
        _print_leftovers(
            "leftovers",
            "no fslab leftovers",
            leftovers.empty(),
            f"mounts {leftovers.mounts}, loop devices {leftovers.loop_devices}, "
            f"images {leftovers.images}",
            cleanup,
        )
        _print_leftovers(
            "guest leftovers",
            "no guests left running",
            guests.empty(),
            f"processes {guests.processes}, directories {guests.directories}",
            cleanup,
        )
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)
