"""Read-only SQL on the store, to pandas / Arrow (DuckDB's own fast paths), safe from many threads at once.

Each read checks a connection out of the engine: db.store.engine gives every checkout its own DuckDB connection (a
duplicate of one root: same database, own transaction), so dashboard sessions and an upload read and write at once.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine


@contextmanager
def reader(engine: Engine) -> Iterator[Any]:
    """The DuckDB connection of one checkout, for reads (db.store.engine: one connection per checkout)."""
    with engine.connect() as conn:
        yield conn.connection.driver_connection


def read_frame(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    with reader(engine) as duck:
        return duck.sql(sql, params=list(params)).df()


def read_arrow(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pa.Table:
    """A read as an Arrow table: list columns (samples) stay lists, not Python objects."""
    with reader(engine) as duck:
        return duck.sql(sql, params=list(params)).to_arrow_table()


def read_data_version(engine: Engine) -> str:
    """The store's data version (changes with every ingest), read like every other query here."""
    found = read_frame(engine, "SELECT value FROM meta WHERE key = 'data_version'")
    return str(found["value"].iloc[0]) if len(found) else ""
