"""What a campaign's runner reports as it goes: the CLI's progress bar, or nothing.

Its own module, below both the host runner and the guest runner, so either can
report without importing the other."""

from __future__ import annotations

from typing import Protocol

from fslab.store.db import PointOutcome, PointRow


class ProgressSink(Protocol):
    def campaign_started(self, campaign_id: int, total: int, done: int) -> None: ...
    def point_started(self, point: PointRow) -> None: ...
    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None: ...
    def message(self, text: str) -> None: ...


class SilentProgress:
    def campaign_started(self, campaign_id: int, total: int, done: int) -> None:
        pass

    def point_started(self, point: PointRow) -> None:
        pass

    def point_finished(self, point: PointRow, outcome: PointOutcome) -> None:
        pass

    def message(self, text: str) -> None:
        pass
