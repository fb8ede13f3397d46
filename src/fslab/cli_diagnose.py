"""`fslab diagnose`: which kernel mechanism is to blame, with the evidence."""

from __future__ import annotations

from fslab.analyze.diagnose import diagnose_campaign
from fslab.cli import (
    DbOption,
    JsonOption,
    LatestCampaignArg,
    _campaign_id,
    _guarded,
    _print_json,
    _store,
    app,
    out,
)


@app.command()
def diagnose(
    campaign_id: LatestCampaignArg = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rank the kernel mechanisms that explain each configuration's worst point.

    Rules (one file per mechanism in fslab/analyze/rules/) are checked against the
    worst point's profiles, collector metrics and facts, with the best point as
    baseline; each candidate lists the numbers for and against it.
    """

    def body() -> None:
        with _store(db) as store:
            cid = _campaign_id(store, campaign_id)
            diagnoses = diagnose_campaign(store, cid)
        if as_json:
            _print_json({"campaign": cid, "configs": [d.to_dict() for d in diagnoses]})
            return
        for diagnosis in diagnoses:
            for line in diagnosis.describe():
                out.print(line, markup=False, highlight=False)
            out.print()

    _guarded(body)
