"""Read-only SQL on the store, to pandas / Arrow (DuckDB's own fast paths), safe from many threads at once.

The store's engine shares one DuckDB connection (db.store: StaticPool, DuckDB allows one writer per file).
A DuckDB connection runs one transaction at a time, so two dashboard sessions reading through it together fail
("cannot start a transaction within a transaction"), and returning a SQLAlchemy connection to the pool rolls
the shared one back under a writer. Reads here therefore never check a connection out: each query runs on its
own duplicate of the shared connection (same database, own transaction; ~0.3 ms to open), closed afterwards.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine
from sqlalchemy.pool import StaticPool


@contextmanager
def reader(engine: Engine) -> Iterator[Any]:
    """A DuckDB connection for reads (a duplicate of the engine's shared one, or a checked-out one otherwise)."""
    if isinstance(engine.pool, StaticPool):
        duplicate = engine.pool.connection.dbapi_connection.duplicate()  # the pool's one record; no checkout
        try:
            yield duplicate
        finally:
            duplicate.close()
        return
    with engine.connect() as conn:  # an ordinary pool (benchmarks, ad-hoc engines): one connection per checkout
        yield conn.connection.driver_connection


def read_frame(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    with reader(engine) as duck:
        return duck.sql(sql, params=list(params)).df()


def read_arrow(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pa.Table:
    with reader(engine) as duck:
        return duck.sql(sql, params=list(params)).to_arrow_table()


def read_data_version(engine: Engine) -> str:
    """The store's data version (changes with every ingest), read like every other query here."""
    found = read_frame(engine, "SELECT value FROM meta WHERE key = 'data_version'")
    return str(found["value"].iloc[0]) if len(found) else ""
