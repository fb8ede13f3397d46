"""The results schema as SQLAlchemy Core tables: one schema for SQLite and PostgreSQL.

This is the newest version (alembic revision HEAD); the migrations under
migrations/versions/ build it step by step, so a database written by an older
fslab opens in this one. JSON values are stored as text (`*_json`), timestamps
as ISO 8601 UTC text, the same on both engines, so `fslab store copy` moves
rows without converting them.
"""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.schema import SchemaItem

# the alembic revision of the schema below; meta.schema_version holds its number
HEAD = "v4"
SCHEMA_VERSION = 4

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

campaigns = Table(
    "campaigns",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("spec_json", Text, nullable=False),
    Column("spec_toml", Text, nullable=False),
    Column("overrides_json", Text, nullable=False),
    Column("host_json", Text, nullable=False),
    Column("device_json", Text),
    Column("fslab_version", Text, nullable=False),
    Column("started_at", Text, nullable=False),
    Column("ended_at", Text),
    # v3: the hostname that ran the campaign (also in host_json), for --by host
    Column("host", Text, nullable=False, server_default=""),
    CheckConstraint(
        "status IN ('running', 'complete', 'interrupted', 'failed')", name="campaign_status"
    ),
)

points = Table(
    "points",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("campaign_id", Integer, ForeignKey("campaigns.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("config", Text, nullable=False),
    Column("fs_type", Text, nullable=False),
    Column("sweep_json", Text, nullable=False),
    Column("repeat", Integer, nullable=False),
    Column("status", Text, nullable=False),
    Column("error", Text),
    Column("stderr", Text),
    Column("facts_json", Text),
    Column("started_at", Text),
    Column("ended_at", Text),
    # v2: clean (no collector, headline), evidence (collectors, diagnosis only),
    # inline (collectors and headline; everything stored before roles existed);
    # v4: warmup (discarded first runs)
    Column("role", Text, nullable=False, server_default="inline"),
    UniqueConstraint("campaign_id", "seq"),
    CheckConstraint("status IN ('pending', 'ok', 'failed')", name="point_status"),
    CheckConstraint("role IN ('clean', 'evidence', 'inline', 'warmup')", name="point_role"),
)
Index("points_by_campaign", points.c.campaign_id, points.c.status)
Index("campaigns_by_host", campaigns.c.host)


def _point_child(name: str, *columns: SchemaItem) -> Table:
    return Table(
        name,
        metadata,
        Column(
            "point_id",
            Integer,
            ForeignKey("points.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        *columns,
        sqlite_with_rowid=False,
    )


metrics = _point_child(
    "metrics", Column("name", Text, primary_key=True), Column("value", Float, nullable=False)
)
artifacts = _point_child(
    "artifacts", Column("name", Text, primary_key=True), Column("content", Text, nullable=False)
)
commands = _point_child(
    "commands",
    Column("seq", Integer, primary_key=True),
    Column("argv_json", Text, nullable=False),
    Column("returncode", Integer, nullable=False),
    Column("seconds", Float, nullable=False),
)
collectors = _point_child(
    "collectors",
    Column("name", Text, primary_key=True),
    Column("status", Text, nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    CheckConstraint("status IN ('ok', 'unavailable', 'failed')", name="collector_status"),
)

POINT_CHILDREN = (metrics, artifacts, commands, collectors)
# the order rows are copied in, parents first
ALL_TABLES = (campaigns, points, *POINT_CHILDREN)
