"""The Compare pivot's SQL: both sides' results grouped and paired inside DuckDB, one row per case key. Its sides
are given as SQL selecting run ids (compare_sql turns selectors into them; db.store.derived.side_cases refreshes its
per-group summaries through the same pivot, so a summary and a Compare read agree to the last bit);
db.query.compare.pairs reads it from one snapshot as one Arrow table in case-key order.

A case key is (scope, device, workload, case_key, dtype, compile, metric); scope is the machine name, or the
chip and its GPU core count when the user chose chip scope (then machines of one chip pool, explicitly). Only
status "ok" samples feed a side's figures; repeats (several runs of one side on one scope) pool their samples.
The pairing is a pivot (one GROUP BY over both sides, each side's aggregates FILTERed by side) rather than a
join of two grouped sides: one hash table instead of three. The few non-ok results are grouped by a second
statement (`detail`), read in the same snapshot and attached by position: joining them to the pivot inside
DuckDB, and sorting the pivot there with its sample lists as payload, cost more than the grouping itself.
Medians, quantiles and significance are computed afterwards from the pooled samples, in numpy (db.stats).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from db.query.selectors import Selector
from db.stats.lists import QUARTILES, list_quantile_sql, quantile_sql

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

SCOPES = tuple(_MACHINES)  # a Compare's scopes: "machine" and "chip"

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

# the detail statement's columns, and the warned one's, as the pivot carries them once attached
DETAIL = ["b_other", "b_message", "b_fallback_median", "c_other", "c_message", "c_fallback_median"]
WARNINGS = ["b_warnings", "c_warnings"]

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
    """The pivot, detail and warned SQL of baseline → candidate (pivot_sql)."""
    where, params = filter_sql(filters)
    return pivot_sql([baseline.run_ids_sql(), candidate.run_ids_sql()], scope, scope_sql(scope), where, params)
