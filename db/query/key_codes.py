"""Labels coded as integers, to sort, group and join rows by several columns in numpy without a multi-key sort.

`ranks` codes one column's values by their byte order; `combine` makes one int64 code per row of several coded
columns: rows with equal codes agree on every column, and the codes sort as the columns do, lexicographically
(first column first). `groups` groups rows by code; `find_rows` looks rows up by their columns (a left join)."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LIMIT = 1 << 62  # combined codes stay below this (int64)


def combine(columns: Iterable[tuple[np.ndarray, int]], rows: int) -> np.ndarray:
    """`columns`: (codes, how many distinct codes) per column, in sort order."""
    code, span = np.zeros(rows, dtype=np.int64), 1
    for values, size in columns:
        size = max(int(size), 1)
        if span * size >= _LIMIT:  # renumber what is combined so far, keeping its order
            code = np.unique(code, return_inverse=True)[1].ravel().astype(np.int64)
            span = int(code.max()) + 1 if rows else 1
        code, span = code * size + values, span * size
    return code


def groups(code: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by their code (0 ≤ code < span): one member row of each distinct code (codes ascending; any
    of its rows) and each row's group number. Without a sort where the span is at most the rows (a lookup array
    of that size); np.unique otherwise (a larger array's fresh pages cost more than the sort: seen here at 10–40 ms
    for 10⁶ entries)."""
    if span > max(len(code), 1024):
        _, member, inverse = np.unique(code, return_index=True, return_inverse=True)
        return member, inverse.ravel()
    present = np.zeros(span, dtype=bool)
    present[code] = True
    distinct = np.flatnonzero(present)
    number = np.empty(span, dtype=np.int64)
    number[distinct] = np.arange(len(distinct))
    inverse = number[code]
    member = np.empty(len(distinct), dtype=np.int64)
    member[inverse] = np.arange(len(code))  # a repeated group keeps one of its rows: any will do
    return member, inverse


def ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Each value's rank among the column's distinct values (byte order), and how many there are."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    order = pc.array_sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[encoded.indices.to_numpy()], len(order)


def find_rows(rows: Sequence[pa.ChunkedArray | pa.Array], table: Sequence[pa.ChunkedArray | pa.Array]) -> np.ndarray:
    """For each row of `rows` (columns), the row of `table` (the same columns, in order) equal to it on every
    column, -1 where none: a left join on a small table, in Arrow and numpy. Nulls equal nothing, as in SQL. A
    row appearing twice in `table` is a RuntimeError (the join would repeat rows)."""
    mine, theirs = [], []
    for column, other in zip(rows, table):
        values = pc.drop_null(pc.unique(other))
        size = len(values) + 1  # one code more: the value `table` lacks (and null)
        mine.append((pc.fill_null(pc.index_in(column, value_set=values), size - 1).to_numpy(), size))
        theirs.append((pc.fill_null(pc.index_in(other, value_set=values), size - 1).to_numpy(), size))
    n = len(rows[0]) if rows else 0
    code, known = combine(mine, n), combine(theirs, len(table[0]) if table else 0)
    complete = np.ones(len(known), dtype=bool)
    for found, size in theirs:
        complete &= found < size - 1
    order = np.flatnonzero(complete)
    order = order[np.argsort(known[order], kind="stable")]
    ordered = known[order]
    if (ordered[1:] == ordered[:-1]).any():
        raise RuntimeError("find_rows: a row appears twice in the table looked up")
    if not len(order):
        return np.full(n, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(ordered, code), len(order) - 1)
    return np.where(ordered[at] == code, order[at], -1)
