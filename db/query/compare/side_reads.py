"""A Compare of two builds read from the side summaries (db.store.derived.side_cases, one kind per scope): each side one
row per case from its build's groups, paired here in key order — row for row when both sides hold the same cases
(the usual review), else by case key — with no grouping of samples at all. The
pivot (db.query.compare.pivot) answers every other question: pooled builds, tag and run selectors, a build whose
summaries lag its runs."""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.query.compare.pivot import KEY, SCOPES, SIDES, filter_sql
from db.query.key_codes import combine, ranks
from db.query.read import reader
from db.query.selectors import Selector
from db.stats.contention import COLUMNS as CONTENTION_COLUMNS

COUNTS = ["pooled", "machines", "results", "n"]  # 0 on a side without the case, as the pivot counts
FIGURES = ["runs", "inv_processes", "processes", "ss_within", "df_within", "ss_between", "valid", "mean"]
CONTENTION = list(CONTENTION_COLUMNS)  # each side's contention, as db.store.derived.side_cases keeps it
COLUMNS = (
    COUNTS
    + ["passed", "tolerance", "rounding", "other", "message", "fallback_median", "warnings", "median", "p25", "p75"]
    + FIGURES
    + CONTENTION
)
_SIDE = "SELECT group_seq, {keys}, {columns} FROM side_cases r WHERE kind = ? AND {build}{filters}"
# a group of the build whose summaries lag its runs (db.store.derived.side_cases.mark_runs): that side is read from the pivot
_MARKED = "SELECT 1 FROM side_stale WHERE {build} LIMIT 1"


def readable(selector: Selector, scope: str, pool: bool) -> bool:
    """Whether the summaries can answer this side: one build (a pooled side needs every sample), in a scope they
    are kept for (db.query.compare.pivot.SCOPES)."""
    return selector.kind == "build" and scope in SCOPES and not pool


def read_sides(
    engine: Engine,
    baseline: Selector,
    candidate: Selector,
    scope: str,
    filters: dict[str, list[str]],
    pool: Executor | None = None,
) -> pa.Table | None:
    """KEY, then per side (b_, c_) COLUMNS, one row per case key on either side, in key order; None when a side
    holds more than one group per case (several builds of one version: the caller's checks refuse or pool it), or
    a group of either build lags its runs (stored since db.store.writers.upkeep last caught up): the pivot answers then.
    With a pool the candidate is read on a worker beside the baseline. Each side is as one commit left it (a
    group's rows change in one transaction of db.store.writers.upkeep); the two reads may see different
    commits, as the Compare's other reads (builds, A/A figures) may: no figure combines the two sides' rows."""
    where, params = filter_sql(filters)

    def read(selector: Selector) -> pa.Table | None:
        build, build_params = selector.build_where()
        sql = _SIDE.format(keys=", ".join(KEY), columns=", ".join(COLUMNS), build=build, filters=where)
        with reader(engine) as duck:
            if duck.execute(_MARKED.format(build=build), build_params).fetchone():
                return None
            return duck.sql(sql, params=[scope] + build_params + params).to_arrow_table()

    other = pool.submit(read, candidate) if pool else None
    base = read(baseline)
    cand = other.result() if other else read(candidate)
    return None if base is None or cand is None else pair_sides(base, cand)


def pair_sides(b: pa.Table, c: pa.Table) -> pa.Table | None:
    """The two sides' rows (group_seq, KEY, COLUMNS) paired by case key (a null side where it lacks the case), in
    key order."""
    b, c = _grouped_in_order(b), _grouped_in_order(c)
    aligned = _aligned(b, c)
    return aligned if aligned is not None else _matched(b, c)


def _grouped_in_order(side: pa.Table) -> pa.Table:
    """The side with its groups' row blocks in (scope, device) order. A group is one machine and device, so if
    each block is in key order (db.store.derived.side_cases writes a group's rows so) the side is; _aligned checks it."""
    seq = side["group_seq"].to_numpy()
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]]) if len(seq) else np.array([], dtype=np.int64)
    firsts = pa.array(starts)
    labels = list(zip(side["scope"].take(firsts).to_pylist(), side["device"].take(firsts).to_pylist()))
    order = sorted(range(len(starts)), key=labels.__getitem__)  # str order is UTF-8 byte order, as ranks sort
    if order == list(range(len(starts))):
        return side
    ends = np.append(starts[1:], len(seq))
    return side.take(pa.array(np.concatenate([np.arange(starts[i], ends[i]) for i in order])))


def _aligned(b: pa.Table, c: pa.Table) -> pa.Table | None:
    """Both sides side by side when they hold the same cases in the same row order and that order is key order
    (two builds run on the same machines with the same suite: the usual review); None otherwise."""
    if not b.select(KEY).equals(c.select(KEY)) or not _increasing(b):  # out of key order, or a case twice
        return None
    out = b.select(KEY)
    for (_, p), side in zip(SIDES, (b, c)):
        for name in COLUMNS:
            out = out.append_column(p + name, side[name])
    return out


def _increasing(side: pa.Table) -> bool:
    """Whether each row's key sorts strictly after the row before's (byte order, column by column, as ranks)."""
    n = side.num_rows
    after, tied = np.zeros(max(n - 1, 0), dtype=bool), np.ones(max(n - 1, 0), dtype=bool)
    for name in KEY:
        this, before = side[name].slice(1), side[name].slice(0, max(n - 1, 0))
        after |= tied & pc.fill_null(pc.greater(this, before), False).to_numpy(zero_copy_only=False)
        tied &= pc.fill_null(pc.equal(this, before), False).to_numpy(zero_copy_only=False)
    return bool(after.all())


def _matched(b: pa.Table, c: pa.Table) -> pa.Table | None:
    """pair_sides in general: the sides' keys ranked together and matched; None when a side holds a case twice
    (more than one build)."""
    keys = pa.concat_tables([b.select(KEY), c.select(KEY)])
    code = combine((ranks(keys[name]) for name in KEY), keys.num_rows)  # sorts as the key columns do
    _, first, where = np.unique(code, return_index=True, return_inverse=True)
    where = where.ravel()
    out = keys.take(pa.array(first))
    for (_, p), side, rows in ((SIDES[0], b, where[: b.num_rows]), (SIDES[1], c, where[b.num_rows :])):
        if len(rows) and np.bincount(rows).max() > 1:
            return None  # a case twice on one side: more than one build
        at = np.full(len(first), -1, dtype=np.int64)
        at[rows] = np.arange(len(rows))
        index = pa.array(at, mask=at < 0)
        for name in COLUMNS:
            column = side[name].take(index)
            out = out.append_column(p + name, pc.fill_null(column, 0) if name in COUNTS else column)
    return out
