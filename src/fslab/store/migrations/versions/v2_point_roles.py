"""v2: each point has a role (clean, evidence or inline); every point stored
before roles existed ran instrumented and counted as a headline: 'inline'."""

import sqlalchemy as sa
from alembic import op

revision = "v2"
down_revision = "v1"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # ADD COLUMN with its CHECK: no table rebuild on databases of any size
        op.execute(
            "ALTER TABLE points ADD COLUMN role TEXT NOT NULL DEFAULT 'inline'"
            " CHECK (role IN ('clean', 'evidence', 'inline'))"
        )
    else:
        op.add_column("points", sa.Column("role", sa.Text, nullable=False, server_default="inline"))
        op.create_check_constraint(
            "point_role", "points", "role IN ('clean', 'evidence', 'inline')"
        )
    op.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
