"""The Compare query: both sides selected by their selectors, grouped and paired inside DuckDB
(db.store.case_pivot), one row per case key, read from one snapshot as one Arrow table in case-key order.

A case key is (scope, device, workload, case_key, dtype, compile, metric); scope is the machine name, or the
chip and its GPU core count when the user chose chip scope (then machines of one chip pool, explicitly). Only
status "ok" samples feed a side's figures; repeats (several runs of one side on one scope) pool their samples.
"""

from __future__ import annotations

from db.query.selectors import Selector
from db.store.case_pivot import (
    DETAIL,
    KEY,
    SIDES,
    WARNINGS,
    PairSQL,
    attach_detail,
    attach_warnings,
    key_order,
    pivot_sql,
    read_pairs,
    runs_in_order,
    scope_sql,
)

__all__ = [
    "DETAIL",
    "FILTERS",
    "KEY",
    "SIDES",
    "WARNINGS",
    "PairSQL",
    "attach_detail",
    "attach_warnings",
    "compare_sql",
    "filter_sql",
    "key_order",
    "pivot_sql",
    "read_pairs",
    "runs_in_order",
    "scope_sql",
]

FILTERS = ("workload", "dtype", "compile", "metric")


def filter_sql(values: dict[str, list[str]]) -> tuple[str, list[str]]:
    """ " AND r.<name> IN (?, …)" for each chosen FILTERS value list, and the parameters."""
    sql, params = "", []
    for name in FILTERS:
        chosen = values.get(name) or []
        if chosen:
            sql += f" AND r.{name} IN ({', '.join('?' * len(chosen))})"
            params += chosen
    return sql, params


def compare_sql(baseline: Selector, candidate: Selector, scope: str, filters: dict[str, list[str]]) -> PairSQL:
    """The pivot, detail and warned SQL of baseline → candidate (db.store.case_pivot.pivot_sql)."""
    where, params = filter_sql(filters)
    return pivot_sql([baseline.run_ids_sql(), candidate.run_ids_sql()], scope, scope_sql(scope), where, params)
