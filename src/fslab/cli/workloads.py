"""`fslab workloads`: the registered benchmarks, their packages, axes and metrics."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from fslab.cli.common import JsonOption, app, out, print_json
from fslab.run.doctor import WorkloadRow, workload_listing


def _package(row: WorkloadRow) -> str:
    state = {True: "installed", False: "[red]not installed[/]", None: "unknown"}
    return f"{escape(row.package)}\n{state[row.package_installed]}"


def _axes(row: WorkloadRow) -> str:
    return "; ".join(part for part in (", ".join(row.axes), row.open_axes) if part)


def _metrics(row: WorkloadRow) -> str:
    lines = [f"headline: {' or '.join(row.headline) or '-'}"]
    lines += [f"{m['name']} [{m['unit']}, {m['direction']}]" for m in row.metrics]
    return escape("\n".join(lines))


@app.command()
def workloads(as_json: JsonOption = False) -> None:
    """List the benchmarks a spec's workload.kind can name, and what each needs."""
    rows = workload_listing()
    if as_json:
        print_json({"workloads": [row.to_dict() for row in rows]})
        return
    table = Table(show_lines=True)
    for column in ("kind", "package", "binary", "axes", "metrics"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            f"{row.kind}\n{escape(row.summary)}",
            _package(row),
            escape(row.binary_path or f"{row.binary} (not found)"),
            escape(_axes(row)),
            _metrics(row),
        )
    out.print(table)
