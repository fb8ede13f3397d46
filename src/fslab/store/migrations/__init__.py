"""Alembic migrations of the results schema (run through fslab.store.migrate)."""
