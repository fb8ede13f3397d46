"""Alembic's environment: fslab hands it an open connection, never a config file."""

from __future__ import annotations

from alembic import context

from fslab.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things: batch mode rebuilds the table instead
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
