"""A machine-scope Compare of two builds read from the side summaries (db.store.side_cases): each side one row
per case from its build's groups, paired here by case key, in key order — no grouping of samples at all. The
pivot (db.query.case_pairs) answers every other question: chip scope, pooled builds, tag and run selectors."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from db.query.case_pairs import KEY, SIDES, filter_sql
from db.query.selectors import Selector
from db.stats.codes import combine
from db.store.case_pivot import ranks
from db.store.read import reader

COUNTS = ["pooled", "machines", "results", "n"]  # 0 on a side without the case, as the pivot counts
FIGURES = ["runs", "inv_processes", "processes", "ss_within", "df_within", "ss_between", "valid", "mean"]
COLUMNS = COUNTS + ["passed", "other", "message", "fallback_median", "warnings", "median", "p25", "p75"] + FIGURES
_SIDE = "SELECT {keys}, {columns} FROM side_cases r WHERE {build}{filters}"


def readable(selector: Selector, scope: str, pool: bool) -> bool:
    """Whether the summaries can answer this side: one build (a pooled side needs every sample), machine scope."""
    return selector.kind == "build" and scope == "machine" and not pool


def _build_sql(selector: Selector) -> tuple[str, list[str]]:
    """The selector's builds as a condition on side_cases (its runs' condition: db.query.selectors)."""
    if selector.value:
        return "torch_version = ? AND starts_with(git_hash, ?)", [selector.key, selector.value]
    return "torch_version = ?", [selector.key]


def read_sides(engine: Engine, baseline: Selector, candidate: Selector,
               filters: dict[str, list[str]]) -> pa.Table | None:
    """KEY, then per side (b_, c_) COLUMNS, one row per case key on either side, in key order; None when a side
    holds more than one group per case (several builds of one version: the caller's checks refuse or pool it)."""
    where, params = filter_sql(filters)
    sides = []
    with reader(engine) as duck:
        duck.begin()  # both sides from one snapshot
        try:
            for selector in (baseline, candidate):
                build, build_params = _build_sql(selector)
                sql = _SIDE.format(keys=", ".join(KEY), columns=", ".join(COLUMNS), build=build, filters=where)
                sides.append(duck.sql(sql, params=build_params + params).to_arrow_table())
        finally:
            duck.rollback()
    return pair_sides(*sides)


def pair_sides(b: pa.Table, c: pa.Table) -> pa.Table | None:
    """The two sides' rows paired by case key (a null side where it lacks the case), in key order."""
    keys = pa.concat_tables([b.select(KEY), c.select(KEY)])
    code = combine((ranks(keys[name]) for name in KEY), keys.num_rows)  # sorts as the key columns do
    _, first, where = np.unique(code, return_index=True, return_inverse=True)
    where = where.ravel()
    out = keys.take(pa.array(first))
    for (_, p), side, rows in ((SIDES[0], b, where[:b.num_rows]), (SIDES[1], c, where[b.num_rows:])):
        if len(rows) and np.bincount(rows).max() > 1:
            return None  # a case twice on one side: more than one build
        at = np.full(len(first), -1, dtype=np.int64)
        at[rows] = np.arange(len(rows))
        index = pa.array(at, mask=at < 0)
        for name in COLUMNS:
            column = side[name].take(index)
            out = out.append_column(p + name, pc.fill_null(column, 0) if name in COUNTS else column)
    return out
