"""The results database: one SQLite file, opened explicitly, never at import.

WAL mode lets `fslab show` read while a campaign writes; each finished point is
committed in one transaction before the next point starts, so a crash loses at
most the point in flight.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from fslab.errors import FslabError
from fslab.roles import PointRole
from fslab.store.lock import campaign_running

SCHEMA_VERSION = 2
# version -> the statements that take a database from it to the next version
MIGRATIONS: dict[int, str] = {
    # 2: points get a role; everything stored before was instrumented and counted
    1: "ALTER TABLE points ADD COLUMN role TEXT NOT NULL DEFAULT 'inline'"
    " CHECK (role IN ('clean', 'evidence', 'inline'));",
}


def default_db_path() -> Path:
    """$XDG_DATA_HOME/fslab/results.db (default ~/.local/share/fslab/results.db)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fslab" / "results.db"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class PlannedPoint:
    seq: int
    config: str
    fs_type: str
    sweep: dict[str, Any]
    repeat: int
    role: PointRole = "clean"


@dataclass
class PointOutcome:
    """Everything measured at one point, saved in one transaction."""

    status: str  # ok | failed
    error: str = ""
    stderr: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    commands: list[tuple[list[str], int, float]] = field(default_factory=list)
    collectors: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, reason)
    facts: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    ended_at: str = ""


@dataclass(frozen=True)
class CampaignRow:
    id: int
    name: str
    status: str
    spec: dict[str, Any]
    spec_toml: str
    overrides: dict[str, Any]
    host: dict[str, Any]
    device: dict[str, Any] | None
    fslab_version: str
    started_at: str
    ended_at: str | None


@dataclass(frozen=True)
class PointRow:
    id: int
    campaign_id: int
    seq: int
    config: str
    fs_type: str
    sweep: dict[str, Any]
    repeat: int
    role: PointRole
    status: str
    error: str | None
    stderr: str | None
    facts: dict[str, Any]
    started_at: str | None
    ended_at: str | None


class Store:
    """A connection to one results database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._ensure_schema()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _ensure_schema(self) -> None:
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if has_meta:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = int(row["value"]) if row else 0
            if version > SCHEMA_VERSION:
                raise FslabError(
                    f"{self.path} has schema version {version}, newer than this fslab "
                    f"understands ({SCHEMA_VERSION}); upgrade fslab or use another --db"
                )
            if version < SCHEMA_VERSION:
                self._migrate(version)
            return
        script = resources.files("fslab.store").joinpath("schema.sql").read_text()
        # one script, one transaction: a half-created schema is never left behind
        self._conn.executescript(
            f"BEGIN IMMEDIATE;\n{script}\n"
            "INSERT OR IGNORE INTO meta (key, value)"
            f" VALUES ('schema_version', '{SCHEMA_VERSION}');\n"
            "COMMIT;"
        )

    def _migrate(self, version: int) -> None:
        """Bring an older database up to SCHEMA_VERSION, all steps in one transaction."""
        if any(v not in MIGRATIONS for v in range(version, SCHEMA_VERSION)):
            raise FslabError(
                f"{self.path} has schema version {version} and no migration to "
                f"{SCHEMA_VERSION} exists; use another --db"
            )
        steps = "\n".join(MIGRATIONS[v] for v in range(version, SCHEMA_VERSION))
        self._conn.executescript(
            f"BEGIN IMMEDIATE;\n{steps}\n"
            f"UPDATE meta SET value='{SCHEMA_VERSION}' WHERE key='schema_version';\n"
            "COMMIT;"
        )

    # ------------------------------------------------------------ writing

    def create_campaign(
        self,
        *,
        name: str,
        spec: Mapping[str, Any],
        spec_toml: str,
        overrides: Mapping[str, Any],
        host: Mapping[str, Any],
        device: Mapping[str, Any] | None,
        fslab_version: str,
        points: Sequence[PlannedPoint],
        started_at: str | None = None,
    ) -> int:
        with self._transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO campaigns (name, status, spec_json, spec_toml, overrides_json,"
                " host_json, device_json, fslab_version, started_at)"
                " VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    json.dumps(spec),
                    spec_toml,
                    json.dumps(overrides),
                    json.dumps(host),
                    json.dumps(device) if device is not None else None,
                    fslab_version,
                    started_at or utc_now(),
                ),
            )
            campaign_id = int(cursor.lastrowid or 0)
            _insert_points(conn, campaign_id, points, first_seq=None)
        return campaign_id

    def add_points(self, campaign_id: int, points: Sequence[PlannedPoint]) -> list[PointRow]:
        """Append pending points after the campaign's last seq, in the order given.

        For adaptive repetition (`fslab run --until-ci`). The given seq values
        are replaced: the next free seqs are taken inside the transaction, so
        two writers can never collide. Returns the new rows.
        """
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT max(seq) AS last FROM points WHERE campaign_id=?", (campaign_id,)
            ).fetchone()
            first = (row["last"] + 1) if row and row["last"] is not None else 0
            _insert_points(conn, campaign_id, points, first_seq=first)
        return [p for p in self.points(campaign_id) if p.seq >= first]

    def save_outcome(self, point_id: int, outcome: PointOutcome) -> None:
        """Store one point's results, replacing anything a previous attempt left."""
        with self._transaction() as conn:
            for table in ("metrics", "artifacts", "commands", "collectors"):
                conn.execute(f"DELETE FROM {table} WHERE point_id = ?", (point_id,))
            conn.execute(
                "UPDATE points SET status=?, error=?, stderr=?, facts_json=?, started_at=?,"
                " ended_at=? WHERE id=?",
                (
                    outcome.status,
                    outcome.error or None,
                    outcome.stderr or None,
                    json.dumps(outcome.facts),
                    outcome.started_at or None,
                    outcome.ended_at or utc_now(),
                    point_id,
                ),
            )
            conn.executemany(
                "INSERT INTO metrics (point_id, name, value) VALUES (?, ?, ?)",
                [(point_id, k, float(v)) for k, v in outcome.metrics.items()],
            )
            conn.executemany(
                "INSERT INTO artifacts (point_id, name, content) VALUES (?, ?, ?)",
                [(point_id, k, v) for k, v in outcome.artifacts.items()],
            )
            conn.executemany(
                "INSERT INTO commands (point_id, seq, argv_json, returncode, seconds)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (point_id, i, json.dumps(argv), rc, secs)
                    for i, (argv, rc, secs) in enumerate(outcome.commands)
                ],
            )
            conn.executemany(
                "INSERT INTO collectors (point_id, name, status, reason) VALUES (?, ?, ?, ?)",
                [(point_id, k, s, r) for k, (s, r) in outcome.collectors.items()],
            )

    def add_results(
        self,
        point_id: int,
        *,
        metrics: Mapping[str, float],
        artifacts: Mapping[str, str],
        collectors: Mapping[str, tuple[str, str]],
        facts: Mapping[str, Any],
    ) -> None:
        """Add what post-processing produced to a saved point (replacing same-named
        entries; top-level facts keys are merged), in one transaction."""
        with self._transaction() as conn:
            row = conn.execute("SELECT facts_json FROM points WHERE id=?", (point_id,)).fetchone()
            merged = {**(json.loads(row["facts_json"]) if row and row["facts_json"] else {})}
            merged.update(facts)
            conn.execute(
                "UPDATE points SET facts_json=? WHERE id=?", (json.dumps(merged), point_id)
            )
            conn.executemany(
                "INSERT OR REPLACE INTO metrics (point_id, name, value) VALUES (?, ?, ?)",
                [(point_id, k, float(v)) for k, v in metrics.items()],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO artifacts (point_id, name, content) VALUES (?, ?, ?)",
                [(point_id, k, v) for k, v in artifacts.items()],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO collectors (point_id, name, status, reason)"
                " VALUES (?, ?, ?, ?)",
                [(point_id, k, s, r) for k, (s, r) in collectors.items()],
            )

    def set_campaign_status(
        self, campaign_id: int, status: str, ended_at: str | None = None
    ) -> None:
        ended = (ended_at or utc_now()) if status != "running" else None
        with self._transaction() as conn:
            conn.execute(
                "UPDATE campaigns SET status=?, ended_at=? WHERE id=?",
                (status, ended, campaign_id),
            )

    def set_campaign_device(self, campaign_id: int, device: Mapping[str, Any]) -> None:
        with self._transaction() as conn:
            conn.execute(
                "UPDATE campaigns SET device_json=? WHERE id=?", (json.dumps(device), campaign_id)
            )

    # ------------------------------------------------------------ reading

    def campaigns(self) -> list[CampaignRow]:
        rows = self._conn.execute("SELECT * FROM campaigns ORDER BY id").fetchall()
        return [self._live(_campaign_row(r)) for r in rows]

    def campaign(self, campaign_id: int) -> CampaignRow:
        row = self._conn.execute("SELECT * FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            raise FslabError(f"no campaign {campaign_id} in {self.path} (see `fslab list`)")
        return self._live(_campaign_row(row))

    def _live(self, campaign: CampaignRow) -> CampaignRow:
        """'running' only while a fslab holds the campaign's lock; else it was killed."""
        if campaign.status == "running" and not campaign_running(self.path, campaign.id):
            return dataclasses.replace(campaign, status="interrupted")
        return campaign

    def latest_campaign_id(self) -> int:
        row = self._conn.execute("SELECT max(id) AS id FROM campaigns").fetchone()
        if row is None or row["id"] is None:
            raise FslabError(f"no campaigns in {self.path} yet; run one with `fslab run`")
        return int(row["id"])

    def points(self, campaign_id: int) -> list[PointRow]:
        rows = self._conn.execute(
            "SELECT * FROM points WHERE campaign_id=? ORDER BY seq", (campaign_id,)
        ).fetchall()
        return [_point_row(r) for r in rows]

    def metrics(self, campaign_id: int) -> dict[int, dict[str, float]]:
        rows = self._conn.execute(
            "SELECT m.point_id, m.name, m.value FROM metrics m JOIN points p ON p.id = m.point_id"
            " WHERE p.campaign_id=?",
            (campaign_id,),
        ).fetchall()
        result: dict[int, dict[str, float]] = {}
        for row in rows:
            result.setdefault(row["point_id"], {})[row["name"]] = row["value"]
        return result

    def artifact(self, point_id: int, name: str) -> str | None:
        row = self._conn.execute(
            "SELECT content FROM artifacts WHERE point_id=? AND name=?", (point_id, name)
        ).fetchone()
        return None if row is None else str(row["content"])

    def artifact_names(self, point_id: int) -> list[str]:
        rows = self._conn.execute(
            "SELECT name FROM artifacts WHERE point_id=? ORDER BY name", (point_id,)
        ).fetchall()
        return [r["name"] for r in rows]

    def commands(self, point_id: int) -> list[list[str]]:
        return [argv for argv, _, _ in self.command_records(point_id)]

    def command_records(self, point_id: int) -> list[tuple[list[str], int, float]]:
        """(argv, exit code, seconds) of each command the point ran, in order."""
        rows = self._conn.execute(
            "SELECT argv_json, returncode, seconds FROM commands WHERE point_id=? ORDER BY seq",
            (point_id,),
        ).fetchall()
        return [(json.loads(r["argv_json"]), r["returncode"], r["seconds"]) for r in rows]

    def collectors(self, point_id: int) -> dict[str, tuple[str, str]]:
        rows = self._conn.execute(
            "SELECT name, status, reason FROM collectors WHERE point_id=? ORDER BY name",
            (point_id,),
        ).fetchall()
        return {r["name"]: (r["status"], r["reason"]) for r in rows}

    def integrity_ok(self) -> bool:
        row = self._conn.execute("PRAGMA integrity_check").fetchone()
        return row is not None and row[0] == "ok"


def _insert_points(
    conn: sqlite3.Connection,
    campaign_id: int,
    points: Sequence[PlannedPoint],
    *,
    first_seq: int | None,
) -> None:
    """Insert pending points: with their own seqs, or numbered from first_seq."""
    conn.executemany(
        "INSERT INTO points (campaign_id, seq, config, fs_type, sweep_json, repeat, role, status)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
        [
            (
                campaign_id,
                p.seq if first_seq is None else first_seq + i,
                p.config,
                p.fs_type,
                json.dumps(p.sweep),
                p.repeat,
                p.role,
            )
            for i, p in enumerate(points)
        ],
    )


def _campaign_row(row: sqlite3.Row) -> CampaignRow:
    return CampaignRow(
        id=row["id"],
        name=row["name"],
        status=row["status"],
        spec=json.loads(row["spec_json"]),
        spec_toml=row["spec_toml"],
        overrides=json.loads(row["overrides_json"]),
        host=json.loads(row["host_json"]),
        device=json.loads(row["device_json"]) if row["device_json"] else None,
        fslab_version=row["fslab_version"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )


def _point_row(row: sqlite3.Row) -> PointRow:
    return PointRow(
        id=row["id"],
        campaign_id=row["campaign_id"],
        seq=row["seq"],
        config=row["config"],
        fs_type=row["fs_type"],
        sweep=json.loads(row["sweep_json"]),
        repeat=row["repeat"],
        role=row["role"],
        status=row["status"],
        error=row["error"],
        stderr=row["stderr"],
        facts=json.loads(row["facts_json"]) if row["facts_json"] else {},
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )
