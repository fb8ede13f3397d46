"""The `fslab` command line: thin typer commands over the library.

`common` holds the app, the consoles, the shared options and the error guard;
each other module is one command group and registers its commands on the app
when imported here, in the order `fslab --help` lists them.
"""

# isort: skip_file
from __future__ import annotations

import sys

from fslab.cli.common import app
from fslab.cli import run  # noqa: F401
from fslab.cli import campaigns  # noqa: F401
from fslab.cli import doctor  # noqa: F401
from fslab.cli import workloads  # noqa: F401
from fslab.cli import analyze  # noqa: F401
from fslab.cli import diagnose  # noqa: F401
from fslab.cli import kernels  # noqa: F401
from fslab.cli import report  # noqa: F401
from fslab.cli import reproduce  # noqa: F401
from fslab.cli import timeseries
from fslab.cli import store  # noqa: F401
from fslab.cli import fleet  # noqa: F401

__all__ = ["app", "main"]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "bisect-run":
        timeseries.bisect_run_main()
        return
    app()
