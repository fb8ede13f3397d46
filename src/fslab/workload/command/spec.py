"""The command benchmark's [workload] table."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fslab.base.vocab import Direction
from fslab.workload.base import WorkloadSpec

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # environment names, placeholders
MAX_ARG_CHARS = 16_384
MAX_ARGS = 256

# A figure's unit and direction, and the metric it is stored as: a campaign's figure
# has one fixed name per kind of figure, so the metric catalog, the headline and the
# reports know its unit and which way is better without reading the spec.
FIGURE_METRICS: dict[tuple[str, Direction], str] = {
    ("1/s", "higher"): "command.figure_per_s",
    ("IO/s", "higher"): "command.figure_iops",
    ("B/s", "higher"): "command.figure_bw_bytes_s",
    ("s", "lower"): "command.figure_s",
    ("ms", "lower"): "command.figure_ms",
    ("ns", "lower"): "command.figure_ns",
    ("", "higher"): "command.figure_higher",
    ("", "lower"): "command.figure_lower",
}


class FigureSpec(BaseModel):
    """The figure a command prints: `pattern`'s last match (its first group, if any)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_ ./-]{0,63}$")]  # shown in reports
    unit: Literal["1/s", "IO/s", "B/s", "s", "ms", "ns", ""] = ""
    direction: Literal["higher", "lower"]
    pattern: Annotated[str, Field(min_length=1, max_length=1000)]
    stream: Literal["stdout", "stderr"] = "stdout"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compiled = re.compile(value, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if compiled.groups > 1:
            raise ValueError("give at most one group: the number")
        return value

    @property
    def metric(self) -> str:
        try:
            return FIGURE_METRICS[(self.unit, self.direction)]
        except KeyError:
            pairs = ", ".join(f"{u or 'none'} {d}" for u, d in FIGURE_METRICS)
            raise ValueError(
                f"a figure in {self.unit or 'no unit'} where {self.direction} is better is not "
                f"one fslab keeps (unit and direction: {pairs})"
            ) from None


class CommandWorkload(WorkloadSpec):
    """A program from the spec, run as an argv (no shell unless argv names one) with
    the scratch directory as its working directory."""

    kind: Literal["command"]
    argv: Annotated[list[Annotated[str, Field(max_length=MAX_ARG_CHARS)]], Field(min_length=1)]
    env: dict[str, Annotated[str, Field(max_length=MAX_ARG_CHARS)]] = Field(default_factory=dict)
    figure: FigureSpec | None = None  # None: the metric is the elapsed time
    allow_commands: bool = False  # opt-in: without it the spec is refused before anything runs

    @field_validator("argv")
    @classmethod
    def _argv_ok(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_ARGS:
            raise ValueError(f"at most {MAX_ARGS} arguments")
        if not value[0] or "=" in value[0] or value[0].startswith("-"):
            raise ValueError(f"argv[0] must name a program, not {value[0]!r}")
        if any("\0" in arg for arg in value):
            raise ValueError("an argument holds a NUL character")
        return value

    @field_validator("env")
    @classmethod
    def _env_ok(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not NAME_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if "\0" in text:
                raise ValueError(f"{name}: holds a NUL character")
        return value

    @field_validator("figure")
    @classmethod
    def _figure_kept(cls, value: FigureSpec | None) -> FigureSpec | None:
        if value is not None:
            _ = value.metric  # a unit and direction fslab has a metric for
        return value
