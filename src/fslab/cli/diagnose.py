"""`fslab diagnose`: which kernel mechanism explains the falloff, and why the others don't."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from fslab.base.errors import FslabError, UsageError
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
from fslab.diagnose.diagnosis import ConfigDiagnosis, diagnose_campaign
from fslab.diagnose.hypotheses import check_mechanism
from fslab.diagnose.unknown import draft_rule as draft_rule_text
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
    draft_rule: Annotated[
        str | None,
        typer.Option(
            "--draft-rule",
            metavar="NAME",
            help="Print a rule file's skeleton (TOML) from the frames no rule explains, "
            "for you to finish; with --config, from that configuration.",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", metavar="LABEL", help="The configuration --draft-rule reads."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rank the kernel mechanisms that explain each configuration's falloff.

    Each mechanism (one rule file in fslab/diagnose/rules/) is scored by the share
    of the change from the good point to the bad point it accounts for, in the
    off-CPU and on-CPU profiles and its own metrics; configurations that held up
    at the bad point confirm or weaken it; the strongest alternatives are ruled
    out with their numbers. When the rules explain under 40% of the change, the
    frames that grew instead are listed with their chains and kernel subsystems
    (--draft-rule turns them into a rule file to finish). Without a falloff there
    is nothing to explain.
    """

    def body() -> None:
        if hypothesis is not None:
            check_mechanism(hypothesis)
        if draft_rule is not None and not RULE_NAME.fullmatch(draft_rule):
            raise UsageError(
                f"--draft-rule: {draft_rule!r} is not a rule name "
                "(lower-case letters, digits and dashes, e.g. btrfs-metadata-reservation)"
            )
        with open_store(db) as store:
            cid = campaign_or_latest(store, campaign_id)
            diagnoses = diagnose_campaign(store, cid)
        if draft_rule is not None:
            typer.echo(_draft(draft_rule, diagnoses, config), nl=False)  # TOML: never wrapped
            return
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


RULE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def _draft(name: str, diagnoses: list[ConfigDiagnosis], config: str | None) -> str:
    """The draft rule from the named configuration's unknown, or the first one that has one."""
    if config is not None and config not in {d.config for d in diagnoses}:
        known = ", ".join(d.config for d in diagnoses)
        raise UsageError(f"--config: no configuration {config!r} in this campaign ({known})")
    for d in diagnoses:
        if (config is None or d.config == config) and d.unknown is not None:
            return draft_rule_text(name, d.unknown, d.fs_type)
    raise FslabError(
        "--draft-rule: the rule base explains every falloff of "
        + (f"configuration {config!r}" if config else "this campaign")
        + " (or there is none): no frames to draft a rule from"
    )
