"""Ordered store migrations keyed by store_version. v0: a file from before the meta table existed."""
from __future__ import annotations

from sqlalchemy import text

from db.errors import StoreError
from db.tables import STORE_VERSION


def current_version(conn) -> int | None:
    tables = {r[0] for r in conn.execute(text("SELECT table_name FROM information_schema.tables"))}
    if "meta" in tables:
        row = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).first()
        return int(row[0]) if row else STORE_VERSION
    return 0 if "runs" in tables else None  # None: a new, empty file


def _v0_to_v1(conn) -> None:
    """v0 had no meta table and results without passed/tolerance."""
    cols = {r[0] for r in conn.execute(text(
        "SELECT column_name FROM information_schema.columns WHERE table_name='results'"))}
    for name, kind in (("passed", "BOOLEAN"), ("tolerance", "DOUBLE")):
        if name not in cols:
            conn.execute(text(f"ALTER TABLE results ADD COLUMN {name} {kind}"))


MIGRATIONS = {0: _v0_to_v1}


def migrate(conn) -> None:
    version = current_version(conn)
    if version is not None and version > STORE_VERSION:
        # an older mpsbench must not write into (or half-understand) a store laid out by a newer one
        raise StoreError(409, f"store version {version} is newer than this mpsbench ({STORE_VERSION}); upgrade")
    while version is not None and version < STORE_VERSION:
        MIGRATIONS[version](conn)
        version += 1
