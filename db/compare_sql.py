"""The Compare query's SQL: both sides aggregated and paired inside DuckDB, one row per case key.

A case key is (scope, device, workload, case_key, dtype, compile, metric); scope is the machine name, or the
chip when the user chose chip scope (then machines of one chip pool, explicitly). Only status "ok" samples
feed a side's figures; repeats (several runs of one side on one scope) pool their samples.
"""
from __future__ import annotations

from db.selectors import Selector

KEY = ["scope", "device", "workload", "case_key", "dtype", "compile", "metric"]
FILTERS = ("workload", "dtype", "compile", "metric")

_RUNS = "SELECT '{side}' AS side, run_id FROM ({runs})"

_SIDES = """
  SELECT s.side, {scope} AS scope, ru.device_type AS device, r.workload, r.case_key, r.dtype, r.compile,
         r.metric, r.suite, r.params_json, r.unit, r.status, r.samples, r.passed, r.message, r.run_id, ru.machine_name
  FROM results r JOIN side_runs s ON s.run_id = r.run_id JOIN runs ru ON ru.run_id = r.run_id
  WHERE r.run_id IN (SELECT run_id FROM side_runs){filters}"""

_AGG = """
  SELECT side, scope, device, workload, case_key, dtype, compile, metric,
         any_value(suite) AS suite, any_value(params_json) AS params_json, any_value(unit) AS unit,
         flatten(list(samples) FILTER (WHERE status = 'ok')) AS samples,
         count(DISTINCT run_id) FILTER (WHERE status = 'ok') AS runs,
         count(DISTINCT machine_name) FILTER (WHERE status = 'ok') AS machines,
         string_agg(DISTINCT status, ',' ORDER BY status) AS statuses,
         bool_and(passed) FILTER (WHERE status = 'ok') AS passed,
         median(list_median(samples)) FILTER (WHERE status = 'fallback') AS fallback_median,
         any_value(message) FILTER (WHERE status <> 'ok') AS message
  FROM sides GROUP BY side, scope, device, workload, case_key, dtype, compile, metric"""

_STATS = """
  SELECT *, len(samples) AS n, list_median(samples) AS median,
         list_aggregate(samples, 'quantile_cont', 0.25) AS p25, list_aggregate(samples, 'quantile_cont', 0.75) AS p75
  FROM agg WHERE side = '{side}'"""

_PAIR_COLS = ["suite", "params_json", "unit", "samples", "runs", "machines", "statuses", "passed", "fallback_median",
              "message", "n", "median", "p25", "p75"]


def _filters(values: dict[str, list[str]]) -> tuple[str, list[str]]:
    sql, params = "", []
    for name in FILTERS:
        chosen = values.get(name) or []
        if chosen:
            sql += f" AND r.{name} IN ({', '.join('?' * len(chosen))})"
            params += chosen
    return sql, params


def compare_sql(baseline: Selector, candidate: Selector, scope: str,
                filters: dict[str, list[str]]) -> tuple[str, list[str]]:
    """SQL and parameters of the paired table: key columns, then b_* and c_* columns for each side."""
    scope_col = "coalesce(ru.chip, 'unknown chip: ' || ru.machine_name)" if scope == "chip" else "ru.machine_name"
    filter_sql, filter_params = _filters(filters)
    params: list[str] = []
    runs = []
    for side, sel in (("baseline", baseline), ("candidate", candidate)):
        runs_sql, runs_params = sel.run_ids_sql()
        runs.append(_RUNS.format(side=side, runs=runs_sql))
        params += runs_params
    params += filter_params
    sides = _SIDES.format(scope=scope_col, filters=filter_sql)
    cols = ", ".join(f"b.{c} AS b_{c}, c.{c} AS c_{c}" for c in _PAIR_COLS)
    sql = (f"WITH side_runs AS ({' UNION ALL '.join(runs)}), sides AS ({sides}), agg AS ({_AGG}),"
           f" b AS ({_STATS.format(side='baseline')}), c AS ({_STATS.format(side='candidate')})"
           f" SELECT {', '.join(KEY)}, {cols} FROM b FULL OUTER JOIN c USING ({', '.join(KEY)})"
           f" ORDER BY {', '.join(KEY)}")
    return sql, params
