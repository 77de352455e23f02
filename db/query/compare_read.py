"""The Compare query's two reads (db.query.compare_sql) from one snapshot, as one Arrow table in case-key order.

The pivot comes back unordered and is put in key order here: DuckDB's ORDER BY carries every case's sample
lists through its sort, while ranking each key column's distinct values and sorting one integer code per case
moves none (10⁷-row store, 49,500 cases: ~45 ms in DuckDB against ~15 ms here). The order is the same: byte
order of each key column in turn, as DuckDB's default collation sorts.
The detail (cases with a non-ok result) is ordered the same way, so its rows line up, in order, with the
pivot rows whose results outnumber their ok results: it is attached by position.
"""
from __future__ import annotations

from concurrent.futures import Executor
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.stats import codes
from db.query.compare_sql import KEY, SIDES
from db.store.read import reader

DETAIL = ["b_other", "b_message", "b_fallback_median", "c_other", "c_message", "c_fallback_median"]


def read_pairs(engine: Engine, pivot_sql: str, detail_sql: str, params: Sequence[str],
               pool: Executor | None = None) -> pa.Table:
    """The pivot with the detail columns attached, one row per case key, in key order. With a pool, the
    detail is read on a worker while this thread orders the pivot."""
    with reader(engine) as duck:
        duck.begin()  # one snapshot: an ingest committing between the two reads cannot split them
        try:
            pivot = duck.sql(pivot_sql, params=list(params)).to_arrow_table()
            read = lambda: duck.sql(detail_sql, params=list(params)).to_arrow_table()  # noqa: E731
            pending = pool.submit(read) if pool else None
            try:
                pivot = pivot.take(key_order(pivot))
            finally:  # the worker is done with the connection before it is rolled back
                detail = pending.result() if pending else read()
        finally:
            duck.rollback()  # read only
    return attach_detail(pivot, detail.take(key_order(detail)))


def key_order(table: pa.Table, columns: Sequence[str] = KEY) -> np.ndarray:
    """The stable permutation sorting `table` by `columns` (non-null strings), lexicographically."""
    return np.argsort(codes.combine((_ranks(table[name]) for name in columns), table.num_rows), kind="stable")


def _ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Each value's rank among the column's distinct values (byte order), and how many there are."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[encoded.indices.to_numpy()], len(order)


def attach_detail(pivot: pa.Table, detail: pa.Table) -> pa.Table:
    """The pivot with DETAIL columns: a case's detail where it has a non-ok result, else null."""
    has = np.zeros(pivot.num_rows, dtype=bool)
    for _, p in SIDES:
        has |= pc.greater(pivot[p + "results"], pivot[p + "pooled"]).to_numpy()
    rows = np.flatnonzero(has)
    if len(rows) != detail.num_rows or not pivot.select(KEY).take(rows).equals(detail.select(KEY)):
        raise RuntimeError("compare: the detail read does not line up with the pivot (not one snapshot?)")
    where = np.full(pivot.num_rows, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    index = pa.array(where, mask=where < 0)  # a null index takes a null
    for name in DETAIL:
        pivot = pivot.append_column(name, detail[name].take(index))
    return pivot
