"""The progress bar `fslab run` and the time-series commands show on stderr."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fslab.analyze.campaign.metrics_catalog import format_value
from fslab.base.roles import is_evidence, is_warmup
from fslab.base.vocab import point_label
from fslab.store.db import PointOutcome, PointRow
from fslab.workload.registry import headline_metric


class RichProgress:
    """Progress bar with ETA on stderr, one line per finished point."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task_id: TaskID | None = None

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def campaign_started(self, campaign_id: int, total: int, done: int) -> None:
        self.task_id = self.progress.add_task(
            f"campaign {campaign_id}", total=total, completed=done
        )

    def point_started(self, point: PointRow) -> None:
        sweep = point_label(point.sweep, empty="")
        run = point.role if is_evidence(point.role) or is_warmup(point.role) else f"#{point.repeat}"
        if self.task_id is not None:
            self.progress.update(self.task_id, description=f"{point.config} {sweep} {run}")

    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None:
        sweep = point_label(point.sweep, empty="")
        if is_evidence(point.role):
            sweep += " (evidence run)"
        elif is_warmup(point.role):
            sweep += " (warm-up, discarded)"
        if outcome.status == "ok":
            headline = headline_metric([outcome.metrics], point.sweep)  # bs swept: B/s
            figure = format_value(headline, outcome.metrics[headline]) if headline else ""
            self.progress.console.print(f"  ok     {point.config} {sweep}: {figure}")
        else:
            self.progress.console.print(f"  FAILED {point.config} {sweep}: {outcome.error}")
        if self.task_id is not None:
            self.progress.advance(self.task_id)

    def message(self, text: str) -> None:
        self.progress.console.print(text)
