"""A campaign's results table (and its failed points) as `fslab run` and `fslab show` print it."""

from __future__ import annotations

from fslab.analyze.campaign.summary import (
    describe_outliers,
    describe_warmups,
    outlier_runs,
    summarize,
    warmup_runs,
)
from fslab.analyze.versus.guests import guest_summary
from fslab.cli.common import out, print_json
from fslab.report import terminal
from fslab.store.db import Store


def print_results(store: Store, campaign_id: int, as_json: bool) -> None:
    campaign = store.campaign(campaign_id)
    points = store.points(campaign_id)
    metrics = store.metrics(campaign_id)
    rows = summarize(points, metrics)
    headline = rows[0].headline if rows else None
    warmups = warmup_runs(points, metrics, headline)
    outliers = outlier_runs(points, metrics, headline)
    if as_json:
        print_json(
            {
                "campaign": {
                    "id": campaign.id,
                    "name": campaign.name,
                    "status": campaign.status,
                    "started_at": campaign.started_at,
                    "ended_at": campaign.ended_at,
                    "host": campaign.host.to_dict(),
                    "device": campaign.device.stored() if campaign.device else None,
                },
                "results": [r.to_dict() for r in rows],
                "warmups": [r.to_dict() for r in warmups],
                "outliers": [r.to_dict() for r in outliers],
                "failures": [
                    {"seq": p.seq, "config": p.config, "sweep": p.sweep, "error": p.error}
                    for p in points
                    if p.status == "failed"
                ],
            }
        )
        return
    host = campaign.host
    guests = guest_summary(p.facts.guest for p in points if p.facts.guest is not None)
    title = f"campaign {campaign.id} {campaign.name} ({campaign.status}) - " + (
        f"in guests: {guests}"
        if guests
        else f"kernel {host.fact('kernel_release')}, {host.fact('online_cpus')} CPUs "
        f"(nr_cpu_ids {host.fact('nr_cpu_ids')})"
    )
    out.print(terminal.results_table(rows, title))
    for line in (describe_warmups(warmups, headline), describe_outliers(outliers, headline)):
        if line:
            out.print(line, markup=False)
    if any(p.status == "failed" for p in points):
        out.print(terminal.failures_table(points))
    pending = sum(1 for p in points if p.status == "pending")
    if pending:
        out.print(f"{pending} point(s) not run yet: fslab run --resume {campaign.id}")
