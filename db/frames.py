"""Run read-only SQL on the store's DuckDB connection and get pandas / Arrow back (DuckDB's own fast paths)."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import pyarrow as pa
from sqlalchemy import Engine


def read_frame(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    with engine.connect() as conn:
        return conn.connection.driver_connection.execute(sql, list(params)).df()


def read_arrow(engine: Engine, sql: str, params: Sequence[Any] = ()) -> pa.Table:
    with engine.connect() as conn:
        return conn.connection.driver_connection.sql(sql, params=list(params)).to_arrow_table()
