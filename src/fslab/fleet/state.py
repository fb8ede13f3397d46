"""What a fleet run did on each host: ansible's per-task events, read back.

The playbook's callback (callback_plugins/fslab_events.py) appends one JSON
line per host and task to the run's events file; a host's outcome is its last
event that decides something: an unreachable host or a failed task ends it,
the export fetched back or the campaign run finishes it. `fslab fleet status`
reads the same file while the playbook is still running.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fslab.store.db import utc_now

HostState = Literal["running", "done", "failed", "unreachable"]

FIXES = {
    "unreachable": (
        "check ansible_host, ansible_user and ansible_port in the inventory, then "
        "`ansible -i INVENTORY HOST -m ping`"
    ),
    "module": (
        "the host's Python could not run ansible's modules: set ansible_python_interpreter "
        "for it in the inventory (e.g. /usr/bin/python3)"
    ),
}
LAST_TASK = "run the campaign"


def fleet_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fslab" / "fleet"


@dataclass
class HostOutcome:
    host: str
    state: HostState
    step: str  # the task it is at, or ended at
    message: str = ""
    note: str = ""

    def describe(self) -> str:
        text = f"{self.host}: {self.state}"
        if self.state != "done":
            text += f" at '{self.step}'"
        if self.message:
            text += f": {self.message}"
        if self.note:
            text += f" ({self.note})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "state": self.state,
            "step": self.step,
            "message": self.message,
            "note": self.note,
        }


def _failure_message(event: dict[str, Any]) -> str:
    """The fslab error line when there is one, else ansible's message."""
    lines = [line for line in str(event.get("stderr", "")).splitlines() if line.strip()]
    fslab_lines = [line for line in lines if line.startswith("fslab:")]
    if fslab_lines:
        start = lines.index(fslab_lines[-1])
        return " ".join(line.strip() for line in lines[start:])
    if str(event.get("msg", "")).startswith("Module result deserialization failed"):
        first = lines[0].strip() if lines else "no output"
        return f"{first}; fix: {FIXES['module']}"
    if event.get("msg") and event["msg"] != "non-zero return code":
        return str(event["msg"]).strip()
    return lines[-1].strip() if lines else f"exit code {event.get('rc')}"


def host_outcomes(events: list[dict[str, Any]]) -> list[HostOutcome]:
    hosts: dict[str, HostOutcome] = {}
    for event in events:
        host, task, status = event["host"], event["task"], event["status"]
        current = hosts.get(host)
        if current is not None and current.state in ("failed", "unreachable"):
            continue
        if status == "unreachable":
            message = f"{event.get('msg', '').strip()}; fix: {FIXES['unreachable']}"
            hosts[host] = HostOutcome(host, "unreachable", task, message)
        elif status == "failed":
            hosts[host] = HostOutcome(host, "failed", task, _failure_message(event))
        elif task == LAST_TASK and status == "ok":
            hosts[host] = HostOutcome(host, "done", task)
        elif current is None or current.state == "running":
            note = current.note if current else ""
            if task.startswith("the shared store is out of reach"):
                note = event.get("msg", "")
            hosts[host] = HostOutcome(host, "running", task, note=note)
    return [hosts[h] for h in sorted(hosts)]


@dataclass
class FleetState:
    """One fleet run's directory: state.json (what was asked) and its events."""

    work: Path
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def events_path(self) -> Path:
        return self.work / "events.jsonl"

    @classmethod
    def start(cls, work: Path, *, key: str, spec: str, db: str, inventory: Path) -> FleetState:
        state = cls(work)
        state.info = {
            "key": key,
            "spec": spec,
            "db": db,
            "inventory": str(inventory),
            "started_at": utc_now(),
            "finished_at": None,
        }
        state.events_path.unlink(missing_ok=True)  # this attempt's events only
        state._save()
        return state

    @classmethod
    def load(cls, key: str | None = None) -> FleetState:
        from fslab.base.errors import FslabError

        runs = sorted(
            (p.parent for p in fleet_dir().glob("*/state.json")),
            key=lambda d: (d / "state.json").stat().st_mtime,
        )
        if key is not None:
            runs = [d for d in runs if d.name == key]
        if not runs:
            what = f"fleet run {key}" if key else "fleet run"
            raise FslabError(
                f"no {what} recorded in {fleet_dir()}; start one with `fslab fleet run`"
            )
        state = cls(runs[-1])
        state.info = json.loads((runs[-1] / "state.json").read_text())
        return state

    def events(self) -> list[dict[str, Any]]:
        try:
            text = self.events_path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def finish(self, outcomes: list[HostOutcome]) -> None:
        self.info["finished_at"] = utc_now()
        self.info["hosts"] = [o.to_dict() for o in outcomes]
        self._save()

    def _save(self) -> None:
        info = {k: v for k, v in self.info.items() if k != "db"}
        info["db_shown"] = _without_password(self.info.get("db", ""))
        (self.work / "state.json").write_text(json.dumps(info, indent=2) + "\n")


def _without_password(db: str) -> str:
    if "://" not in db:
        return db
    from fslab.store.db import database_url, shown_location

    return shown_location(database_url(db))
