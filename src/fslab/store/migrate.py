"""Bring a results database to the schema this fslab writes (alembic HEAD).

Databases written before alembic (fslab 0.1: schema 1; the run model: schema 2)
have a `meta` table with their schema version and no `alembic_version` table:
they are stamped with the matching revision, then upgraded like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text

from fslab.store.tables import HEAD

# revisions before alembic, by meta.schema_version
LEGACY_REVISIONS = {1: "v1", 2: "v2", 3: "v3"}


@dataclass(frozen=True)
class Revision:
    """Where a database stands: None when it is empty."""

    current: str | None
    legacy: bool  # a meta.schema_version but no alembic_version table

    @property
    def at_head(self) -> bool:
        return self.current == HEAD

    @property
    def newer(self) -> bool:
        return self.current is not None and self.current not in known_revisions()


def _config(conn: Connection) -> Config:
    config = Config()
    location = resources.files("fslab.store") / "migrations"
    config.set_main_option("script_location", str(location))
    config.attributes["connection"] = conn
    return config


def known_revisions() -> set[str]:
    script = ScriptDirectory(str(resources.files("fslab.store") / "migrations"))
    return {rev.revision for rev in script.walk_revisions()}


def head_revision() -> str:
    script = ScriptDirectory(str(resources.files("fslab.store") / "migrations"))
    return str(script.get_current_head())


def revision_of(conn: Connection) -> Revision:
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" in tables:
        current = MigrationContext.configure(conn).get_current_revision()
        return Revision(current, legacy=False)
    if "meta" in tables:
        row = conn.execute(text("SELECT value FROM meta WHERE key='schema_version'")).first()
        version = int(row[0]) if row else 0
        return Revision(LEGACY_REVISIONS.get(version, f"schema {version}"), legacy=True)
    return Revision(None, legacy=False)


def upgrade(conn: Connection) -> None:
    """Upgrade to HEAD inside the caller's transaction (PostgreSQL DDL is transactional)."""
    config = _config(conn)
    before = revision_of(conn)
    if before.legacy and before.current is not None:
        command.stamp(config, before.current)
    command.upgrade(config, "head")
