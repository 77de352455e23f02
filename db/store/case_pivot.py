"""The Compare pivot: both sides' results grouped and paired inside DuckDB, one row per case key, read from one
snapshot as one Arrow table in case-key order. Its sides are given as SQL selecting run ids (db.query.case_pairs
turns selectors into them; db.store.side_cases refreshes its per-group summaries through the same pivot, so a
summary and a Compare read agree to the last bit).

A case key is (scope, device, workload, case_key, dtype, compile, metric); scope is the machine name, or the
chip and its GPU core count when the user chose chip scope (then machines of one chip pool, explicitly). Only
status "ok" samples feed a side's figures; repeats (several runs of one side on one scope) pool their samples.
The pairing is a pivot (one GROUP BY over both sides, each side's aggregates FILTERed by side) rather than a
join of two grouped sides: one hash table instead of three. The few non-ok results are grouped by a second
statement (`detail`), read in the same snapshot and attached by position: joining them to the pivot inside
DuckDB, and sorting the pivot there with its sample lists as payload, cost more than the grouping itself.
Medians, quantiles and significance are computed afterwards from the pooled samples, in numpy (db.stats).

The pivot comes back unordered and is put in key order here: DuckDB's ORDER BY carries every case's sample
lists through its sort, while ranking each key column's distinct values and sorting one integer code per case
moves none (10⁷-row store, 49,500 cases: ~45 ms in DuckDB against ~15 ms here). The order is the same: byte
order of each key column in turn, as DuckDB's default collation sorts. The detail (cases with a non-ok result)
is ordered the same way, so its rows line up, in order, with the pivot rows whose results outnumber their ok
results.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.stats import codes
from db.stats.lists import QUARTILES, list_quantile_sql, quantile_sql
from db.store.read import reader

KEY = ["scope", "device", "workload", "case_key", "dtype", "compile", "metric"]

_RUNS = "SELECT '{side}' AS side, run_id FROM ({runs})"

# Joined on run_seq (db.store.tables), not run_id: a run's results are contiguous and numbered in ingest order, so
# DuckDB's join filter on run_seq skips the row groups holding none of the selected runs (10⁷ rows, two builds
# of 100 runs each, consecutive: 2 of 82 row groups read). Where runs of many builds interleave nothing is
# skipped, yet the filter still applies in the scan: measured no slower than the earlier run_id join with a
# rowid semi-join (which re-fetched the joined rows by rowid to avoid decoding every row's samples).
_SIDES = """
  SELECT s.side, {scope} AS scope, ru.device_type AS device, ru.machine_name, r.run_id, r.run_seq, r.workload, r.case_key,
         r.dtype, r.compile, r.metric, r.status, r.samples, r.processes, r.contention, r.passed, r.tolerance,
         r.rounding, r.message, r.warnings_json
  FROM side_runs s JOIN runs ru ON ru.run_id = s.run_id
    JOIN results r ON r.run_seq = ru.run_seq
  WHERE true{filters}"""

# per side; {s} is the side name, {p} its column prefix. Only cheap aggregates over every row: a run id
# count(DISTINCT …) alone would cost more than all the others, so `pooled` counts ok results (one per run
# unless a run repeated a case)
_SIDE_OK = """
  list(samples) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}samples,
  list(processes) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}processes,
  list(contention) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}contention,
  list(run_seq) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}seqs,
  count(*) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}pooled,
  {machines} AS {p}machines,
  bool_and(passed) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}passed,
  max(tolerance) FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}tolerance,
  {median_rounding} FILTER (WHERE side = '{s}' AND status = 'ok') AS {p}rounding,
  count(*) FILTER (WHERE side = '{s}') AS {p}results"""

# machine scope: one machine per scope by construction, so the distinct count is not computed
_MACHINES = {
    "machine": "least(1, count(*) FILTER (WHERE side = '{s}' AND status = 'ok'))",
    "chip": "count(DISTINCT machine_name) FILTER (WHERE side = '{s}' AND status = 'ok')",
}

# the non-ok results (few): which statuses, a message, a fallback's median (shown flagged, never compared)
_SIDE_OTHER = """
  string_agg(DISTINCT status, ',' ORDER BY status) FILTER (WHERE side = '{s}') AS {p}other,
  any_value(message) FILTER (WHERE side = '{s}') AS {p}message,
  {median_of_medians} FILTER (WHERE side = '{s}' AND status = 'fallback') AS {p}fallback_median"""

_MEDIAN_ROUNDING = quantile_sql("rounding", QUARTILES["median"])
_FALLBACK_MEDIAN = quantile_sql(list_quantile_sql("samples", QUARTILES["median"]), QUARTILES["median"])

SIDES = (("baseline", "b_"), ("candidate", "c_"))  # each side and the prefix of its columns

# a result's warnings in short: "CPU contention", "noisy op_time" (the words before a colon, when they are words),
# else the first 60 characters; distinct per case and side, "; "-joined (the caveats carry them)
_SHORT = (
    "CASE WHEN contains(split_part(w, ':', 1), ' ') AND length(split_part(w, ':', 1)) <= 40 "
    "THEN split_part(w, ':', 1) ELSE left(w, 60) END"
)
_WARNED = """
  string_agg(DISTINCT short, '; ' ORDER BY short) FILTER (WHERE side = '{s}') AS {p}warnings"""

# a chip with its GPU core count: a 30-core and a 40-core M3 Max differ (300 vs 400 GB/s), so they never pool
CHIP_SCOPE = (
    "coalesce(ru.chip || coalesce(' (' || ru.gpu_cores || '-core GPU)', ''), 'unknown chip: ' || ru.machine_name)"
)


def scope_sql(scope: str) -> str:
    """The SQL expression of a result's scope: its machine name, or its chip with the GPU core count."""
    return CHIP_SCOPE if scope == "chip" else "ru.machine_name"


class PairSQL(NamedTuple):
    pivot: str
    detail: str
    warned: str
    params: list[str]


def pivot_sql(
    sides: Sequence[tuple[str, list]],
    scope: str,
    scope_expr: str,
    filter_sql: str = "",
    filter_params: Sequence[str] = (),
) -> PairSQL:
    """The pivot's SQL, the detail's SQL, the warned SQL and their (shared) parameters; none is ordered.

    sides: (SQL selecting run_ids, its parameters) for the baseline, then the candidate. scope: "machine" or
    "chip" (how machines are counted); scope_expr: the SQL of a result's scope (scope_sql, or a label of its own);
    filter_sql: " AND r.<column> IN (?, …)" conditions on the results, with filter_params.
    pivot: key columns, then per side (b_, c_) samples (each ok result's samples, one list per run), processes
    (each such result's samples per worker process, [] for one process), contention (each such result's
    shares per worker process, [] where not measured: bundle.contention), pooled (ok results
    pooled), machines, passed, tolerance (the largest stated), rounding (the median rounding level of a
    correctness figure: collector.timing.correctness), results (rows of any status on that side).
    detail: key columns of the cases with a non-ok result, then per side other (its non-ok statuses, or
    null), message (of a non-ok result), fallback_median.
    warned: key columns of the cases whose ok results carry warnings, then per side warnings (short, distinct).
    """
    params: list = []
    runs = []
    for (side, _), (runs_sql, runs_params) in zip(SIDES, sides):
        runs.append(_RUNS.format(side=side, runs=runs_sql))
        params += runs_params
    params += list(filter_params)
    keys = ", ".join(KEY)
    ok = ",".join(
        _SIDE_OK.format(s=s, p=p, machines=_MACHINES[scope].format(s=s), median_rounding=_MEDIAN_ROUNDING)
        for s, p in SIDES
    )
    other = ",".join(_SIDE_OTHER.format(s=s, p=p, median_of_medians=_FALLBACK_MEDIAN) for s, p in SIDES)
    sides_sql = _SIDES.format(scope=scope_expr, filters=filter_sql)
    with_sides = f"WITH side_runs AS ({' UNION ALL '.join(runs)}), sides AS ({sides_sql})"
    pivot = f"{with_sides} SELECT {keys}, {ok} FROM sides GROUP BY {keys}"
    detail = f"{with_sides} SELECT {keys}, {other} FROM sides WHERE status <> 'ok' GROUP BY {keys}"
    warned_cols = ",".join(_WARNED.format(s=s, p=p) for s, p in SIDES)
    warned = (
        f"{with_sides}, said AS (SELECT *, {_SHORT} AS short FROM (SELECT {keys}, side, "
        f"unnest(from_json(warnings_json, '[\"VARCHAR\"]')) AS w FROM sides "
        f"WHERE status = 'ok' AND warnings_json <> '[]')) SELECT {keys}, {warned_cols} FROM said GROUP BY {keys}"
    )
    return PairSQL(pivot, detail, warned, params)


NO_RUNS = ("SELECT NULL::VARCHAR AS run_id WHERE false", [])  # a side selecting nothing

DETAIL = ["b_other", "b_message", "b_fallback_median", "c_other", "c_message", "c_fallback_median"]


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
    return np.argsort(codes.combine((ranks(table[name]) for name in columns), table.num_rows), kind="stable")


def ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
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


WARNINGS = ["b_warnings", "c_warnings"]


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
    code, known = codes.combine(mine, n), codes.combine(theirs, len(table[0]) if table else 0)
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
