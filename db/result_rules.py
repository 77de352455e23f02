"""bundle.schema.Result's rules as set-based SQL over a results array DuckDB has read (the fast ingest path).

The rules here are a conservative copy of Result's: every check is at least as strict as pydantic's (JSON
types are checked exactly, where pydantic's lax mode would coerce "1.5" or 1 for a bool; a stated summary
must agree a little more closely than Summary.agrees asks). A row that breaks any of them does not get a
message here: the whole bundle goes to the reference path (pydantic), which refuses it with the exact field
and wording, or accepts the lax spelling. So this module may refuse more than the reference, never less.
"""
from __future__ import annotations

import json

from pydantic import TypeAdapter, ValidationError

from bundle.metrics import METRICS
from bundle.schema import Name, ParamValue, Result, Status, Text, case_key
from bundle.units import ALIASES, UNITS, conversion_factor

FIELDS = list(Result.model_fields)  # every key a result object may carry
_PARAMS = TypeAdapter(dict[Name, ParamValue])
_WARNINGS = TypeAdapter(list[Text])
_SUMMARY_KEYS = ("n", "median", "mean", "min", "max", "p25", "p75", "stdev")
_NUM = r"-?[0-9][0-9.eE+\-]*"  # a JSON number as DuckDB re-serialises it (no NaN/Infinity)


def _sql_list(names) -> str:
    return "[" + ", ".join("'" + n.replace("'", "''") + "'" for n in names) + "]"


def _v(name: str) -> str:
    """The JSON text of one field of the object (NULL: absent; 'null': an explicit null); its first character
    is its JSON type, since DuckDB writes the text minified."""
    return f"v[{FIELDS.index(name) + 1}]"


def _first(name: str, chars: str, absent_ok: bool = False) -> str:
    test = f"left({_v(name)}, 1) IN ({', '.join(repr(c) for c in chars)})"
    return f"({_v(name)} IS NULL OR {test})" if absent_ok else test


def _matches(name: str, regex: str, null_ok: bool) -> str:
    nulls = f" OR {_v(name)} = 'null'" if null_ok else ""
    return f"({_v(name)} IS NULL{nulls} OR regexp_full_match({_v(name)}, '{regex}'))"


def _name(col: str) -> str:
    return f"strlen({col}) BETWEEN 1 AND 200"  # bytes >= characters: never looser than pydantic's length


_SUMMARY_RE = (r"\{(\"(" + "|".join(_SUMMARY_KEYS) + rf")\":({_NUM}|null),)*\"(" + "|".join(_SUMMARY_KEYS)
               + rf")\":({_NUM}|null)\}}")
_TYPES_OK = " AND ".join([
    *(_first(k, '"') for k in ("workload", "suite", "dtype", "metric", "unit", "status")), _first("params", "{"),
    _first("compile", '"', True), _first("case_key", '"', True), _first("message", '"n', True),
    _first("warnings", "[", True), _matches("samples", r"\[[-+0-9.eE,]*\]", False),
    _matches("tolerance", _NUM, True), f"({_v('passed')} IS NULL OR {_v('passed')} IN ('true', 'false', 'null'))",
    f"({_v('summary')} IS NULL OR {_v('summary')} = 'null' OR (regexp_full_match({_v('summary')}, '{_SUMMARY_RE}') "
    f"AND list_sort(json_keys({_v('summary')})) = {_sql_list(sorted(_SUMMARY_KEYS))}))"])
_PATHS = "[" + ", ".join(f"'$.\"{k}\"'" for k in FIELDS) + "]"


def shape_sql(path: str) -> str:
    """One row: the result count, and whether every object has only Result's keys, each once, each of the JSON
    type its field takes (a null only where None is allowed; read_json cannot tell null from absent)."""
    keys_ok = (f"len(list_filter(k, lambda x: NOT list_contains({_sql_list(FIELDS)}, x))) = 0 "
               f"AND len(k) = len(list_distinct(k))")
    return (f"SELECT count(*), coalesce(bool_and(coalesce({keys_ok} AND {_TYPES_OK}, false)), true) FROM "
            f"(SELECT json_keys(json) AS k, json_extract(json, {_PATHS})::VARCHAR[] AS v FROM "
            f"read_json_objects('{path}', format='array', maximum_object_size=1073741824))")


_SUMMARY_TYPE = "STRUCT(" + ", ".join(f"{k} DOUBLE" for k in _SUMMARY_KEYS) + ")"
_TYPED = dict.fromkeys(FIELDS, "VARCHAR") | {"params": "JSON", "warnings": "JSON", "samples": "DOUBLE[]",
                                             "summary": _SUMMARY_TYPE, "passed": "BOOLEAN", "tolerance": "DOUBLE"}
_COLUMNS = "{" + ", ".join(f"\"{k}\": '{t}'" for k, t in _TYPED.items()) + "}"


def stage_sql(path: str) -> str:
    """The values, typed: DuckDB's casts are lax, but shape_sql has checked that every JSON type fits, so
    each cast here is exact (a cast DuckDB cannot make raises, and the reference path runs)."""
    return f"""CREATE TEMP TABLE _typed AS SELECT row_number() OVER () - 1 AS i, workload, suite,
  params::VARCHAR AS params, case_key, dtype, coalesce(compile, 'eager') AS compile, metric, unit, status, message,
  coalesce(warnings::VARCHAR, '[]') AS warnings, coalesce(samples, []) AS samples, passed, tolerance, summary
FROM read_json('{path}', format='array', columns={_COLUMNS}, maximum_object_size=1073741824)"""


_STATUSES = _sql_list(s.value for s in Status)
_VALUED = _sql_list((Status.ok.value, Status.fallback.value))
# Count of rows breaking any rule that needs only the row itself (+ the unit table).
ROW_RULES_SQL = f"""SELECT count(*) FROM _typed t LEFT JOIN _units u ON u.metric = t.metric AND u.given = t.unit
WHERE NOT coalesce({_name('t.workload')} AND {_name('t.suite')}
  AND {_name('t.dtype')} AND {_name('t.compile')} AND {_name('t.metric')} AND {_name('t.unit')}
  AND coalesce(strlen(message), 0) <= 20000 AND list_contains({_STATUSES}, status) AND u.factor IS NOT NULL
  AND len(samples) <= 1000000 AND (len(samples) = 0 OR (isfinite(list_min(samples)) AND isfinite(list_max(samples))))
  AND (list_contains({_VALUED}, status) = (len(samples) > 0))
  AND (list_contains({_VALUED}, status) OR length(coalesce(message, '')) > 0), false)"""


def unit_rows() -> list[tuple]:
    """(metric, unit as a bundle may spell it, factor to the metric's canonical unit, canonical unit)."""
    spellings = list(UNITS) + list(ALIASES)
    out = []
    for m in METRICS.values():
        for s in spellings:
            if UNITS[ALIASES.get(s, s)].dimension == m.dimension:
                out.append((m.name, s, conversion_factor(s, m.unit), m.unit))
    return out


def params_row(text: str) -> tuple:
    """(JSON text as read, canonical case_key, params_json as the reference path writes it, ok)."""
    try:
        params = _PARAMS.validate_python(json.loads(text), strict=True)
    except (ValidationError, ValueError, TypeError):  # TypeError: an absent params (NULL)
        return text, None, None, False
    return text, case_key(params), json.dumps(params, ensure_ascii=False), True


def warnings_row(text: str) -> tuple:
    try:
        warnings = _WARNINGS.validate_python(json.loads(text), strict=True)
    except (ValidationError, ValueError, TypeError):
        return text, None, False
    return text, json.dumps(warnings, ensure_ascii=False), True


# The stated summary (stated unit) against the one derived from the canonical samples: Summary.agrees's
# tolerances scaled by the unit factor, tightened by 0.1 % so rounding in the scaling never accepts a
# summary the reference would refuse.
_CLOSE = ("abs(s.{k} * x.factor - d.{k}) <= 0.999 * greatest(1e-6 * greatest(abs(s.{k} * x.factor), abs(d.{k})), "
          "1e-12 * x.factor)")
SUMMARY_RULES_SQL = f"""SELECT count(*) FROM (SELECT t.i, t.summary AS s, u.factor FROM _typed t
  JOIN _units u ON u.metric = t.metric AND u.given = t.unit WHERE t.summary IS NOT NULL) x
  JOIN _final d ON d.i = x.i
WHERE NOT coalesce(s.n = d.n AND {' AND '.join(_CLOSE.format(k=k) for k in _SUMMARY_KEYS[1:-1])}
  AND ((s.stdev IS NULL AND d.stdev IS NULL) OR {_CLOSE.format(k='stdev')}), false)"""
# (a summary on a row without samples never agrees above: the reference path judges it)

# The staged rows both paths end with (db.ingest derives summaries and inserts from these).
ROWS_SQL = """SELECT t.i, t.workload, t.suite, p.key AS case_key, p.params_json,
  t.dtype, t.compile, t.metric, u.canon AS unit, t.status, t.message, w.warnings_json,
  list_transform(t.samples, lambda v: v * u.factor) AS samples, t.passed, t.tolerance
FROM _typed t JOIN _units u ON u.metric = t.metric AND u.given = t.unit
JOIN _params p ON p.text = t.params JOIN _warnings w ON w.text = t.warnings
WHERE p.ok AND w.ok AND (t.case_key IS NULL OR t.case_key = '' OR t.case_key = p.key)"""

# Summaries derived from the canonical samples, for both paths: quantile_cont is numpy's linear method
# (bundle.stats._quantile); stdev is None for one sample.
DERIVE_SQL = """CREATE TEMP TABLE _final AS SELECT i, '{run}:' || i AS result_id, '{run}' AS run_id, workload,
  suite, case_key, params_json, dtype, compile, metric, unit, status, message, warnings_json, samples,
  len(samples) AS n, q[2] AS median, list_avg(samples) AS mean, list_min(samples) AS min, list_max(samples) AS max,
  q[1] AS p25, q[3] AS p75, CASE WHEN len(samples) > 1 THEN list_stddev_samp(samples) END AS stdev, passed,
  tolerance
FROM (SELECT *, CASE WHEN len(samples) > 0 THEN list_aggregate(samples, 'quantile_cont', [0.25, 0.5, 0.75])
  END AS q FROM ({rows}))"""
INPUTS = ("result_id, workload, suite, case_key, params_json, dtype, compile, metric, unit, status, message, "
          "warnings_json, samples, passed, tolerance")  # what a result says; the rest is derived from it
DIGEST_SQL = f"SELECT bit_xor(hash({INPUTS}))::VARCHAR FROM _final"
