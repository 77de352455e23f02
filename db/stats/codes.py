"""One int64 code per row for a combination of columns, each already coded as small non-negative integers:
rows with equal codes agree on every column, and the codes sort as the columns do, lexicographically (first
column first). Used to sort and group by several columns without a multi-key sort."""

from __future__ import annotations

from typing import Iterable

import numpy as np

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
