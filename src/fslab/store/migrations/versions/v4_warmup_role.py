"""v4: a point may be a warm-up run ('warmup'): the role's CHECK admits it.

SQLite cannot alter a CHECK constraint; widening one keeps every stored row
valid, so the table's definition is edited in place (SQLite's documented
procedure for such changes: writable_schema, schema_version bumped, then an
integrity check) instead of copying the table, whose children would be lost
to ON DELETE CASCADE when the old table is dropped.
"""

from alembic import op
from sqlalchemy import text

revision = "v4"
down_revision = "v3"
branch_labels = None
depends_on = None

OLD = "role IN ('clean', 'evidence', 'inline')"
NEW = "role IN ('clean', 'evidence', 'inline', 'warmup')"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        version = bind.execute(text("PRAGMA schema_version")).scalar_one()
        bind.execute(text("PRAGMA writable_schema=ON"))
        bind.execute(
            text(
                "UPDATE sqlite_master SET sql = replace(sql, :old, :new) "
                "WHERE type = 'table' AND name = 'points'"
            ),
            {"old": OLD, "new": NEW},
        )
        bind.execute(text(f"PRAGMA schema_version={int(version) + 1}"))
        bind.execute(text("PRAGMA writable_schema=OFF"))
        problems = bind.execute(text("PRAGMA integrity_check")).scalars().all()
        if problems != ["ok"]:
            raise RuntimeError(f"points table after the v4 edit: {problems}")
    else:
        op.drop_constraint("point_role", "points", type_="check")
        op.create_check_constraint("point_role", "points", NEW)
    op.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
