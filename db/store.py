"""Open the DuckDB store: create tables, record and migrate store_version, one shared engine per process."""
from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

from sqlalchemy import BigInteger, Double, Engine, Float, Integer, create_engine, text
from sqlalchemy.pool import StaticPool
from sqlmodel import SQLModel

import db.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from db.tables import STORE_VERSION

DEFAULT_PATH = "data/mpsbench.duckdb"
WRITE_LOCK = threading.Lock()  # the dashboard process is the one writer; uploads from threads take turns
_shared: dict[str, Engine] = {}
_shared_lock = threading.Lock()


def store_path(path: str | None = None) -> str:
    return path or os.environ.get("MPSBENCH_DB") or DEFAULT_PATH


def open_store(path: str | None = None) -> Engine:
    target = store_path(path)
    if target == ":memory:":
        # one connection shared by all: every new in-memory connection would be another empty database
        engine = create_engine("duckdb:///:memory:", poolclass=StaticPool)
    else:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(f"duckdb:///{target}", poolclass=StaticPool)
    _prepare(engine)
    return engine


def _prepare(engine: Engine) -> None:
    from db.migrate import migrate
    with WRITE_LOCK, engine.begin() as conn:
        migrate(conn)
    SQLModel.metadata.create_all(engine)
    with WRITE_LOCK, engine.begin() as conn:
        conn.execute(text("INSERT OR REPLACE INTO meta VALUES ('store_version', :v)"), {"v": str(STORE_VERSION)})
        if conn.execute(text("SELECT 1 FROM meta WHERE key='data_version'")).first() is None:
            conn.execute(text("INSERT INTO meta VALUES ('data_version', :v)"), {"v": uuid.uuid4().hex})


def _widen_numbers() -> None:
    """db.tables' `float` becomes 32-bit FLOAT and `int` 32-bit INTEGER in DuckDB: summaries need 64-bit
    precision and memory_bytes (192 GiB) does not fit 32 bits. Widen the column types before tables exist."""
    for table in SQLModel.metadata.tables.values():
        for column in table.columns:
            if type(column.type) is Float:
                column.type = Double()
            elif type(column.type) is Integer and column.name.endswith("bytes"):
                column.type = BigInteger()


_widen_numbers()


def shared_store() -> Engine:
    key = store_path()
    with _shared_lock:
        if key not in _shared:
            _shared[key] = open_store(key)
        return _shared[key]


def data_version(engine: Engine) -> str:
    with engine.connect() as conn:
        row = conn.execute(text("SELECT value FROM meta WHERE key='data_version'")).first()
    return row[0] if row else ""


def bump_data_version(conn) -> None:
    """Call inside the ingest transaction, so the version changes exactly when data commits."""
    conn.execute(text("INSERT OR REPLACE INTO meta VALUES ('data_version', :v)"), {"v": uuid.uuid4().hex})
