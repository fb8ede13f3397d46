"""Ansible callback: one JSON line per host and task, for `fslab fleet` to read.

fslab runs ansible-playbook with the default output on the terminal and this
callback enabled beside it; it appends to $FSLAB_FLEET_EVENTS what each task
did on each host (ok, failed, unreachable, skipped), with the message and the
tail of the output, so `fslab fleet run` and `fslab fleet status` report per
host what happened and what to fix, while the playbook is still running.
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: fslab_events
    type: notification
    short_description: per-host task events as JSON lines for fslab fleet
    description: appends one JSON line per host and task to $FSLAB_FLEET_EVENTS
"""

TAIL_CHARS = 4000


def _tail(value: object) -> str:
    text = value if isinstance(value, str) else ""
    return text[-TAIL_CHARS:]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "fslab_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("FSLAB_FLEET_EVENTS", "")

    def _write(self, result: object, status: str) -> None:
        if not self._path:
            return
        data = getattr(result, "_result", {}) or {}
        items = [i for i in data.get("results", []) or [] if isinstance(i, dict)]
        failed_item = next((i for i in items if i.get("failed") or i.get("unreachable")), None)
        if failed_item is not None:  # a loop: the item that failed says why
            data = {**failed_item, **{k: v for k, v in data.items() if k == "rc"}}
        host = result._host.get_name()  # type: ignore[attr-defined]
        task = result._task.get_name()  # type: ignore[attr-defined]
        event = {
            "time": time.time(),
            "host": host,
            "task": task,
            "status": status,
            "msg": str(data.get("msg", "") or ""),
            "rc": data.get("rc"),
            "stdout": _tail(data.get("stdout")),
            "stderr": _tail(data.get("stderr") or data.get("module_stderr")),
        }
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def v2_runner_on_ok(self, result: object) -> None:
        self._write(result, "ok")

    def v2_runner_on_failed(self, result: object, ignore_errors: bool = False) -> None:
        self._write(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result: object) -> None:
        self._write(result, "unreachable")

    def v2_runner_on_skipped(self, result: object) -> None:
        self._write(result, "skipped")
