"""The Compare pivot (db.query.compare.pivot) read from one snapshot as one Arrow table, in case-key order, with
its detail (the non-ok results) and short warnings attached.

The pivot comes back unordered and is put in key order here: DuckDB's ORDER BY carries every case's sample
lists through its sort, while ranking each key column's distinct values and sorting one integer code per case
moves none (10⁷-row store, 49,500 cases: ~45 ms in DuckDB against ~15 ms here). The order is the same: byte
order of each key column in turn, as DuckDB's default collation sorts. The detail (cases with a non-ok result)
is ordered the same way, so its rows line up, in order, with the pivot rows whose results outnumber their ok
results.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.query.compare.pivot import DETAIL, KEY, SIDES, WARNINGS, PairSQL
from db.query.key_codes import combine, find_rows, ranks
from db.query.read import reader


def read_pairs(engine: Engine, sql: PairSQL, pool: Executor | None = None) -> pa.Table:
    """The pivot with the detail and warning columns attached, one row per case key, in key order. With a pool,
    the detail and the warnings are read on workers while this thread orders the pivot."""
    with reader(engine) as duck:
        duck.begin()  # one snapshot: an ingest committing between the reads cannot split them
        try:
            return read_pairs_on(duck, sql, pool)
        finally:
            duck.rollback()  # read only


def read_pairs_on(duck, sql: PairSQL, pool: Executor | None = None) -> pa.Table:
    """read_pairs on a DuckDB connection already in its transaction (an ingest's, which sees its own rows)."""
    params = list(sql.params)
    pivot = duck.sql(sql.pivot, params=params).to_arrow_table()
    # the detail and the warnings on one worker, one after the other: one connection, one snapshot
    read = lambda: [duck.sql(q, params=params).to_arrow_table() for q in (sql.detail, sql.warned)]  # noqa: E731
    pending = pool.submit(read) if pool else None
    try:
        pivot = runs_in_order(pivot.take(key_order(pivot)))
    finally:  # the worker is done with the connection before the caller ends the transaction
        detail, warned = pending.result() if pending else read()
    return attach_warnings(attach_detail(pivot, detail.take(key_order(detail))), warned)


_PER_RUN = ("samples", "processes", "contention")  # a case's lists with one entry per run


def runs_in_order(pivot: pa.Table) -> pa.Table:
    """Each case's runs (its samples, processes and contention lists) in run order, the seqs columns dropped. DuckDB's list()
    keeps the order its threads met the rows in, which varies from one read to the next; the tests on the runs add
    them up in list order, so two reads (two replicas, or one after a cache clear) gave answers differing in the
    last bits. Ordering inside DuckDB (list(… ORDER BY …)) doubled the read; here the runs are sorted within
    their cases (one stable sort of mostly sorted integers) and the child lists gathered once, only where some
    case's runs came out of order. Runs repeating a case (one run_seq twice) are ordered by their first sample."""
    for _, p in SIDES:
        seqs, samples = (pivot[p + n].combine_chunks() for n in ("seqs", "samples"))
        per_run = {name: pivot[p + name].combine_chunks() for name in _PER_RUN}
        pivot = pivot.drop_columns([p + "seqs"])
        runs = np.where(seqs.is_valid().to_numpy(zero_copy_only=False), np.diff(seqs.offsets.to_numpy()), 0)
        case = np.repeat(np.arange(len(runs)), runs)
        within = np.arange(len(case)) - np.repeat(np.cumsum(runs) - runs, runs)  # a run's place in its case
        at = {
            name: np.repeat(lists.offsets.to_numpy()[:-1], runs) + within
            for name, lists in (("seqs", seqs), *per_run.items())
        }
        seq = seqs.values.to_numpy(zero_copy_only=False).astype(np.int64)[at["seqs"]]
        gather = _run_order(case, seq, lambda: _first_values(samples.values, at["samples"]))  # noqa: B023 - called here
        if gather is None:
            continue
        offsets = pa.array(np.concatenate([[0], np.cumsum(runs)]), samples.offsets.type)
        for name, lists in per_run.items():
            index = pivot.schema.get_field_index(p + name)
            pivot = pivot.set_column(index, p + name, _listed(lists, offsets, at[name][gather]))
    return pivot


def _run_order(case: np.ndarray, seq: np.ndarray, first) -> np.ndarray | None:
    """The order putting runs (grouped by case, in case order) in (case, seq, first()) order; None when they are."""
    same_case = case[1:] == case[:-1]
    if not (same_case & (seq[1:] <= seq[:-1])).any():
        return None  # in order already, no run repeated
    low, span = (int(seq.min()), int(seq.max()) - int(seq.min()) + 1) if len(seq) else (0, 1)
    if len(case) and int(case[-1]) < (1 << 62) // span:
        key = case * span + (seq - low)
        order = np.argsort(key, kind="stable")  # mostly sorted already: a fast stable sort
        ordered = key[order]
        if not (ordered[1:] == ordered[:-1]).any():
            return order
    return np.lexsort((first(), seq, case))  # a run repeating a case: its first sample decides


def _first_values(lists: pa.Array, rows: np.ndarray) -> np.ndarray:
    """The first value of lists[rows] (0 for an empty or null one)."""
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False).astype(float)
    start, length = offsets[rows], np.diff(offsets)[rows]
    if not len(values):
        return np.zeros(len(rows))
    return np.where(length > 0, values[np.minimum(start, len(values) - 1)], 0.0)


def _listed(lists: pa.Array, offsets: pa.Array, rows: np.ndarray) -> pa.Array:
    """New outer lists (`offsets`) over the child lists lists.values[rows]."""
    kind = pa.LargeListArray if pa.types.is_large_list(lists.type) else pa.ListArray
    return kind.from_arrays(offsets, lists.values.take(pa.array(rows)))


def key_order(table: pa.Table, columns: Sequence[str] = KEY) -> np.ndarray:
    """The stable permutation sorting `table` by `columns` (non-null strings), lexicographically."""
    return np.argsort(combine((ranks(table[name]) for name in columns), table.num_rows), kind="stable")


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


def attach_warnings(pivot: pa.Table, warned: pa.Table) -> pa.Table:
    """The pivot with WARNINGS columns: a case's short warnings per side, null where it has none."""
    if warned.num_rows == 0:
        return pivot.append_column("b_warnings", pa.nulls(pivot.num_rows, pa.string())).append_column(
            "c_warnings", pa.nulls(pivot.num_rows, pa.string())
        )
    where = find_rows([pivot[name] for name in KEY], [warned[name] for name in KEY])
    index = pa.array(where, mask=where < 0)
    for name in WARNINGS:
        pivot = pivot.append_column(name, warned[name].take(index))
    return pivot
