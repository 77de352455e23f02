"""Check a parsed results array (temp view _typed, db.ingest.results_text) by db.ingest.schema_checks's checks and
stage its rows as temp table _final: one row per result, samples in canonical units, summaries derived by
one SQL. Rows that break a rule come back as suspects, for pydantic to word the refusal (db.ingest.core)."""

from __future__ import annotations

import sys

import pyarrow as pa

from bundle.schema import CASE_FIELDS
from bundle.stats import agree
from db.ingest import schema_checks
from db.stats.lists import QUARTILES, list_quantile_sql

SUSPECTS = 100  # results judged one by one for the refusal's wording

# one scan lists every distinct input of every judged field and rule (GROUPING SETS: one group per set)
_FACT_SQL = {
    "metric": "coalesce(metric, '')",
    "unit": "coalesce(unit, '')",
    "status": "coalesce(status, '')",
    "has_samples": "len(samples) > 0",
    "has_message": "coalesce(length(message_value), 0) > 0",
    # the smallest sample's sign, or a subnormal stand-in (5e-324) for a positive one below the normal range
    "sign": "CASE WHEN len(samples) = 0 THEN 0 WHEN list_min(samples) > 0 AND list_min(samples) < "
    f"{sys.float_info.min!r} THEN 5e-324 ELSE sign(list_min(samples)) END",
}  # the rules' inputs
_FACTS = ", ".join(f"{sql} AS {name}" for name, sql in _FACT_SQL.items())
_COMBO_KEYS = tuple(_FACT_SQL)
_COUNTS = "len(samples) AS n_samples, len(contention) AS n_contention"  # processes_rule's and contention_rule's
_SETS = [_COMBO_KEYS, ("params", "case_key"), ("warnings",), ("processes", "n_samples", "n_contention")] + [
    (f,) for f in schema_checks.SIMPLE
]
_OWN_COLUMNS = sorted({c for s in _SETS for c in s} - set(_COMBO_KEYS) - {"n_samples", "n_contention"})
_GROUPED = _COMBO_KEYS + ("n_samples", "n_contention") + tuple(_OWN_COLUMNS)
_DISTINCT = (
    f"SELECT grouping({', '.join(_GROUPED)}) AS g, * FROM (SELECT {_FACTS}, {_COUNTS}, "
    + ", ".join(f'coalesce("{c}", \'\') AS "{c}"' for c in _OWN_COLUMNS)
    + " FROM _typed) "
    + "GROUP BY GROUPING SETS ("
    + ", ".join("(" + ", ".join(f'"{c}"' for c in s) + ")" for s in _SETS)
    + ")"
)

_TABLES = {  # name: (key columns, checked columns, Python check)
    "_combo": (_COMBO_KEYS, ("ok", "metric_value", "canon", "factor", "status_value"), schema_checks.combo_row),
    "_params": (("params", "case_key"), ("ok", "key", "params_json"), schema_checks.params_row),
    "_warnings": (("warnings",), ("ok", "warnings_json"), schema_checks.warnings_row),
    "_processes": (("processes", "n_samples", "n_contention"), ("ok", "processes_value"), schema_checks.processes_row),
}
# columns whose type rows cannot tell
_TYPES = {"n_samples": pa.int64(), "n_contention": pa.int64(), "processes_value": pa.list_(pa.int32())}


def _register(raw_conn, name: str, columns: tuple, rows: list[tuple]) -> None:
    raw_conn.register(
        f"{name}_arrow", pa.table({c: pa.array([r[k] for r in rows], _TYPES.get(c)) for k, c in enumerate(columns)})
    )
    raw_conn.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
    raw_conn.unregister(f"{name}_arrow")


def _judged(raw_conn) -> list[str]:
    """Judge each distinct input in Python; register the tables _FINAL joins; the SQL tests of the simple
    fields' bad values (none, for a valid bundle)."""
    table = raw_conn.sql(_DISTINCT).to_arrow_table()
    columns = _GROUPED
    g, data = table.column("g").to_pylist(), {c: table.column(c).to_pylist() for c in columns}
    rows_of: dict[int, list[int]] = {}
    for row, mask in enumerate(g):
        rows_of.setdefault(mask, []).append(row)
    # grouping(): bit set = column not in this row's set (last column = bit 0)
    groups = {
        frozenset(c for n, c in enumerate(columns) if not mask >> (len(columns) - 1 - n) & 1): rows
        for mask, rows in rows_of.items()
    }
    for name, (keys, judged, fn) in _TABLES.items():
        rows = [fn(*(data[k][r] for k in keys)) for r in groups.get(frozenset(keys), [])]
        _register(raw_conn, name, keys + judged, rows or [(None,) * (len(keys) + len(judged))])
    tests = []
    for f in schema_checks.SIMPLE:
        bad = [data[f][r] for r in groups.get(frozenset((f,)), []) if not schema_checks.simple_ok(f, data[f][r])]
        if bad:
            _register(raw_conn, f"_bad_{f}", ("text",), [(b,) for b in bad])
            tests.append(f"coalesce(t.\"{f}\", '') NOT IN (SELECT text FROM _bad_{f})")
    return tests


def _stored(f: str) -> str:
    default = schema_checks.DEFAULTS.get(f)
    if default is None:
        return f"t.{f}_value AS {f}"
    return f"coalesce(t.{f}_value, '{str(default).replace(chr(39), chr(39) * 2)}') AS {f}"


_STORED = ", ".join(map(_stored, ("workload", "suite", "dtype", "compile", "message")))
# a result's quartiles, in QUARTILES' order (q[1] is the first), taken where its samples are
_QUARTILES = ", ".join(f"q[{i}] AS {name}" for i, name in enumerate(QUARTILES, 1))
_QUANTILES = list_quantile_sql("samples", list(QUARTILES.values()))
_FACT_COLUMNS = ", ".join(f"{sql} AS f_{k}" for k, sql in _FACT_SQL.items())
_ON = " AND ".join(f"c.{k} = t.f_{k}" for k in _COMBO_KEYS)
_FINAL = """CREATE TEMP TABLE _final AS SELECT * EXCLUDE (judged, samples_typed, summary_typed, contention_typed),
  coalesce(judged AND {row_ok}, false) AS ok
FROM (SELECT *, len(samples) AS n, {quartiles}, list_avg(samples) AS mean, list_min(samples) AS min,
  list_max(samples) AS max, CASE WHEN len(samples) > 1 THEN list_stddev_samp(samples) END AS stdev
FROM (SELECT *, CASE WHEN len(samples) > 0 THEN {quantiles} END AS q
FROM (SELECT t.i, '{run}:' || t.i AS result_id, '{run}' AS run_id, {stored}, p.key AS case_key,
  p.params_json, c.metric_value AS metric, c.canon AS unit, c.status_value AS status, w.warnings_json,
  list_transform(t.samples, lambda v: v * c.factor) AS samples, t.passed_value AS passed,
  t.tolerance_value AS tolerance, t.rounding_value AS rounding, t.contention, t.summary, c.factor, t.samples_typed,
  t.summary_typed, t.contention_typed,
  coalesce(pr.processes_value, []) AS processes, (c.ok AND p.ok AND w.ok AND pr.ok {simple}) AS judged
FROM (SELECT *, {facts} FROM _typed) t
LEFT JOIN _combo c ON {on}
LEFT JOIN _params p ON p.params = coalesce(t.params, '') AND p.case_key = coalesce(t.case_key, '')
LEFT JOIN _warnings w ON w.warnings = coalesce(t.warnings, '')
LEFT JOIN _processes pr ON pr.processes = coalesce(t.processes, '') AND pr.n_samples = len(t.samples)
  AND pr.n_contention = len(t.contention))))"""


def stage(raw_conn, run_id: str) -> tuple[int, list[int], bool]:
    """Stage _final; (rows, the first suspects by index, more suspects than listed)."""
    simple = "".join(" AND " + t for t in _judged(raw_conn))
    raw_conn.execute(
        _FINAL.format(
            run=run_id,
            stored=_STORED,
            simple=simple,
            facts=_FACT_COLUMNS,
            on=_ON,
            row_ok=schema_checks.ROW_OK,
            quartiles=_QUARTILES,
            quantiles=_QUANTILES,
        )
    )
    count, broken = raw_conn.execute("SELECT count(*), count(*) FILTER (NOT ok) FROM _final").fetchall()[0]
    found = (
        [
            i
            for (i,) in raw_conn.execute(
                "SELECT i FROM _final WHERE NOT ok ORDER BY i LIMIT ?", [SUSPECTS + 1]
            ).fetchall()
        ]
        if broken
        else []
    )
    found = sorted(set(found) | set(_disagreeing(raw_conn, SUSPECTS + 1)))
    return count, found[:SUSPECTS], len(found) > SUSPECTS


def repeats(raw_conn, limit: int) -> tuple[list[tuple[int, int]], int]:
    """The first `limit` results that repeat an earlier one's case (bundle.schema.CASE_FIELDS) as (first, repeat)
    positions, and how many repeats there are in all; one grouped scan, whatever the copies."""
    part = ", ".join(CASE_FIELDS)
    found = raw_conn.execute(f"""SELECT first, i, count(*) OVER () FROM (SELECT i, min(i) OVER (PARTITION BY {part})
        AS first FROM _final) WHERE i <> first ORDER BY i LIMIT {int(limit)}""").fetchall()
    return [(int(a), int(b)) for a, b, _ in found], (int(found[0][2]) if found else 0)


def _disagreeing(raw_conn, limit: int) -> list[int]:
    """Rows whose stated summary (stated unit) does not agree with the derived one (bundle.stats.agree); a row
    without samples has none to agree with (Result drops it). Only schema 1–3 bundles state one: a schema 4
    bundle's samples are its only fact, so none of its rows is read here."""
    keys = schema_checks.SUMMARY_KEYS
    t = raw_conn.sql(
        f"SELECT i, {', '.join(f'summary.{k} AS s_{k}' for k in keys)}, "
        + ", ".join(f"{k}{'' if k == 'n' else ' / factor'} AS d_{k}" for k in keys)
        + " FROM _final WHERE ok AND summary IS NOT NULL AND n > 0"
    ).to_arrow_table()
    if t.num_rows == 0:
        return []
    col = lambda name: t.column(name).to_numpy(zero_copy_only=False).astype(float)  # noqa: E731 (NULL: NaN)
    ok = agree({k: col(f"s_{k}") for k in keys}, {k: col(f"d_{k}") for k in keys})
    return t.column("i").to_numpy()[~ok][:limit].tolist()


def drop(raw_conn) -> None:
    for name in (*_TABLES, "_final", *(f"_bad_{f}" for f in schema_checks.SIMPLE)):
        raw_conn.execute(f"DROP TABLE IF EXISTS {name}")
