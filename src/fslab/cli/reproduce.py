"""`fslab reproduce REPORT`: from a performance report's text to a spec that reproduces it."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from fslab.base.errors import UsageError
from fslab.cli.common import DbOption, JsonOption, app, guarded, print_json
from fslab.cli.run import run
from fslab.reproduce.describe import describe_facts
from fslab.reproduce.extract import MAX_REPORT_BYTES, check_report_size, extract_facts
from fslab.reproduce.scale import HostShape
from fslab.reproduce.specwrite import build_spec


def _read_report(source: str) -> str:
    """The report's text, read no further than one byte past the size fslab accepts."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_REPORT_BYTES + 1)
        else:
            with Path(source).open("rb") as handle:
                data = handle.read(MAX_REPORT_BYTES + 1)
        check_report_size(len(data), source)
        return data.decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"report file not found: {source}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source}: the report is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{source}: cannot read the report: {exc.strerror}") from None


@app.command()
def reproduce(
    report: Annotated[str, typer.Argument(help="The report's text: a file, or - for stdin.")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write the spec here (default: print it)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing --output file.")
    ] = False,
    run_now: Annotated[
        bool, typer.Option("--run", help="Then run the spec, as `fslab run SPEC` would.")
    ] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="With --run: the spec's smoke-sized [quick] form.")
    ] = False,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="With --run: override a spec field, as for `fslab run`."),
    ] = None,
    no_collect: Annotated[
        bool, typer.Option("--no-collect", help="With --run: run without collectors.")
    ] = False,
    on_host: Annotated[
        bool,
        typer.Option(
            "--host",
            help="No guest: run on this host even where the report's kernel or CPU count "
            "could run in a qemu guest (they are then listed as not reproduced).",
        ),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read a performance report and write a spec that reproduces it on this machine.

    fslab reads the workload (fio command lines, options in braces, job files,
    lkp-tests parameters, dd transcripts), mkfs and mount commands, kernels, CPU
    count, memory, device size and limits, the reporter's figures and
    hypothesis, each with the line it came from. The spec scales the report to
    this machine and says why in comments; the facts go in its [reported]
    table. The report's kernel (Debian's 5.10, 6.1, 6.12) and CPU count (as
    possible CPUs) run in a qemu guest unless --host. Nothing runs until --run.
    """

    def body() -> None:
        if (quick or set_ or no_collect) and not run_now:
            raise UsageError("--quick, --set and --no-collect apply to --run; add --run")
        if output is not None and output.exists() and not force:
            raise UsageError(f"{output} exists; choose another -o or add --force")
        facts = extract_facts(_read_report(report))
        name = Path(report).name if report != "-" else "-"
        reproduction = build_spec(
            facts, source_name=name, host=HostShape.current(), guests=not on_host
        )
        lines = [f"read from {name}:", *describe_facts(facts)]
        for question in reproduction.questions:
            where = f"line {question.source.number}: " if question.source else ""
            lines.append(f"question: {where}{question.question}; assumed: {question.assumed}")
        lines += [f"warning: not reproducible here: {w}" for w in reproduction.warnings]
        sys.stderr.write("\n".join(lines) + "\n")
        if output is not None:
            output.write_text(reproduction.toml)
            sys.stderr.write(f"spec written to {output}\n")
        elif as_json and not run_now:
            print_json(
                {"spec": reproduction.spec.model_dump(mode="json"), "toml": reproduction.toml}
            )
        elif not run_now:
            sys.stdout.write(reproduction.toml)
        if run_now:
            path = output or _temporary_spec(reproduction.toml, reproduction.spec.name)
            run(
                spec=str(path),
                set_=set_,
                quick=quick,
                no_collect=no_collect,
                db=db,
                as_json=as_json,
            )

    guarded(body)


def _temporary_spec(text: str, name: str) -> Path:
    """Where --run without -o keeps the spec (the campaign stores its text anyway)."""
    path = Path(tempfile.mkdtemp(prefix="fslab-reproduce-")) / f"{name}.toml"
    path.write_text(text)
    return path
