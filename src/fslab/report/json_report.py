"""The report as JSON: the same model the text and HTML show, as plain data.

Schema: docs/report-json.md (tests check every key against it). The tree is
the model's dataclasses turned into objects field by field, so a field added
to the model appears here without a second list to keep in step; analysis
objects (USL fits, comparison tables) use their own `to_dict`, and the
spec's parts (the workload) the fields the spec set. Profiles
themselves are not included (they are stored artifacts, `fslab export` has
them); their hottest chains and differences are. NaN and infinities become
null: JSON has no representation for them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from pydantic import BaseModel

from fslab.report.tree import PointRef, Report
from fslab.stacks.profile import DiffRow, HotChain

FORMAT = "fslab-report"
VERSION = 1


def report_data(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data: dicts, lists, strings, numbers, null."""
    data = {"format": FORMAT, "version": VERSION}
    data.update(plain(report))
    return data


def render_json(report: Report) -> str:
    return json.dumps(report_data(report), indent=2, allow_nan=False) + "\n"


def plain(value: Any) -> Any:
    """Recursively convert model objects to JSON data (see the module docstring)."""
    if isinstance(value, PointRef):
        return {
            **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)},
            "label": value.label,
        }
    if isinstance(value, HotChain):
        return {
            "comm": value.comm,
            "frames": list(value.frames),
            "func": value.func,
            "samples": value.samples,
            "share": _number(value.share),
            "self_samples": value.self_samples,
            "path_samples": list(value.path_samples),
            "func_fraction": _number(value.func_fraction),
        }
    if isinstance(value, DiffRow):
        return {**plain(dataclasses.asdict(value)), "delta": _number(value.delta)}
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return plain(value.to_dict())
    if isinstance(value, BaseModel):  # the spec's own parts (setup.workload): the fields it set
        return plain(value.model_dump(mode="json", exclude_unset=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.metadata.get("json", True)
        }
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return _number(value)
    return value


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None
