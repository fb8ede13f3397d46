"""The results database: a SQLite file (the default) or a shared PostgreSQL.

One schema for both (fslab.store.tables, migrated by alembic), written through
SQLAlchemy Core. Each finished point is committed in one transaction before
the next point starts, so a crash loses at most the point in flight. SQLite
runs in WAL mode, so `fslab show` reads while a campaign writes; PostgreSQL
takes many hosts' campaigns at once, its sequences keeping ids unique. When a
shared database drops out mid-campaign, writes are kept in a local spool
(fslab.store.spool) and sent, in order, once it is back.

One module of more than 600 lines, on purpose: it is the Store class, every
query on the schema and the transaction each runs in, read together; the
schema (tables), the facts models, the spool, exchange and migrations are
modules of their own.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError
from sqlalchemy import (
    URL,
    ColumnElement,
    Connection,
    Engine,
    Integer,
    Table,
    Text,
    any_,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    make_url,
    select,
    text,
    update,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import RowMapping

from fslab.base.errors import FslabError, UsageError
from fslab.base.hostfacts import HostFacts
from fslab.base.roles import PointRole
from fslab.base.vocab import ScalarValue
from fslab.spec.load import validate_spec
from fslab.spec.model import Spec
from fslab.store import migrate, tables
from fslab.store.facts import CampaignOverrides, DeviceFacts, FactsModel, PointFacts
from fslab.store.lock import campaign_lock, campaign_running, write_turn
from fslab.store.spool import Spool, spool_path
from fslab.store.tables import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "CampaignRow", "PlannedPoint", "PointOutcome", "PointRow", "Store"]

CampaignStatus = Literal["running", "complete", "interrupted", "failed"]
PointStatus = Literal["pending", "ok", "failed"]
CollectorStatus = Literal["ok", "unavailable", "failed"]

# PostgreSQL advisory locks of running campaigns: (this key, campaign id)
_PG_LOCK_CLASS = 0x0F51AB
_SQLITE_FIX = "check the file and its directory are writable, or give another --db"


def default_db_path() -> Path:
    """$XDG_DATA_HOME/fslab/results.db (default ~/.local/share/fslab/results.db)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fslab" / "results.db"


def default_db() -> str:
    """$FSLAB_DB (a path or a postgresql:// URL), else the SQLite file of default_db_path."""
    return os.environ.get("FSLAB_DB") or str(default_db_path())


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def database_url(location: str | Path) -> URL:
    """The SQLAlchemy URL of a --db value: a file path, or postgresql://user@host/db."""
    text_location = str(location)
    try:
        text_location.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"--db {text_location!r}: not UTF-8 text (SQLite and PostgreSQL take UTF-8 names)"
        ) from None
    if "://" not in text_location:
        if not text_location or "\x00" in text_location:
            raise UsageError(f"--db {text_location!r}: not a file path")
        try:
            return URL.create("sqlite", database=str(Path(text_location).expanduser()))
        except RuntimeError:  # ~user of no user
            raise UsageError(f"--db {text_location!r}: no such home directory") from None
    try:
        url = make_url(text_location)
    except (sa_exc.ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise UsageError(f"--db {text_location!r} is neither a file path nor a URL") from None
    if url.get_backend_name() in ("postgresql", "postgres"):
        return url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:"):
            raise UsageError(
                f"--db {text_location!r}: an in-memory database keeps nothing; name a file"
            )
        return url
    raise UsageError(
        f"--db {url.render_as_string(hide_password=True)}: fslab stores results in SQLite "
        "(a file path) or PostgreSQL (postgresql://user@host/dbname)"
    )


def shown_location(url: URL) -> str:
    """A database as messages name it: the file, or the URL without its password."""
    if url.get_backend_name() == "sqlite":
        return str(url.database)
    return url.set(drivername="postgresql").render_as_string(hide_password=True)


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

    status: PointStatus
    error: str = ""
    stderr: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    commands: list[tuple[list[str], int, float]] = field(default_factory=list)
    collectors: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, reason)
    facts: PointFacts = field(default_factory=PointFacts)  # built strictly (store.facts)
    started_at: str = ""
    ended_at: str = ""


@dataclass(frozen=True)
class CampaignRow:
    """A campaign as read back: its spec and host parsed once, here, at the store border."""

    id: int
    name: str
    status: CampaignStatus
    spec: Spec  # validated from the stored JSON
    spec_toml: str  # the source as the user wrote it
    overrides: CampaignOverrides
    host: HostFacts
    device: DeviceFacts | None
    fslab_version: str
    started_at: str
    ended_at: str | None
    hostname: str = ""  # the name it is stored under (a fleet's inventory name)


@dataclass(frozen=True)
class PointRow:
    id: int
    campaign_id: int
    seq: int
    config: str
    fs_type: str
    sweep: dict[str, ScalarValue]  # axis -> value, in spec order
    repeat: int
    role: PointRole
    status: PointStatus
    error: str | None
    stderr: str | None
    facts: PointFacts
    started_at: str | None
    ended_at: str | None


class StoreUnavailable(FslabError):
    """The database cannot be reached or refuses the login; the message says the fix."""


class Store:
    """A connection to one results database (SQLite path or PostgreSQL URL)."""

    def __init__(self, location: str | Path) -> None:
        self.url = database_url(location)
        self.shared = self.url.get_backend_name() == "postgresql"
        self.location = shown_location(self.url)  # what messages name
        self._engine = _postgresql_engine(self.url) if self.shared else _sqlite_engine(self.url)
        self._spool = Spool(spool_path(self.location)) if self.shared else None
        self._held: set[int] = set()  # campaigns whose runner lock this Store holds
        try:
            self._ensure_schema()
            self.flush_spool()
        except BaseException:
            self._engine.dispose()
            raise

    @property
    def path(self) -> Path:
        """The SQLite file (the lock file lives beside it)."""
        if self.shared:
            raise FslabError(f"{self.location} is a PostgreSQL database, not a file")
        return Path(str(self.url.database))

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ connections

    @contextlib.contextmanager
    def _connect(self, *, write: bool) -> Iterator[Connection]:
        """One transaction. SQLite writers first wait for the writers' turn (a kernel
        lock beside the file, fslab.store.lock), then take SQLite's write lock up
        front (BEGIN IMMEDIATE), so they queue instead of polling each other."""
        try:
            with contextlib.ExitStack() as held:
                if write and not self.shared:
                    try:
                        held.enter_context(write_turn(self.path))
                    except OSError as exc:
                        raise StoreUnavailable(
                            f"results database {self.location}: {exc.strerror} "
                            f"({exc.filename}); {_SQLITE_FIX}"
                        ) from None
                conn = held.enter_context(_connection(self._engine, self.url))
                if write:
                    conn.execution_options(fslab_write=True)
                with conn.begin():
                    yield conn
        except (sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
            raise self._unavailable(exc) from None

    def _unavailable(self, exc: sa_exc.DBAPIError) -> StoreUnavailable:
        return _unavailable(self.url, exc)

    def _ensure_schema(self) -> None:
        """Create or upgrade the schema if it is not at HEAD. A database at HEAD (the
        usual case) is only read: no write turn, no advisory lock, so many hosts
        opening the store at once do not queue behind each other."""
        with self._connect(write=False) as conn:
            if migrate.revision_of(conn).at_head:
                return
        with self._connect(write=True) as conn:
            if self.shared:
                # hosts opening a new shared database at once: one creates the schema
                conn.execute(text("SELECT pg_advisory_xact_lock(:k, 0)"), {"k": _PG_LOCK_CLASS})
            revision = migrate.revision_of(conn)  # again: another may have just done it
            if revision.at_head:
                return
            if revision.newer:
                raise FslabError(
                    f"{self.location} has schema {revision.current}, newer than this fslab "
                    f"understands ({tables.HEAD}); upgrade fslab or use another --db"
                )
            if self.shared and revision.current is not None:
                raise FslabError(
                    f"{self.location} has schema {revision.current}; this fslab writes "
                    f"{tables.HEAD}. Run `fslab store migrate --db URL` once, after "
                    "upgrading fslab on every host that writes to it"
                )
            migrate.upgrade(conn)

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
        host_name: str | None = None,
    ) -> int:
        """Record a campaign and its pending points; host_name (default: the host facts'
        hostname) is the host it is listed and compared under."""
        with self._connect(write=True) as conn:
            campaign_id = conn.execute(
                insert(tables.campaigns)
                .values(
                    name=name,
                    status="running",
                    spec_json=json.dumps(spec),
                    spec_toml=spec_toml,
                    overrides_json=json.dumps(overrides),
                    host_json=json.dumps(host),
                    host=host_name or str(host.get("hostname", "")),
                    device_json=json.dumps(device) if device is not None else None,
                    fslab_version=fslab_version,
                    started_at=started_at or utc_now(),
                )
                .returning(tables.campaigns.c.id)
            ).scalar_one()
            _insert_points(conn, campaign_id, points, first_seq=None)
        return int(campaign_id)

    def add_points(self, campaign_id: int, points: Sequence[PlannedPoint]) -> list[PointRow]:
        """Append pending points after the campaign's last seq, in the order given.

        For adaptive repetition (`fslab run --until-ci`). The given seq values
        are replaced: the next free seqs are taken inside the transaction (the
        campaign row locked on PostgreSQL), so two writers can never collide.
        """
        with self._connect(write=True) as conn:
            conn.execute(
                select(tables.campaigns.c.id)
                .where(tables.campaigns.c.id == campaign_id)
                .with_for_update()
            )
            last = conn.execute(
                select(func.max(tables.points.c.seq)).where(
                    tables.points.c.campaign_id == campaign_id
                )
            ).scalar()
            first = 0 if last is None else int(last) + 1
            _insert_points(conn, campaign_id, points, first_seq=first)
        return [p for p in self.points(campaign_id) if p.seq >= first]

    def save_outcome(self, point_id: int, outcome: PointOutcome) -> None:
        """Store one point's results, replacing anything a previous attempt left."""
        self._deferrable("save_outcome", {"point_id": point_id, "outcome": _outcome_dict(outcome)})

    def add_results(
        self,
        point_id: int,
        *,
        metrics: Mapping[str, float],
        artifacts: Mapping[str, str],
        collectors: Mapping[str, tuple[str, str]],
        facts: PointFacts,
    ) -> None:
        """Add what post-processing produced to a saved point (replacing same-named
        entries; top-level facts keys are merged), in one transaction."""
        self._deferrable(
            "add_results",
            {
                "point_id": point_id,
                "metrics": dict(metrics),
                "artifacts": dict(artifacts),
                "collectors": {k: list(v) for k, v in collectors.items()},
                "facts": facts.stored(),
            },
        )

    def set_campaign_status(
        self, campaign_id: int, status: CampaignStatus, ended_at: str | None = None
    ) -> None:
        ended = (ended_at or utc_now()) if status != "running" else None
        self._deferrable(
            "set_campaign_status", {"campaign_id": campaign_id, "status": status, "ended": ended}
        )

    def set_campaign_device(self, campaign_id: int, device: Mapping[str, Any]) -> None:
        with self._connect(write=True) as conn:
            conn.execute(
                update(tables.campaigns)
                .where(tables.campaigns.c.id == campaign_id)
                .values(device_json=json.dumps(device))
            )

    def delete_campaign(self, campaign_id: int) -> None:
        """Remove a campaign and everything stored under it (a re-import replaces it)."""
        with self._connect(write=True) as conn:
            point_ids = select(tables.points.c.id).where(tables.points.c.campaign_id == campaign_id)
            for table in tables.POINT_CHILDREN:
                conn.execute(delete(table).where(table.c.point_id.in_(point_ids)))
            conn.execute(delete(tables.points).where(tables.points.c.campaign_id == campaign_id))
            conn.execute(delete(tables.campaigns).where(tables.campaigns.c.id == campaign_id))

    def _deferrable(self, op: str, args: dict[str, Any]) -> None:
        """A write that may wait out an outage of a shared database.

        Writes are applied in order: anything spooled goes first. If the database
        cannot be reached, the write joins the spool (a local file, fsynced) and
        the campaign goes on; the next write, or the next fslab that opens this
        database, sends the spool.
        """
        try:
            self.flush_spool()
            with self._connect(write=True) as conn:
                _APPLY[op](conn, args)
        except StoreUnavailable:
            if self._spool is None:
                raise
            self._spool.append(op, args)

    def flush_spool(self) -> int:
        """Send writes kept during an outage; returns how many were sent."""
        if self._spool is None or not self._spool.pending():
            return 0

        def apply_all(entries: list[tuple[str, dict[str, Any]]]) -> None:
            with self._connect(write=True) as conn:
                for op, args in entries:
                    _APPLY[op](conn, args)

        return self._spool.drain(apply_all)

    def spooled(self) -> int:
        """Writes waiting in the local spool for the database to come back."""
        return self._spool.pending() if self._spool is not None else 0

    # ------------------------------------------------------------ locks

    @contextlib.contextmanager
    def campaign_lock(self, campaign_id: int) -> Iterator[None]:
        """Hold the campaign's runner lock; refuse if another fslab holds it.

        SQLite: a byte lock beside the file (fslab.store.lock). PostgreSQL: a
        session advisory lock, seen by every host, released when the session
        ends however the runner dies. Re-entered by the same Store it holds on:
        `fslab run` keeps it from the planned runs through the question rounds.
        """
        if campaign_id in self._held:
            yield
            return
        self._held.add(campaign_id)
        try:
            with self._lock_campaign(campaign_id):
                yield
        finally:
            self._held.discard(campaign_id)

    @contextlib.contextmanager
    def _lock_campaign(self, campaign_id: int) -> Iterator[None]:
        if not self.shared:
            with campaign_lock(self.path, campaign_id):
                yield
            return
        try:
            conn = self._engine.connect()
        except (sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
            raise self._unavailable(exc) from None
        try:
            got = conn.execute(
                text("SELECT pg_try_advisory_lock(:k, :c)"), {"k": _PG_LOCK_CLASS, "c": campaign_id}
            ).scalar()
            conn.commit()
            if not got:
                raise FslabError(
                    f"campaign {campaign_id} is being run by another fslab right now (a host "
                    f"writing to {self.location}); wait for it to finish or stop it first"
                )
            yield
        finally:
            # a pooled session outlives close(): end this one, and its lock with it
            with contextlib.suppress(sa_exc.DBAPIError):
                conn.invalidate()
            conn.close()

    def _running(self, campaign_id: int) -> bool:
        if not self.shared:
            return campaign_running(self.path, campaign_id)
        with self._connect(write=False) as conn:
            held = conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE locktype='advisory' AND granted"
                    " AND classid=:k AND objid=:c AND objsubid=2"
                ),
                {"k": _PG_LOCK_CLASS, "c": campaign_id},
            ).scalar()
        return bool(held)

    # ------------------------------------------------------------ reading

    def campaigns(self, *, host: str | None = None) -> list[CampaignRow]:
        query = select(tables.campaigns).order_by(tables.campaigns.c.id)
        if host is not None:
            query = query.where(tables.campaigns.c.host == host)
        with self._connect(write=False) as conn:
            rows = conn.execute(query).mappings().all()
        return [self._live(_campaign_row(r)) for r in rows]

    def campaign(self, campaign_id: int) -> CampaignRow:
        with self._connect(write=False) as conn:
            row = (
                conn.execute(select(tables.campaigns).where(tables.campaigns.c.id == campaign_id))
                .mappings()
                .first()
            )
        if row is None:
            raise FslabError(f"no campaign {campaign_id} in {self.location} (see `fslab list`)")
        return self._live(_campaign_row(row))

    def _live(self, campaign: CampaignRow) -> CampaignRow:
        """'running' only while a fslab holds the campaign's lock; else it was killed."""
        if campaign.status == "running" and not self._running(campaign.id):
            return replace(campaign, status="interrupted")
        return campaign

    def find_campaign(self, campaign: CampaignRow) -> int | None:
        """The id of the same campaign here (name, host and start time), if stored."""
        with self._connect(write=False) as conn:
            found = conn.execute(
                select(tables.campaigns.c.id).where(
                    tables.campaigns.c.name == campaign.name,
                    tables.campaigns.c.host == campaign.hostname,
                    tables.campaigns.c.started_at == campaign.started_at,
                )
            ).scalar()
        return None if found is None else int(found)

    def point_counts(self) -> dict[int, dict[str, int]]:
        """Points by status of every campaign: {campaign id: {status: count}}."""
        query = select(tables.points.c.campaign_id, tables.points.c.status, func.count()).group_by(
            tables.points.c.campaign_id, tables.points.c.status
        )
        counts: dict[int, dict[str, int]] = {}
        with self._connect(write=False) as conn:
            for campaign_id, status, n in conn.execute(query):
                counts.setdefault(campaign_id, {})[status] = n
        return counts

    def latest_campaign_id(self) -> int:
        with self._connect(write=False) as conn:
            latest = conn.execute(select(func.max(tables.campaigns.c.id))).scalar()
        if latest is None:
            raise FslabError(f"no campaigns in {self.location} yet; run one with `fslab run`")
        return int(latest)

    def points(self, campaign_id: int) -> list[PointRow]:
        with self._connect(write=False) as conn:
            rows = (
                conn.execute(
                    select(tables.points)
                    .where(tables.points.c.campaign_id == campaign_id)
                    .order_by(tables.points.c.seq)
                )
                .mappings()
                .all()
            )
        return [_point_row(r) for r in rows]

    def metrics(self, campaign_id: int) -> dict[int, dict[str, float]]:
        query = (
            select(tables.metrics.c.point_id, tables.metrics.c.name, tables.metrics.c.value)
            .join(tables.points, tables.points.c.id == tables.metrics.c.point_id)
            .where(tables.points.c.campaign_id == campaign_id)
        )
        result: dict[int, dict[str, float]] = {}
        with self._connect(write=False) as conn:
            for point_id, name, value in conn.execute(query):
                result.setdefault(point_id, {})[name] = value
        return result

    def artifact(self, point_id: int, name: str) -> str | None:
        with self._connect(write=False) as conn:
            content = conn.execute(
                select(tables.artifacts.c.content).where(
                    tables.artifacts.c.point_id == point_id, tables.artifacts.c.name == name
                )
            ).scalar()
        return None if content is None else str(content)

    def artifact_names(self, point_id: int) -> list[str]:
        with self._connect(write=False) as conn:
            names = conn.execute(
                select(tables.artifacts.c.name)
                .where(tables.artifacts.c.point_id == point_id)
                .order_by(tables.artifacts.c.name)
            ).scalars()
            return list(names)

    def commands(self, point_id: int) -> list[list[str]]:
        return [argv for argv, _, _ in self.command_records(point_id)]

    def command_records(self, point_id: int) -> list[tuple[list[str], int, float]]:
        """(argv, exit code, seconds) of each command the point ran, in order."""
        query = (
            select(
                tables.commands.c.argv_json, tables.commands.c.returncode, tables.commands.c.seconds
            )
            .where(tables.commands.c.point_id == point_id)
            .order_by(tables.commands.c.seq)
        )
        with self._connect(write=False) as conn:
            return [(json.loads(a), rc, secs) for a, rc, secs in conn.execute(query)]

    def collectors(self, point_id: int) -> dict[str, tuple[str, str]]:
        query = (
            select(tables.collectors.c.name, tables.collectors.c.status, tables.collectors.c.reason)
            .where(tables.collectors.c.point_id == point_id)
            .order_by(tables.collectors.c.name)
        )
        with self._connect(write=False) as conn:
            return {name: (status, reason) for name, status, reason in conn.execute(query)}

    def integrity_ok(self) -> bool:
        """SQLite's integrity check; PostgreSQL checks its own pages, so: reachable."""
        with self._connect(write=False) as conn:
            if self.shared:
                return conn.execute(text("SELECT 1")).scalar() == 1
            return conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


def _unavailable(url: URL, exc: sa_exc.DBAPIError) -> StoreUnavailable:
    """A database that cannot be reached or refuses the login, with what to do."""
    reason = (str(exc.orig) if exc.orig else str(exc)).strip().splitlines()[0]
    if "password authentication failed" in reason or "no password supplied" in reason:
        fix = (
            "check the user and password in --db / $FSLAB_DB "
            "(postgresql://USER:PASSWORD@HOST/DB, or a ~/.pgpass line)"
        )
    elif url.get_backend_name() != "postgresql":
        fix = _SQLITE_FIX
    else:
        fix = (
            f"start the server at {url.host or 'localhost'}:{url.port or 5432} "
            "or fix the host, port and database name in --db / $FSLAB_DB"
        )
    return StoreUnavailable(f"results database {shown_location(url)}: {reason}; {fix}")


def _connection(engine: Engine, url: URL) -> Connection:
    """A new connection; a URL the driver refuses (an unknown option) is a UsageError."""
    try:
        return engine.connect()
    except sa_exc.ProgrammingError as exc:
        reason = (str(exc.orig) if exc.orig else str(exc)).strip().splitlines()[0]
        raise UsageError(f"--db {shown_location(url)}: {reason}") from None
    except UnicodeError as exc:  # a host name the resolver cannot encode (IDNA)
        raise UsageError(f"--db {shown_location(url)}: not a host name: {exc}") from None


def upgrade_database(location: str | Path) -> tuple[str | None, str]:
    """`fslab store migrate`: bring any database to HEAD; returns (before, after)."""
    url = database_url(location)
    engine = _postgresql_engine(url) if url.get_backend_name() == "postgresql" else None
    engine = engine or _sqlite_engine(url)
    try:
        with _connection(engine, url) as conn:
            conn.execution_options(fslab_write=True)
            with conn.begin():
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k, 0)"), {"k": _PG_LOCK_CLASS})
                before = migrate.revision_of(conn)
                if before.newer:
                    raise FslabError(
                        f"{location} has schema {before.current}, newer than this fslab "
                        f"understands ({tables.HEAD}); upgrade fslab"
                    )
                if not before.at_head:
                    migrate.upgrade(conn)
    except (sa_exc.OperationalError, sa_exc.InterfaceError) as exc:
        raise _unavailable(url, exc) from None
    finally:
        engine.dispose()
    return before.current, tables.HEAD


# ------------------------------------------------------------ engines


def _sqlite_engine(url: URL) -> Engine:
    path = Path(str(url.database))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(
            f"results database {path}: {exc.strerror} ({exc.filename}); {_SQLITE_FIX}"
        ) from None
    try:
        engine = create_engine(url, connect_args={"timeout": 30.0})
    except sa_exc.ArgumentError as exc:  # sqlite:// with what SQLAlchemy cannot read
        raise UsageError(f"--db {shown_location(url)!r}: {str(exc).splitlines()[0]}") from None

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # fslab says BEGIN itself (below)
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # writers take the lock before reading, so two never deadlock on an upgrade
        immediate = conn.get_execution_options().get("fslab_write")
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _postgresql_engine(url: URL) -> Engine:
    engine = create_engine(
        url,
        pool_pre_ping=True,  # a server restarted mid-campaign: reconnect, don't fail
        connect_args={"connect_timeout": 10, "application_name": "fslab"},
    )
    # a new campaign's pending points go as one INSERT of many VALUES rows, one
    # execution on the server, rather than psycopg's executemany, one per row
    # (a saved point's rows go as arrays instead: _insert_columns)
    engine.dialect.use_insertmanyvalues_wo_returning = True
    return engine


# ------------------------------------------------------------ rows


def _insert_points(
    conn: Connection, campaign_id: int, planned: Sequence[PlannedPoint], *, first_seq: int | None
) -> None:
    """Insert pending points: with their own seqs, or numbered from first_seq."""
    if not planned:
        return
    conn.execute(
        insert(tables.points),
        [
            {
                "campaign_id": campaign_id,
                "seq": p.seq if first_seq is None else first_seq + i,
                "config": p.config,
                "fs_type": p.fs_type,
                "sweep_json": json.dumps(p.sweep),
                "repeat": p.repeat,
                "role": p.role,
                "status": "pending",
            }
            for i, p in enumerate(planned)
        ],
    )


def _outcome_dict(outcome: PointOutcome) -> dict[str, Any]:
    return {
        "status": outcome.status,
        "error": outcome.error,
        "stderr": outcome.stderr,
        "metrics": {k: float(v) for k, v in outcome.metrics.items()},
        "artifacts": dict(outcome.artifacts),
        "commands": [[list(argv), rc, secs] for argv, rc, secs in outcome.commands],
        "collectors": {k: list(v) for k, v in outcome.collectors.items()},
        "facts": outcome.facts.stored(),
        "started_at": outcome.started_at,
        "ended_at": outcome.ended_at or utc_now(),
    }


def _apply_save_outcome(conn: Connection, args: dict[str, Any]) -> None:
    """Mark the point done and insert its rows: a few statements, whatever its size.

    A pending point has no rows under it yet (nothing else writes them), so the
    first save is an UPDATE and the inserts; a point saved before (a spooled
    write sent twice, a re-import) first loses what the earlier save left.
    """
    point_id, outcome = args["point_id"], args["outcome"]
    point = update(tables.points).values(
        status=outcome["status"],
        error=outcome["error"] or None,
        stderr=outcome["stderr"] or None,
        facts_json=json.dumps(outcome["facts"]),
        started_at=outcome["started_at"] or None,
        ended_at=outcome["ended_at"],
    )
    pending = tables.points.c.id == point_id, tables.points.c.status == "pending"
    if conn.execute(point.where(*pending)).rowcount != 1:
        for table in tables.POINT_CHILDREN:
            conn.execute(delete(table).where(table.c.point_id == point_id))
        conn.execute(point.where(tables.points.c.id == point_id))
    _insert_children(
        conn,
        point_id,
        metrics=outcome["metrics"],
        artifacts=outcome["artifacts"],
        collectors=outcome["collectors"],
    )
    commands = outcome["commands"]
    _insert_columns(
        conn,
        tables.commands,
        point_id,
        {
            "seq": list(range(len(commands))),
            "argv_json": [json.dumps(argv) for argv, _, _ in commands],
            "returncode": [rc for _, rc, _ in commands],
            "seconds": [secs for _, _, secs in commands],
        },
    )


def _insert_children(
    conn: Connection,
    point_id: int,
    *,
    metrics: Mapping[str, float],
    artifacts: Mapping[str, str],
    collectors: Mapping[str, Sequence[str]],
) -> None:
    columns: tuple[tuple[Table, dict[str, list[Any]]], ...] = (
        (tables.metrics, {"name": list(metrics), "value": [float(v) for v in metrics.values()]}),
        (tables.artifacts, {"name": list(artifacts), "content": list(artifacts.values())}),
        (
            tables.collectors,
            {
                "name": list(collectors),
                "status": [v[0] for v in collectors.values()],
                "reason": [v[1] for v in collectors.values()],
            },
        ),
    )
    for table, values in columns:
        _insert_columns(conn, table, point_id, values)


def _insert_columns(
    conn: Connection, table: Table, point_id: int, columns: Mapping[str, Sequence[Any]]
) -> None:
    """Insert rows under one point, given column by column (all of one length).

    PostgreSQL gets one array per column, unnested by the server: a short
    statement of the same text whatever the row count, so psycopg prepares it
    once, and a handful of Python objects rather than a dict and three bind
    parameters per row. Those per-row objects made the writer's garbage
    collector run a full pass every few dozen saves, the slowest saves of all
    (docs/fleet.md, "The store"). SQLite, in this process,
    takes the rows through its executemany.
    """
    names = list(columns)
    count = len(columns[names[0]])
    if count == 0:
        return
    if conn.dialect.name != "postgresql":
        keys = ("point_id", *names)
        rows = zip(*(columns[n] for n in names), strict=True)
        conn.execute(insert(table), [dict(zip(keys, (point_id, *r), strict=True)) for r in rows])
        return
    unnested = [
        func.unnest(bindparam(f"{n}_all", type_=postgresql.ARRAY(table.c[n].type))) for n in names
    ]
    conn.execute(
        insert(table).from_select(
            ["point_id", *names], select(bindparam("point_id", type_=Integer), *unnested)
        ),
        {"point_id": point_id, **{f"{n}_all": list(columns[n]) for n in names}},
    )


def _apply_add_results(conn: Connection, args: dict[str, Any]) -> None:
    point_id = args["point_id"]
    stored = conn.execute(
        select(tables.points.c.facts_json).where(tables.points.c.id == point_id)
    ).scalar()
    merged = {**(json.loads(stored) if stored else {}), **args["facts"]}
    conn.execute(
        update(tables.points)
        .where(tables.points.c.id == point_id)
        .values(facts_json=json.dumps(merged))
    )
    for table, names in (
        (tables.metrics, args["metrics"]),
        (tables.artifacts, args["artifacts"]),
        (tables.collectors, args["collectors"]),
    ):
        if names:
            conn.execute(
                delete(table).where(table.c.point_id == point_id, _named(conn, table, names))
            )
    _insert_children(
        conn,
        point_id,
        metrics=args["metrics"],
        artifacts=args["artifacts"],
        collectors=args["collectors"],
    )


def _named(conn: Connection, table: Table, names: Iterable[str]) -> ColumnElement[bool]:
    """Rows whose name is one of names: on PostgreSQL one array parameter (as
    _insert_columns sends rows), elsewhere an IN list."""
    if conn.dialect.name == "postgresql":
        return table.c.name == any_(bindparam("names_all", list(names), postgresql.ARRAY(Text)))
    return table.c.name.in_(list(names))


def _apply_campaign_status(conn: Connection, args: dict[str, Any]) -> None:
    conn.execute(
        update(tables.campaigns)
        .where(tables.campaigns.c.id == args["campaign_id"])
        .values(status=args["status"], ended_at=args["ended"])
    )


_APPLY = {
    "save_outcome": _apply_save_outcome,
    "add_results": _apply_add_results,
    "set_campaign_status": _apply_campaign_status,
}


def _campaign_row(row: RowMapping) -> CampaignRow:
    """Parsed once here: the spec validated, the host facts, device and overrides typed."""
    where = f"campaign {row['id']}"
    device = row["device_json"]
    return CampaignRow(
        id=row["id"],
        name=row["name"],
        status=row["status"],
        spec=validate_spec(json.loads(row["spec_json"]), f"{where} (stored spec)"),
        spec_toml=row["spec_toml"],
        overrides=_read(CampaignOverrides, row["overrides_json"], where),
        host=HostFacts.from_stored(json.loads(row["host_json"])),
        device=_read(DeviceFacts, device, where) if device else None,
        fslab_version=row["fslab_version"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        hostname=row["host"],
    )


_Model = TypeVar("_Model", bound=FactsModel)


def _read(model: type[_Model], stored: str | None, what: str) -> _Model:
    """A JSON column as its type, unknown keys kept (store.facts: the lenient read path);
    one that does not read back names its row."""
    try:
        return model.read_json(stored or "{}")
    except ValidationError as exc:
        raise FslabError(f"{what}: stored {model.__name__} does not read back: {exc}") from None


def _point_row(row: RowMapping) -> PointRow:
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
        facts=_read(PointFacts, row["facts_json"], f"point {row['id']}"),
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )
