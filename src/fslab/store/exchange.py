"""Move campaigns between databases: `fslab export ID > f.json`, `fslab import f.json`.

Results recorded on another boot, kernel or host are compared like local ones;
the export carries everything stored (spec, host facts, per-point metrics,
artifacts, commands, collector status), so nothing is lost on the way.

An export comes from another machine and may come from anyone: it is read as
data and checked whole before anything is stored (check_export): its size, its
JSON, every field's type, the spec (validated as `fslab run` would), names
without control characters, points that belong to the spec. A file that fails
is refused (UsageError, exit 2) naming the field, and the database is left as
it was. An imported campaign is never run (runner refuses its pending points).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationError,
)

from fslab.base.errors import SpecError, UsageError
from fslab.base.hostfacts import HostFacts
from fslab.base.roles import POINT_ROLES, PointRole
from fslab.base.vocab import ScalarValue
from fslab.spec.load import validate_spec
from fslab.spec.model import FS_TYPES
from fslab.store.db import (
    CampaignStatus,
    CollectorStatus,
    PlannedPoint,
    PointOutcome,
    PointStatus,
    Store,
)
from fslab.store.facts import CampaignOverrides, DeviceFacts, FactsModel, PointFacts

FORMAT = "fslab-campaign"
FORMAT_VERSION = 2  # 2: points carry a role (version 1 exports import as 'inline')
READABLE_VERSIONS = (1, 2)

MAX_EXPORT_BYTES = 256 * 1024**2
"""The largest export fslab imports (a campaign with every collector's artifacts at a
thousand points is tens of MiB); a larger file is refused before it is read."""
MAX_EXPORT_POINTS = 100_000
MAX_NAME_CHARS = 512
"""Names (metrics, artifacts, collectors, sweep axes, hosts) longer than this are refused."""
MAX_NESTING = 64

SPEC_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"  # a campaign is named as its spec is
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def read_export(path: Path) -> dict[str, Any]:
    """An export file's JSON object; UsageError (exit 2) for anything else."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_EXPORT_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read a campaign export: {exc.strerror}") from None
    if len(raw) > MAX_EXPORT_BYTES:
        raise UsageError(
            f"{path}: larger than {MAX_EXPORT_BYTES // 1024**2} MiB, the largest campaign "
            "export fslab imports"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not a campaign export: not UTF-8 ({exc.reason})") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of thousands of digits
        raise UsageError(f"{path}: not a campaign export: not JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"{path}: not a campaign export: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a campaign export: not a JSON object")
    return data


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
    """Store an exported campaign under a new id; returns that id.

    The whole export is checked first (check_export): a malformed one is a
    UsageError naming the field, with nothing stored."""
    export = check_export(data)
    campaign = export.campaign
    exported_id = campaign.id
    overrides = {
        **campaign.overrides,
        # set whatever the file says: an imported campaign is never run here
        "imported_from": exported_id if type(exported_id) is int else 0,
    }
    new_id = store.create_campaign(
        name=campaign.name,
        spec=campaign.spec,
        spec_toml=campaign.spec_toml,
        overrides=overrides,
        host=campaign.host,
        device=campaign.device,
        fslab_version=campaign.fslab_version,
        points=[
            PlannedPoint(p.seq, p.config, p.fs_type, p.sweep, p.repeat, cast(PointRole, p.role))
            for p in export.points
        ],
        started_at=campaign.started_at,
        host_name=campaign.host_name,
    )
    rows = {row.seq: row for row in store.points(new_id)}
    for p in export.points:
        if p.status == "pending":
            continue
        store.save_outcome(rows[p.seq].id, _outcome(p))
    store.set_campaign_status(new_id, campaign.status, ended_at=campaign.ended_at)
    return new_id


# --- what an export must be -------------------------------------------------------------


def _timestamp(value: str | None) -> str | None:
    if value in (None, ""):
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("not an ISO 8601 time") from None
    return value


def _role(value: str) -> str:
    if value not in POINT_ROLES:
        raise ValueError(f"unknown role {value!r} ({', '.join(POINT_ROLES)})")
    return value


Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
Role = Annotated[str, AfterValidator(_role)]
Stamp = Annotated[str | None, AfterValidator(_timestamp)]
Index = Annotated[StrictInt, Field(ge=0, lt=2**31)]


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")  # fields a newer fslab adds are left out


class _Command(_Part):
    argv: list[str]
    returncode: Annotated[StrictInt, Field(ge=-(2**31), lt=2**31)]  # as the store's column
    seconds: float


class _Point(_Part):
    seq: Index
    config: Name
    fs_type: Name
    sweep: dict[Name, ScalarValue]
    repeat: Index
    role: Role = "inline"  # exports from before roles held instrumented headline runs
    status: PointStatus
    error: str | None = None
    stderr: str | None = None
    facts: dict[str, Any] = {}
    started_at: Stamp = None
    ended_at: Stamp = None
    metrics: dict[Name, float] = {}
    artifacts: dict[Name, str | None] = {}
    commands: list[_Command] = []
    collectors: dict[Name, tuple[CollectorStatus, str]] = {}


class _Campaign(_Part):
    id: Any = None
    name: Annotated[str, Field(pattern=SPEC_NAME)]
    status: CampaignStatus
    spec: dict[str, Any]
    spec_toml: str
    overrides: dict[str, Any] = {}
    host: dict[str, Any]
    host_name: Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)] | None = None
    device: dict[str, Any] | None = None
    fslab_version: Name
    started_at: Annotated[str, AfterValidator(_timestamp)]
    ended_at: Stamp = None


class _Export(_Part):
    campaign: _Campaign
    points: Annotated[list[_Point], Field(max_length=MAX_EXPORT_POINTS)]


def check_export(data: Mapping[str, Any]) -> _Export:
    """The export, typed and checked whole; UsageError naming the first field that fails."""
    if data.get("format") != FORMAT or data.get("version") not in READABLE_VERSIONS:
        raise UsageError(
            f"not an fslab campaign export (format {_short(data.get('format'))}, "
            f"version {_short(data.get('version'))}; expected {FORMAT!r} version "
            f"{' or '.join(map(str, READABLE_VERSIONS))})"
        )
    for where, problem in _text_problems(data, "", 0):
        raise UsageError(f"campaign export: {where or '(top level)'}: {problem}")
    try:
        export = _Export.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UsageError(f"campaign export: {where}: {error['msg']}{more}") from None
    campaign = export.campaign
    try:
        spec = validate_spec(campaign.spec, "campaign export: campaign.spec")
        HostFacts.from_stored(campaign.host)
    except SpecError:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise UsageError(f"campaign export: campaign.host: {exc}") from None
    for model, value, where in (
        (CampaignOverrides, campaign.overrides, "campaign.overrides"),
        (DeviceFacts, campaign.device or {}, "campaign.device"),
    ):
        _check_model(model, value, where)
    labels = {fs.label: fs.type for fs in spec.filesystems}
    seen: set[int] = set()
    for i, point in enumerate(export.points):
        where = f"campaign export: points.{i}"
        if point.seq in seen:
            raise UsageError(f"{where}.seq: {point.seq} again (each point's seq is its own)")
        seen.add(point.seq)
        if point.config not in labels:
            raise UsageError(
                f"{where}.config: {point.config!r} is not a configuration of the campaign's "
                f"spec ({', '.join(labels)})"
            )
        if point.fs_type not in FS_TYPES:
            raise UsageError(f"{where}.fs_type: {point.fs_type!r}: one of {', '.join(FS_TYPES)}")
        if set(point.sweep) != set(spec.sweep):
            raise UsageError(
                f"{where}.sweep: axes {sorted(point.sweep)}, the spec sweeps {sorted(spec.sweep)}"
            )
        for axis, swept in point.sweep.items():  # analysis reads them as the spec's type
            types = {type(v) for v in spec.sweep[axis]}
            if type(swept) not in types:
                raise UsageError(
                    f"{where}.sweep.{axis}: {_short(swept)} is not a "
                    f"{' or '.join(sorted(t.__name__ for t in types))}, as the spec's values are"
                )
        _check_model(PointFacts, point.facts, f"points.{i}.facts")
    return export


def _check_model(model: type[FactsModel], value: Mapping[str, Any], where: str) -> None:
    """Typed as the store reads it: unknown keys kept (another fslab's), wrong types not."""
    try:
        model.read(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in (where, *error["loc"]))
        raise UsageError(f"campaign export: {field}: {error['msg']}") from None


def _text_problems(value: Any, where: str, depth: int) -> Iterator[tuple[str, str]]:
    """Strings that are no text: NUL, undecodable, control characters (but in artifacts,
    which are files as they were captured), keys longer than MAX_NAME_CHARS; and
    nesting deeper than MAX_NESTING."""
    if depth > MAX_NESTING:
        yield where, f"nested deeper than {MAX_NESTING} levels"
    elif isinstance(value, str):
        yield from _string_problems(value, where, artifact=".artifacts." in where)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if len(key) > MAX_NAME_CHARS:
                yield f"{where}.{key[:40]}...", f"a name longer than {MAX_NAME_CHARS} characters"
            yield from _string_problems(key, inner, artifact=False)
            yield from _text_problems(item, inner, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _text_problems(item, f"{where}.{i}", depth + 1)


def _string_problems(text: str, where: str, *, artifact: bool) -> Iterator[tuple[str, str]]:
    if "\x00" in text:
        yield where, "a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        yield where, "not UTF-8 text (a lone surrogate)"
    if not artifact and _CONTROL_RE.search(text):
        yield where, "a control character (an export holds text, never terminal codes)"


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def recorded_outcomes(data: Mapping[str, Any]) -> list[PointOutcome]:
    """The outcomes of an export's points that ran, checked as an import checks them
    (benchmarks replay them)."""
    return [_outcome(p) for p in check_export(data).points if p.status != "pending"]


def _outcome(point: _Point) -> PointOutcome:
    return PointOutcome(
        status=point.status,
        error=point.error or "",
        stderr=point.stderr or "",
        metrics=dict(point.metrics),
        artifacts={k: v for k, v in point.artifacts.items() if v is not None},
        commands=[(c.argv, c.returncode, c.seconds) for c in point.commands],
        collectors=dict(point.collectors),
        facts=PointFacts.read(point.facts),
        started_at=point.started_at or "",
        ended_at=point.ended_at or "",
    )
