"""v3: each campaign names the host that ran it (a column, filled from the
host facts every campaign already stored), so many hosts can share one store."""

import json

import sqlalchemy as sa
from alembic import op

revision = "v3"
down_revision = "v2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("campaigns", sa.Column("host", sa.Text, nullable=False, server_default=""))
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, host_json FROM campaigns")).all()
    for campaign_id, host_json in rows:
        hostname = str(json.loads(host_json or "{}").get("hostname", ""))
        bind.execute(
            sa.text("UPDATE campaigns SET host=:host WHERE id=:id"),
            {"host": hostname, "id": campaign_id},
        )
    op.create_index("campaigns_by_host", "campaigns", ["host"])
    op.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
