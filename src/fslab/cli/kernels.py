"""`fslab kernels`: the guest kernels fslab has cached, and those Debian offers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from fslab.cli.common import JsonOption, app, err, guarded, new_app, out, print_json
from fslab.guest.debian import DebianRegistry, RegistryKernel
from fslab.guest.kernels import Kernel, cached_kernels, kernels_dir, resolve_kernel

kernels_app = new_app(
    help=(
        "Kernels for guests: fslab's cache and Debian's registry (5.10 from bullseye, "
        "6.1 and 6.12 from bookworm). A kernel you built is given by its path instead."
    ),
    no_args_is_help=True,
)
app.add_typer(kernels_app, name="kernels")


def _kernel_dict(kernel: Kernel) -> dict[str, object]:
    return {
        "release": kernel.release,
        "image": str(kernel.image),
        "modules": str(kernel.modules_dir) if kernel.modules_dir else None,
        "source": kernel.source,
        "nr_cpus_max": kernel.max_possible_cpus(),
    }


def _registry_dict(kernel: RegistryKernel) -> dict[str, object]:
    return {
        "release": kernel.release,
        "series": kernel.series,
        "package": kernel.package,
        "version": kernel.version,
        "suite": kernel.suite,
    }


@kernels_app.command("list")
def list_(
    registry: Annotated[
        bool,
        typer.Option(
            "--registry/--cached", help="Also ask Debian's registry (default), or only the cache."
        ),
    ] = True,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Re-read Debian's package lists now.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Cached kernels, and the kernels Debian's registry offers to `fslab kernels fetch`."""

    def body() -> None:
        cached = cached_kernels()
        offered: list[RegistryKernel] = []
        if registry:
            debian = DebianRegistry()
            debian.update(force=refresh)
            offered = debian.available()
        if as_json:
            print_json(
                {
                    "cache": str(kernels_dir()),
                    "cached": [_kernel_dict(k) for k in cached],
                    "registry": [_registry_dict(k) for k in offered],
                }
            )
            return
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=f"cached in {kernels_dir()}")
        for column in ("release", "source"):
            table.add_column(column)
        for kernel in cached:
            table.add_row(kernel.release, kernel.source)
        out.print(table if cached else f"no kernels cached in {kernels_dir()} yet")
        if registry:
            have = {k.release for k in cached}
            table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="Debian's registry")
            for column in ("release", "series", "version", "suite", ""):
                table.add_column(column)
            for offer in offered:
                mark = "cached" if offer.release in have else ""
                table.add_row(offer.release, offer.series, offer.version, offer.suite, mark)
            out.print(table)
            out.print("fetch one with `fslab kernels fetch RELEASE` (a series such as 6.1 works)")

    guarded(body)


@kernels_app.command("fetch")
def fetch(
    release: Annotated[
        str, typer.Argument(help="A release (6.1.0-57-amd64) or a series (5.10, 6.1, 6.12).")
    ],
) -> None:
    """Download a Debian kernel package and unpack it, modules included, into the cache."""

    def body() -> None:
        err.print(f"looking up {release} in Debian's registry ...")
        kernel, fetched = DebianRegistry().fetch(release)
        verb = "fetched" if fetched else "already cached:"
        out.print(f"{verb} {kernel.release} ({kernel.source}) in {kernel.image.parent.parent}")

    guarded(body)


@kernels_app.command("check")
def check(
    kernel: Annotated[
        str, typer.Argument(help="A cached release or series, or the path of your own build.")
    ],
    modules: Annotated[
        Path | None,
        typer.Option("--modules", help="The modules directory (lib/modules/RELEASE) of a bzImage."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Say whether a kernel can boot a guest: its release, image, modules and NR_CPUS."""

    def body() -> None:
        found = resolve_kernel(kernel, str(modules) if modules else None)
        data = _kernel_dict(found)
        if as_json:
            print_json(data)
            return
        for key, value in data.items():
            out.print(f"{key:12} {value if value is not None else '-'}", soft_wrap=True)

    guarded(body)
