"""The command benchmark: a program from the spec, run in the scratch filesystem.

It runs whatever the spec names, so a spec must opt in with
`[workload] allow_commands = true` (docs/security.md): without it `check` and
`plan` refuse it before anything is created. The argv is run as given, never
through a shell (a spec that wants one says so: ["sh", "-c", "..."]), as
`env -C <scratch mount> -- NAME=value ... FSLAB_WORKLOAD=<mount> argv`, so its
working directory is the filesystem under test, the recorded command replays by
hand as it ran, and everything it starts carries the mark a cleanup after a
killed fslab stops it by (its programs' names can be anything).

A sweep axis is any environment variable name: at each point its value is
set in the command's environment and replaces `{name}` in the argv (not
`${name}`, which stays the shell's). Values are substituted as plain text into
single argv words, never parsed by fslab. The metric is the command's wall
time (`command.seconds`), or the figure its output prints, found by the
spec's pattern (parse.py), stored under the name its unit and direction give.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import ClassVar

from fslab.base.errors import FslabError, UsageError
from fslab.base.proc import WORKLOAD_MARK
from fslab.base.vocab import ScalarValue
from fslab.workload.base import (
    Benchmark,
    Command,
    FromReport,
    Metric,
    OptedIn,
    Output,
    Plan,
    ReportOptions,
    RunShape,
    Sweep,
    WorkloadOutcome,
    WorkloadSpec,
)
from fslab.workload.command import report as command_report
from fslab.workload.command.parse import parse_figure
from fslab.workload.command.spec import FIGURE_METRICS, NAME_RE, CommandWorkload

ELAPSED = "command.seconds"
_PLACEHOLDER_RE = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _command(workload: WorkloadSpec) -> CommandWorkload:
    assert isinstance(workload, CommandWorkload), workload
    return workload


def spelled(value: ScalarValue) -> str:
    """A sweep value as the command sees it: 4, 0.5, text (Python's spelling, as TOML
    gave it); true and false as 1 and 0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def point_env(w: CommandWorkload, sweep: Sweep) -> dict[str, str]:
    """The variables the command is given at this point: the spec's env, then the sweep's."""
    return {**w.env, **{k: spelled(v) for k, v in sweep.items()}}


def substituted(argv: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """{name} in each word replaced by its value; other braces (and ${name}) left alone."""

    def one(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return [_PLACEHOLDER_RE.sub(one, word) for word in argv]


def command_argv(w: CommandWorkload, sweep: Sweep, directory: str) -> list[str]:
    """env -C <scratch> -- the point's variables, the workload mark, the argv."""
    env = point_env(w, sweep)
    return [
        "env",
        "-C",
        directory,
        "--",
        *(f"{k}={v}" for k, v in env.items()),
        f"{WORKLOAD_MARK}={directory}",  # found by a cleanup after a killed fslab
        *substituted(w.argv, env),
    ]


def refuse_without_opt_in(w: CommandWorkload) -> None:
    if not w.allow_commands:
        raise UsageError(
            f"workload.argv: {shlex.join(w.argv)[:200]}: a command workload runs the spec's "
            "own program. fslab runs a workload that runs programs only when the spec opts "
            "in with workload.allow_commands = true"
        )


class CommandBenchmark(Benchmark):
    kind = "command"
    Spec = CommandWorkload
    summary = "command: the spec's own argv, run in the scratch dir, timed or a printed figure"
    package = "coreutils"
    binary = "env"  # env -C <scratch> runs the command (coreutils >= 8.28)
    any_process = True  # env execs the argv, which may start anything
    open_axes = "any environment variable name: set, and {name} in argv replaced"
    metrics = (
        Metric(ELAPSED, "s", "lower", "the command's wall time, start to exit"),
        *(
            Metric(name, unit, direction, f"the command's figure ({unit or 'no unit'})")
            for (unit, direction), name in FIGURE_METRICS.items()
        ),
    )
    headline = (*FIGURE_METRICS.values(), ELAPSED)
    labels: ClassVar[Mapping[str, str]] = {
        ELAPSED: "elapsed",
        **{name: "figure" for name in FIGURE_METRICS.values()},
    }

    def check_axis(self, axis: str, values: Sequence[ScalarValue]) -> None:
        if not NAME_RE.match(axis):
            raise ValueError(
                f"sweep.{axis}: a command workload sweeps environment variables: a name of "
                "letters, digits and _ that does not start with a digit"
            )

    def swept(self, workload: WorkloadSpec, sweep: Sweep) -> WorkloadSpec:
        return workload  # swept values are environment variables, applied by plan()

    def plan(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape, directory: str) -> Plan:
        w = _command(workload)
        refuse_without_opt_in(w)
        return Plan((Command("run", tuple(command_argv(w, sweep, directory))),), workload=w)

    def check(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> None:
        refuse_without_opt_in(_command(workload))

    def opted_in(self, workload: WorkloadSpec, sweep: Sweep, run: RunShape) -> list[OptedIn]:
        w = _command(workload)
        if not w.allow_commands:
            return []
        env = point_env(w, sweep)
        shown = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items())])
        line = shlex.join(substituted(w.argv, env))
        return [OptedIn(f"{shown} {line}".strip(), "the spec's command, in the scratch directory")]

    def from_report(self, options: ReportOptions) -> FromReport:
        return command_report.from_report(options)

    def parse(self, out: Output) -> dict[str, float]:
        metrics = {ELAPSED: out.seconds}
        figure = None if out.workload is None else _command(out.workload).figure
        if figure is not None:
            text = out.stdout if figure.stream == "stdout" else out.stderr
            metrics[figure.metric] = parse_figure(text, re.compile(figure.pattern, re.MULTILINE))
        return metrics

    def judge(self, out: Output) -> WorkloadOutcome:
        """As the default, named by the spec's program rather than env."""
        after = list(out.argv[out.argv.index("--") + 1 :]) if "--" in out.argv else []
        program = next((word for word in after if "=" not in word), out.argv[0])
        if out.timed_out:
            error = f"{program} hung: killed after the point timeout of {out.timeout_s:.0f} s"
            return WorkloadOutcome(ok=False, error=error, stderr=out.stderr)
        if out.returncode != 0:
            last = out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or [""]
            error = f"{program} exited {out.returncode}: {last[-1]}".rstrip(": ")
            return WorkloadOutcome(ok=False, error=error, stderr=out.stderr)
        try:
            metrics = self.parse(out)
        except FslabError as exc:
            return WorkloadOutcome(ok=False, error=str(exc), stderr=out.stderr)
        return WorkloadOutcome(ok=True, metrics=metrics, artifacts=self.artifacts(out))

    def describe(self, workload: WorkloadSpec) -> list[str]:
        w = _command(workload)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in w.env.items())
        lines = [f"cd MNT && {env + ' ' if env else ''}{shlex.join(w.argv)}"]
        if w.figure is not None:
            f = w.figure
            lines.append(
                f"figure: {f.name} ({f.unit or 'no unit'}, {f.direction} is better), the last "
                f"match of {f.pattern!r} on {f.stream}, stored as {f.metric}"
            )
        else:
            lines.append(f"metric: the command's wall time ({ELAPSED})")
        return lines
