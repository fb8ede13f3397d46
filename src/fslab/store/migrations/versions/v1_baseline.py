"""v1: the schema of fslab 0.1 (campaigns, planned points, their metrics,
artifacts, commands and collector status)."""

import sqlalchemy as sa
from alembic import op

revision = "v1"
down_revision = None
branch_labels = None
depends_on = None


def _child(name: str, *columns: sa.schema.SchemaItem) -> None:
    op.create_table(
        name,
        sa.Column(
            "point_id",
            sa.Integer,
            sa.ForeignKey("points.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        *columns,
        sqlite_with_rowid=False,
    )


def upgrade() -> None:
    op.create_table(
        "meta",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("spec_json", sa.Text, nullable=False),
        sa.Column("spec_toml", sa.Text, nullable=False),
        sa.Column("overrides_json", sa.Text, nullable=False),
        sa.Column("host_json", sa.Text, nullable=False),
        sa.Column("device_json", sa.Text),
        sa.Column("fslab_version", sa.Text, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("ended_at", sa.Text),
        sa.CheckConstraint(
            "status IN ('running', 'complete', 'interrupted', 'failed')", name="campaign_status"
        ),
    )
    op.create_table(
        "points",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "campaign_id",
            sa.Integer,
            sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("fs_type", sa.Text, nullable=False),
        sa.Column("sweep_json", sa.Text, nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("stderr", sa.Text),
        sa.Column("facts_json", sa.Text),
        sa.Column("started_at", sa.Text),
        sa.Column("ended_at", sa.Text),
        sa.UniqueConstraint("campaign_id", "seq"),
        sa.CheckConstraint("status IN ('pending', 'ok', 'failed')", name="point_status"),
    )
    op.create_index("points_by_campaign", "points", ["campaign_id", "status"])
    _child(
        "metrics",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
    )
    _child(
        "artifacts",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("content", sa.Text, nullable=False),
    )
    _child(
        "commands",
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("argv_json", sa.Text, nullable=False),
        sa.Column("returncode", sa.Integer, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
    )
    _child(
        "collectors",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.CheckConstraint("status IN ('ok', 'unavailable', 'failed')", name="collector_status"),
    )
    op.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
