"""Validated, idempotent ingest of one bundle into the store (imports db.store)."""
