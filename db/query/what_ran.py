"""Kernels breakdowns as stored (case_kernels, bundle schema 5): a case's on the two sides of a comparison, and a run's
for an export. Each breakdown a dict in the bundle's shape (bundle.kernels.CaseKernels' fields), with its run: what
db.review.what_ran.kernels compares. Retracted runs are never read."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine

from db.query.compare.pivot import scope_sql
from db.query.read import read_frame
from db.query.selectors import Selector

_FIELDS = "k.run_id, k.run_seq, k.workload, k.params_json, k.dtype, k.compile, k.metric, k.status, k.message, " \
    "k.profiler, k.op_calls, k.device_time_us, k.entries_json, k.warnings_json"  # fmt: skip


def _breakdown(row: dict[str, Any]) -> dict[str, Any]:
    out = {
        "run_id": row["run_id"],
        "workload": row["workload"],
        "params": json.loads(row["params_json"]),
        "dtype": row["dtype"],
        "compile": row["compile"],
        "metric": row["metric"],
        "status": row["status"],
        "profiler": row["profiler"],
        "entries": json.loads(row["entries_json"]),
        "warnings": json.loads(row["warnings_json"]),
    }
    if row["message"] is not None:
        out["message"] = row["message"]
    if row["op_calls"] is not None and row["op_calls"] == row["op_calls"]:  # NaN: a NULL through pandas
        out["op_calls"] = int(row["op_calls"])
    if "scope" in row:
        out["scope"] = row["scope"]
    return out


def case_breakdowns(
    engine: Engine,
    baseline: Selector,
    candidate: Selector,
    case: tuple[str, str, str, str],
    scope: str = "machine",
    scope_value: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(baseline's, candidate's) breakdowns of one case — (workload, case_key, dtype, compile) — one per run that
    has one, in the order the runs were stored; with scope_value, only the runs of that machine (scope "machine")
    or chip label (scope "chip", as Compare names it: "Apple M3 Ultra (80-core GPU)")."""
    expr = scope_sql(scope)
    sides = []
    for selector in (baseline, candidate):
        where, params = selector.runs_where()
        sql = (
            f"SELECT {_FIELDS}, {expr} AS scope FROM case_kernels k JOIN runs ru USING (run_id) "
            f"WHERE k.run_id IN (SELECT run_id FROM runs WHERE {where}) "
            "AND k.workload = ? AND k.case_key = ? AND k.dtype = ? AND k.compile = ?"
        )
        found = [*params, *case]
        if scope_value is not None:
            sql += f" AND {expr} = ?"
            found.append(scope_value)
        frame = read_frame(engine, sql + " ORDER BY k.run_seq", found)
        sides.append([_breakdown(row) for row in frame.to_dict("records")])
    return sides[0], sides[1]


def run_breakdowns(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    """A stored run's breakdowns in bundle form (bundle.kernels.CaseKernels' fields, no run_id), for an export."""
    frame = read_frame(
        engine,
        f"SELECT {_FIELDS} FROM case_kernels k JOIN runs ru USING (run_id) WHERE k.run_id = ? "
        "AND ru.retracted_at IS NULL ORDER BY k.workload, k.case_key, k.dtype, k.compile",
        [run_id],
    )
    out = []
    for row in frame.to_dict("records"):
        found = _breakdown(row)
        found.pop("run_id")
        out.append(found)
    return out


# (scope value, device, workload, case_key, dtype, compile): a compared case as a review's rows name it
CaseKey = tuple[str, str, str, str, str, str]
MANY = 256  # more cases than this are read as every breakdown of the sides' runs (a 50k-row VALUES list is slower)


def cases_breakdowns(
    engine: Engine, baseline: Selector, candidate: Selector, cases: list[CaseKey], scope: str = "machine"
) -> dict[CaseKey, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each listed case's (baseline's, candidate's) breakdowns, as case_breakdowns gives one case's, in one SQL read
    for all of them (a page's shown rows, a review's regressions): never a read per case. A case with none on
    either side is absent."""
    wanted = sorted(set(cases))
    if not wanted:
        return {}
    expr = scope_sql(scope)
    sides, params = [], []
    for side, selector in (("baseline", baseline), ("candidate", candidate)):
        sql, args = selector.run_ids_sql()
        sides.append(f"SELECT '{side}' AS side, run_id FROM ({sql})")
        params += args
    sql = f"WITH side_runs AS ({' UNION ALL '.join(sides)})"
    join = ""
    if len(wanted) <= MANY:
        sql += ", wanted(scope_value, device, workload, case_key, dtype, compile) AS (VALUES "
        sql += ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(wanted)) + ")"
        params += [str(v) for key in wanted for v in key]
        join = (
            f"JOIN wanted w ON w.scope_value = {expr} AND w.device = ru.device_type AND w.workload = k.workload "
            "AND w.case_key = k.case_key AND w.dtype = k.dtype AND w.compile = k.compile"
        )
    sql += (
        f" SELECT s.side, {_FIELDS}, k.case_key, {expr} AS scope, ru.device_type AS device FROM case_kernels k "
        f"JOIN side_runs s ON s.run_id = k.run_id JOIN runs ru ON ru.run_id = k.run_id {join} ORDER BY k.run_seq"
    )
    keep = set(wanted)
    out: dict[CaseKey, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for row in read_frame(engine, sql, params).to_dict("records"):
        key = (str(row["scope"]), row["device"], row["workload"], row["case_key"], row["dtype"], row["compile"])
        if key in keep:
            out.setdefault(key, ([], []))[0 if row["side"] == "baseline" else 1].append(_breakdown(row))
    return out
