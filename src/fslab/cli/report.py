"""`fslab report`: a campaign as plain text for a mailing list, one HTML file, JSON,
or a reply to the bug report it reproduces.

Thin by design: the report is built once (fslab.report.model) and handed to
one renderer; the reply (fslab.report.reply) builds on the same model. Text,
JSON and the reply go to stdout unless -o names a file; HTML is always
written to a file (a page of SVG is no use on a terminal) and its path is
printed, so `make demo` can end by showing where the report is.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fslab.base.errors import UsageError
from fslab.cli.common import (
    DbOption,
    LatestCampaignArg,
    app,
    campaign_or_latest,
    guarded,
    open_store,
    out,
)

if TYPE_CHECKING:  # the renderers import matplotlib: loaded only when a report is made
    from fslab.report.tree import Report


class ReportFormat(StrEnum):
    text = "text"
    html = "html"
    json = "json"
    reply = "reply"


@app.command()
def report(
    campaign_id: LatestCampaignArg = None,
    fmt: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            help="text (80 columns, for mail), html, json, or reply (a 72-column answer to "
            "the report the campaign reproduces).",
        ),
    ] = ReportFormat.text,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write to this file (html default: fslab-report-ID.html here).",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a campaign's report: setup, commands to reproduce, results, scaling,
    comparisons, hot call chains, contention evidence and the diagnosis.

    --format reply drafts the answer to the bug report the campaign reproduces
    (fslab reproduce REPORT --run): what ran and how it was scaled, the
    reporter's figures beside fslab's, the mechanism and its evidence, the
    reporter's hypothesis judged, the remedy's measured verdict, and what this
    machine could not reproduce. Without a report it says what fslab found."""
    from fslab.report.model import build_report

    def body() -> None:
        with open_store(db) as store:
            cid = campaign_or_latest(store, campaign_id)
            if fmt is ReportFormat.reply:
                from fslab.report.reply import reply_text

                document = reply_text(store, cid)
            else:
                document = _render(build_report(store, cid), fmt)
        target = output
        if target is None and fmt is ReportFormat.html:
            target = Path(f"fslab-report-{cid}.html")
        if target is None:
            sys.stdout.write(document)
            return
        try:
            target.write_text(document, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write the report to {target}: {exc}") from None
        out.print(str(target.resolve()), markup=False, highlight=False, soft_wrap=True)

    guarded(body)


def _render(model: Report, fmt: ReportFormat) -> str:
    if fmt is ReportFormat.html:
        from fslab.report.html import render_html

        return render_html(model)
    if fmt is ReportFormat.json:
        from fslab.report.json_report import render_json

        return render_json(model)
    from fslab.report.text import render_text

    return render_text(model)
