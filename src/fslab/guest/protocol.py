"""What the host and the in-guest agent exchange, as JSON files in the shared directory.

The host writes a request file and sends `run <name>` on the guest's stdin; the
agent writes the result file (atomically: a temporary name, then a rename) and
prints `@fslab-agent done <name>` on its stdout. `quit` (or end of input, when
the host is gone) makes the agent exit, which powers the guest off.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.base.roles import PointRole
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec
from fslab.spec.points import Point
from fslab.spec.vm import GUEST_AXES
from fslab.store.db import PointOutcome
from fslab.store.facts import PointFacts

MARKER = "@fslab-agent"
SESSION_FILE = "session.json"
FACTS_FILE = "guest-facts.json"


@dataclass(frozen=True)
class PointRequest:
    """One point to run in the guest: the spec it belongs to and which point."""

    spec: dict[str, Any]  # Spec.model_dump(mode="json")
    seq: int
    config: str  # the filesystem configuration's label
    sweep: dict[str, Any]
    repeat: int
    role: PointRole = "clean"  # its role says whether the collectors run (fslab.base.roles)

    @classmethod
    def for_point(cls, spec: Spec, point: Point) -> PointRequest:
        return cls(
            spec=spec.model_dump(mode="json"),
            seq=point.seq,
            config=point.filesystem.label,
            sweep=point.sweep_dict,
            repeat=point.repeat,
            role=point.role,
        )

    def spec_and_point(self) -> tuple[Spec, Point]:
        """The spec and point as the guest runs them: a plain host point.

        The guest's own axes (kernel, cpus, possible_cpus) and a [vm] table
        chose this guest; inside it they mean nothing, so they are left out
        rather than passed on to the workload.
        """
        data = dict(self.spec)
        data.pop("vm", None)
        data["sweep"] = {k: v for k, v in data.get("sweep", {}).items() if k not in GUEST_AXES}
        spec = validate_spec(data, "guest request")
        by_label = {fs.label: fs for fs in spec.filesystems}
        sweep = tuple((k, v) for k, v in self.sweep.items() if k not in GUEST_AXES)
        return spec, Point(self.seq, by_label[self.config], sweep, self.repeat, self.role)


@dataclass(frozen=True)
class GuestFacts:
    """What the agent reads inside the running guest."""

    kernel_release: str
    kernel_cmdline: str
    nr_cpu_ids: int
    online_cpus: int
    memory_bytes: int
    shm_bytes: int  # /dev/shm's size: the largest RAM loop image the guest takes
    agent_started_uptime_s: float  # the kernel's and init's share of the boot
    agent_ready_uptime_s: float  # + Python, fslab's imports and the guest's setup
    setup_notes: list[str] = field(default_factory=list)


def guest_target_problem(spec: Spec) -> str | None:
    """Why a guest cannot build this spec's filesystems; None when it can."""
    if spec.target.kind != "ram":
        return (
            f"target.kind = {spec.target.kind!r}: a guest builds its filesystems on RAM "
            "loop images only (target.kind = 'ram')"
        )
    return None


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def outcome_to_json(outcome: PointOutcome) -> dict[str, Any]:
    return {**dataclasses.asdict(outcome), "facts": outcome.facts.stored()}


def outcome_from_json(data: dict[str, Any]) -> PointOutcome:
    """The agent's outcome; its facts are checked as the agent built them (strictly: the
    agent is this fslab)."""
    data = dict(data)
    data["facts"] = PointFacts.model_validate(data.get("facts", {}))
    data["commands"] = [(list(argv), int(rc), float(s)) for argv, rc, s in data["commands"]]
    data["collectors"] = {name: (str(s), str(r)) for name, (s, r) in data["collectors"].items()}
    return PointOutcome(**data)


def request_to_json(request: PointRequest) -> dict[str, Any]:
    return dataclasses.asdict(request)


def request_from_json(data: dict[str, Any]) -> PointRequest:
    return PointRequest(**data)
