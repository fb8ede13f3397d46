"""`fslab diagnose`: which kernel mechanism explains the falloff, and why the others don't."""

from __future__ import annotations

from typing import Annotated

import typer

from fslab.cli.common import (
    DbOption,
    JsonOption,
    LatestCampaignArg,
    app,
    campaign_or_latest,
    guarded,
    open_store,
    out,
    print_json,
)
from fslab.diagnose.diagnosis import diagnose_campaign
from fslab.diagnose.hypotheses import check_mechanism
from fslab.report.diagnosis_text import describe_diagnosis, describe_hypothesis


@app.command()
def diagnose(
    campaign_id: LatestCampaignArg = None,
    hypothesis: Annotated[
        str | None,
        typer.Option(
            "--hypothesis",
            metavar="MECHANISM",
            help="Judge one mechanism in full, for or against (e.g. workqueue-serialisation).",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rank the kernel mechanisms that explain each configuration's falloff.

    Each mechanism (one rule file in fslab/diagnose/rules/) is scored by the share
    of the change from the good point to the bad point it accounts for, in the
    off-CPU and on-CPU profiles and its own metrics; configurations that held up
    at the bad point confirm or weaken it; the strongest alternatives are ruled
    out with their numbers. Without a falloff there is nothing to explain.
    """

    def body() -> None:
        if hypothesis is not None:
            check_mechanism(hypothesis)
        with open_store(db) as store:
            cid = campaign_or_latest(store, campaign_id)
            diagnoses = diagnose_campaign(store, cid)
        if as_json:
            configs = [d.to_dict() for d in diagnoses]
            if hypothesis is not None:
                for d, data in zip(diagnoses, configs, strict=True):
                    judged = d.candidate(hypothesis)
                    data["hypothesis"] = judged.to_dict() if judged else None
            print_json({"campaign": cid, "hypothesis": hypothesis, "configs": configs})
            return
        for diagnosis in diagnoses:
            lines = (
                describe_hypothesis(diagnosis, hypothesis)
                if hypothesis is not None
                else describe_diagnosis(diagnosis)
            )
            for line in lines:
                out.print(line, markup=False, highlight=False)
            out.print()

    guarded(body)
