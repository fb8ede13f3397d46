"""Move campaigns between databases: `fslab export ID > f.json`, `fslab import f.json`.

Results recorded on another boot, kernel or host are compared like local ones;
the export carries everything stored (spec, host facts, per-point metrics,
artifacts, commands, collector status), so nothing is lost on the way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fslab.errors import UsageError
from fslab.roles import POINT_ROLES, PointRole
from fslab.store.db import PlannedPoint, PointOutcome, Store

FORMAT = "fslab-campaign"
FORMAT_VERSION = 2  # 2: points carry a role (version 1 exports import as 'inline')
READABLE_VERSIONS = (1, 2)


def export_campaign(store: Store, campaign_id: int) -> dict[str, Any]:
    campaign = store.campaign(campaign_id)
    metrics = store.metrics(campaign_id)
    points = []
    for p in store.points(campaign_id):
        points.append(
            {
                "seq": p.seq,
                "config": p.config,
                "fs_type": p.fs_type,
                "sweep": p.sweep,
                "repeat": p.repeat,
                "role": p.role,
                "status": p.status,
                "error": p.error,
                "stderr": p.stderr,
                "facts": p.facts.stored(),
                "started_at": p.started_at,
                "ended_at": p.ended_at,
                "metrics": metrics.get(p.id, {}),
                "artifacts": {n: store.artifact(p.id, n) for n in store.artifact_names(p.id)},
                "commands": [
                    {"argv": argv, "returncode": rc, "seconds": secs}
                    for argv, rc, secs in store.command_records(p.id)
                ],
                "collectors": {n: list(v) for n, v in store.collectors(p.id).items()},
            }
        )
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "campaign": {
            "id": campaign.id,
            "name": campaign.name,
            "status": campaign.status,
            "spec": campaign.spec.model_dump(mode="json", exclude_unset=True),
            "spec_toml": campaign.spec_toml,
            "overrides": campaign.overrides.stored(),
            "host": campaign.host.to_dict(),
            "host_name": campaign.hostname,
            "device": campaign.device.stored() if campaign.device else None,
            "fslab_version": campaign.fslab_version,
            "started_at": campaign.started_at,
            "ended_at": campaign.ended_at,
        },
        "points": points,
    }


def import_campaign(store: Store, data: Mapping[str, Any]) -> int:
    """Store an exported campaign under a new id; returns that id."""
    if data.get("format") != FORMAT or data.get("version") not in READABLE_VERSIONS:
        raise UsageError(
            f"not an fslab campaign export (format {data.get('format')!r}, "
            f"version {data.get('version')!r}; expected {FORMAT!r} version "
            f"{' or '.join(map(str, READABLE_VERSIONS))})"
        )
    try:
        campaign = data["campaign"]
        points = data["points"]
        exported_id = campaign.get("id")
        overrides = {
            **campaign.get("overrides", {}),
            # set whatever the file says: an imported campaign is never run here
            "imported_from": exported_id if isinstance(exported_id, int) else 0,
        }
        new_id = store.create_campaign(
            name=campaign["name"],
            spec=campaign["spec"],
            spec_toml=campaign["spec_toml"],
            overrides=overrides,
            host=campaign["host"],
            device=campaign.get("device"),
            fslab_version=campaign["fslab_version"],
            points=[
                PlannedPoint(p["seq"], p["config"], p["fs_type"], p["sweep"], p["repeat"], _role(p))
                for p in points
            ],
            started_at=campaign["started_at"],
            host_name=campaign.get("host_name"),
        )
        rows = {row.seq: row for row in store.points(new_id)}
        for p in points:
            if p["status"] == "pending":
                continue
            store.save_outcome(rows[p["seq"]].id, _outcome(p))
        store.set_campaign_status(new_id, campaign["status"], ended_at=campaign.get("ended_at"))
    except (KeyError, TypeError) as exc:
        raise UsageError(f"campaign export is incomplete or malformed: {exc!r}") from None
    return new_id


def _role(point: Mapping[str, Any]) -> PointRole:
    """The point's role; exports from before roles existed hold instrumented headline runs."""
    role = point.get("role", "inline")
    if role not in POINT_ROLES:
        raise UsageError(f"point #{point.get('seq')}: unknown role {role!r}")
    return role  # type: ignore[no-any-return]


def _outcome(point: Mapping[str, Any]) -> PointOutcome:
    return PointOutcome(
        status=point["status"],
        error=point.get("error") or "",
        stderr=point.get("stderr") or "",
        metrics=dict(point.get("metrics", {})),
        artifacts={k: v for k, v in point.get("artifacts", {}).items() if v is not None},
        commands=[(c["argv"], c["returncode"], c["seconds"]) for c in point.get("commands", [])],
        collectors={k: (v[0], v[1]) for k, v in point.get("collectors", {}).items()},
        facts=dict(point.get("facts", {})),
        started_at=point.get("started_at") or "",
        ended_at=point.get("ended_at") or "",
    )
