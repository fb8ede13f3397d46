"""Every command's --help prints its options' help as written."""

from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

from fslab.cli import app


def _commands(group, path: tuple[str, ...] = ()):
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():  # typer's own click
        yield from _commands(sub, (*path, name))


def test_help_keeps_the_spec_tables_it_names():
    """'the preset's [quick] form' read as rich markup lost its "[quick]"."""
    runner = CliRunner()
    checked = 0
    for path, command in _commands(typer.main.get_command(app)):
        shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0, (path, shown.output)
        text = " ".join(shown.output.split())
        for param in command.params:
            for bracketed in re.findall(r"\[[a-z_.]+\]", getattr(param, "help", None) or ""):
                assert bracketed in text, (path, param.name, bracketed)
                checked += 1
    assert checked >= 2  # run --quick and reproduce --quick
