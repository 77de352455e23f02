"""The store's health, as GET /api/v1/health reports it: its runs counted (a read that opens the store if it is
closed), the disk's free bytes, the last write fault, and the store's and the bundle's versions."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text

from db.store.tables import STORE_VERSION as STORED
from db.views.serving import shared_engine, store_path

STORE_VERSION = STORED  # the store's table layout version


def count_runs() -> int:
    with shared_engine().connect() as conn:
        return conn.execute(text("SELECT count(*) FROM runs")).scalar()


def free_bytes() -> int | None:
    """The free bytes of the store's disk (None: in memory, a lake whose data may be anywhere, or unreadable)."""
    from db.store.lake import is_lake

    path = store_path()
    if path == ":memory:" or is_lake(path):  # a lake's data may be anywhere (s3://): unavailable, not this disk's
        return None
    try:
        return shutil.disk_usage(Path(path).resolve().parent).free
    except OSError:
        return None
