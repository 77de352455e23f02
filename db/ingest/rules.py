"""bundle.schema.Result's rules as set-based SQL over a results array DuckDB has read (the fast ingest path).

The rules here are a conservative copy of Result's: every check is at least as strict as pydantic's. JSON types
are checked, since DuckDB's casts would take what pydantic refuses (a number for a string field, a null inside
samples); the check also refuses some spellings pydantic's lax mode takes ("7.5" in samples, 1 for true), which
then go to pydantic. A stated summary is read as pydantic reads it and must agree a little more closely than
Summary.agrees asks. A repeated key, which json.loads resolves to its last value, is refused by DuckDB's reader.
A row that breaks any rule gets no message here: pydantic judges it (db.ingest.core), refusing it with the exact
field and wording, or accepting a lax spelling. So this module may refuse more than the reference, never less.
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


def _j(name: str) -> str:
    """A field's JSON text as DuckDB re-wrote it, minified, so that its first character is its JSON type
    (NULL: absent or an explicit null, which the reader cannot tell apart; see FORBIDDEN_NULL_RES)."""
    return f'j."{name}"::VARCHAR'


def _first(name: str, chars: str, absent_ok: bool = False) -> str:
    test = f"left({_j(name)}, 1) IN ({', '.join(repr(c) for c in chars)})"
    return f"({_j(name)} IS NULL OR {test})" if absent_ok else test


def _matches(name: str, regex: str) -> str:
    return f"({_j(name)} IS NULL OR regexp_full_match({_j(name)}, '{regex}'))"


def _name(col: str) -> str:
    return f"strlen({col}) BETWEEN 1 AND 200"  # bytes >= characters: never looser than pydantic's length


TYPES_OK = " AND ".join([
    *(_first(k, '"') for k in ("workload", "suite", "dtype", "metric", "unit", "status")), _first("params", "{"),
    *(_first(k, '"', True) for k in ("compile", "case_key", "message")), _first("warnings", "[", True),
    _matches("samples", r"\[[-+0-9.eE,]*\]"), _matches("tolerance", _NUM),
    f"({_j('passed')} IS NULL OR {_j('passed')} IN ('true', 'false'))"])
# (summary is not here: its cast to _SUMMARY_TYPE refuses a missing, unknown or repeated key and any value that
# is not a number; what it reads as one from a string or a boolean pydantic's lax mode reads alike, and the
# values must then agree with the derived summary, see _AGREES)

# Result's fields that may be absent but never null. The reader gives NULL for both, so the bundle's text is
# searched for a null after one of these keys, or for an ASCII letter spelled as a \u escape (the only way to
# write a key name without its plain bytes). A match anywhere, even inside a string, sends the bundle to the
# reference path: this may decline a valid bundle, never miss a null.
NEVER_NULL = ("case_key", "compile", "warnings", "samples")
FORBIDDEN_NULL_RES = (r'"(' + "|".join(NEVER_NULL) + r')"[ \t\r\n]*:[ \t\r\n]*null',
                      r"\\u00([46][1-9a-fA-F]|[57][0-9aA]|5[fF])")  # two scans: each keeps RE2's literal prefix
_OBJECT_SIZE = 1 << 30
# The first element of every file the reader sees: every field, with a value each cast below takes and
# FORBIDDEN_NULL_RES do not match. The reader infers its columns from this one object (sample_size=1;
# maximum_depth=1 keeps every value as JSON text) and refuses any other key after it.
_TEMPLATE_VALUES = {"params": {}, "warnings": [], "samples": [], "summary": dict.fromkeys(_SUMMARY_KEYS, 0),
                    "passed": False, "tolerance": 0}
TEMPLATE = json.dumps({k: _TEMPLATE_VALUES.get(k, "") for k in FIELDS}).encode()


def _files(paths: list[str]) -> str:
    return "[" + ", ".join(f"'{p}'" for p in paths) + "]"  # scratch files this process named


def forbidden_null_sql(paths: list[str]) -> str:
    found = " OR ".join(f"regexp_matches(content, '{pattern}')" for pattern in FORBIDDEN_NULL_RES)
    return f"SELECT coalesce(bool_or({found}), false) FROM read_text({_files(paths)})"


def read_sql(table: str, path: str) -> str:
    """Every field of the file's results, typed (row 0 being TEMPLATE's), into `table`, in the file's order.
    The cast runs in the read's pipeline, on the read's thread. An unknown or repeated key raises."""
    source = (f"read_json('{path}', format='array', records=true, sample_size=1, maximum_depth=1, "
              f"maximum_object_size={_OBJECT_SIZE})")
    return f"CREATE OR REPLACE TABLE {table} AS {_typed_select(source)}"


def objects_sql(path: str) -> str:
    """(index, JSON text) of the array's elements whose index is in the list parameter."""
    return (f"SELECT i, json FROM (SELECT row_number() OVER () - 1 AS i, json FROM read_json_objects('{path}', "
            f"format='array', maximum_object_size={_OBJECT_SIZE})) WHERE list_contains(?, i)")


def typed_view_sql(database: str, counts: list[int]) -> str:
    """Temp view _typed: the parsed pieces' rows in bundle order, with i (the result's index), TEMPLATE's
    rows left out."""
    starts = [sum(counts[:n]) for n in range(len(counts))]
    return "CREATE TEMP VIEW _typed AS " + " UNION ALL ".join(
        f"SELECT {start} + rowid - 1 AS i, * FROM {database}.part{n} WHERE rowid > 0" for n, start in enumerate(starts))


def _text(name: str) -> str:
    return f'j."{name}"->>\'$\''  # the JSON string's value (escapes undone)


_SUMMARY_TYPE = "STRUCT(" + ", ".join(f"{k} DOUBLE" for k in _SUMMARY_KEYS) + ")"


def _typed_select(source: str) -> str:
    """The values of `source` (one JSON text column per field), typed, with whether every JSON type fits
    (types_ok): DuckDB's casts are lax, so a row is judged by types_ok, never by its cast values."""
    return f"""SELECT {_text('workload')} AS workload, {_text('suite')} AS suite, j.params::VARCHAR AS params,
  {_text('case_key')} AS case_key, {_text('dtype')} AS dtype, coalesce({_text('compile')}, 'eager') AS compile,
  {_text('metric')} AS metric, {_text('unit')} AS unit, {_text('status')} AS status, {_text('message')} AS message,
  coalesce(j.warnings::VARCHAR, '[]') AS warnings, coalesce(j.samples::DOUBLE[], []) AS samples,
  j.passed::BOOLEAN AS passed, j.tolerance::DOUBLE AS tolerance, j.summary::{_SUMMARY_TYPE} AS summary,
  coalesce({TYPES_OK}, false) AS types_ok
FROM {source} j"""


_STATUSES = _sql_list(s.value for s in Status)
_VALUED = _sql_list((Status.ok.value, Status.fallback.value))
# Whether a row passes every rule that needs only the row itself (+ the unit table).
_ROW_OK = f"""coalesce(types_ok AND {_name('t.workload')} AND {_name('t.suite')} AND {_name('t.dtype')}
  AND {_name('t.compile')} AND {_name('t.metric')} AND {_name('t.unit')}
  AND coalesce(strlen(message), 0) <= 20000 AND list_contains({_STATUSES}, status) AND u.factor IS NOT NULL
  AND len(samples) <= 1000000 AND (len(samples) = 0 OR (isfinite(list_min(samples)) AND isfinite(list_max(samples))))
  AND (list_contains({_VALUED}, status) = (len(samples) > 0))
  AND (list_contains({_VALUED}, status) OR length(coalesce(message, '')) > 0), false)"""
_WITH_UNITS = "FROM _typed t LEFT JOIN _units u ON u.metric = t.metric AND u.given = t.unit"
ROW_RULES_SQL = f"SELECT count(*), count(*) FILTER (NOT {_ROW_OK}) {_WITH_UNITS}"  # rows, rows breaking one
# The first results that broke any rule: a row rule, a join of ROWS_SQL (params, warnings, case_key) or the
# stated summary's agreement.
SUSPECTS_SQL = f"""SELECT DISTINCT i FROM (SELECT t.i {_WITH_UNITS} WHERE NOT {_ROW_OK}
  UNION ALL SELECT t.i FROM _typed t ANTI JOIN _final f ON f.i = t.i
  UNION ALL SELECT i FROM _final WHERE NOT summary_ok) ORDER BY i LIMIT ?"""


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


# The staged rows both paths end with (db.ingest.core derives summaries and inserts from these), with the stated
# summary and the unit factor (the reference path has judged its summaries already: NULL and 1).
ROWS_SQL = """SELECT t.i, t.workload, t.suite, p.key AS case_key, p.params_json,
  t.dtype, t.compile, t.metric, u.canon AS unit, t.status, t.message, w.warnings_json,
  list_transform(t.samples, lambda v: v * u.factor) AS samples, t.passed, t.tolerance, t.summary, u.factor
FROM _typed t JOIN _units u ON u.metric = t.metric AND u.given = t.unit
JOIN _params p ON p.text = t.params JOIN _warnings w ON w.text = t.warnings
WHERE p.ok AND w.ok AND (t.case_key IS NULL OR t.case_key = '' OR t.case_key = p.key)"""

# The stated summary (stated unit) against the one derived from the canonical samples: Summary.agrees's
# tolerances scaled by the unit factor, tightened by 0.1 % so rounding in the scaling never accepts a
# summary the reference would refuse. A summary on a row without samples never agrees: pydantic judges that row.
_CLOSE = ('abs(summary.{k} * factor - "{k}") <= 0.999 * greatest(1e-6 * greatest(abs(summary.{k} * factor), '
          'abs("{k}")), 1e-12 * factor)')
_STATS_CLOSE = " AND ".join(_CLOSE.format(k=k) for k in _SUMMARY_KEYS[1:-1])
_AGREES = (f"summary IS NULL OR coalesce(summary.n = n AND {_STATS_CLOSE} "
           f"AND ((summary.stdev IS NULL AND stdev IS NULL) OR {_CLOSE.format(k='stdev')}), false)")

# Summaries derived from the canonical samples, for both paths: quantile_cont is numpy's linear method
# (bundle.stats._quantile); stdev is None for one sample. summary_ok: the stated summary agrees.
DERIVE_SQL = f"""CREATE TEMP TABLE _final AS SELECT * EXCLUDE (summary, factor), {_AGREES} AS summary_ok FROM (SELECT i,
  '{{run}}:' || i AS result_id, '{{run}}' AS run_id, workload, suite, case_key, params_json, dtype, compile, metric,
  unit, status, message, warnings_json, samples, len(samples) AS n, q[2] AS median, list_avg(samples) AS mean,
  list_min(samples) AS min, list_max(samples) AS max, q[1] AS p25, q[3] AS p75,
  CASE WHEN len(samples) > 1 THEN list_stddev_samp(samples) END AS stdev, passed, tolerance, summary, factor
FROM (SELECT *, CASE WHEN len(samples) > 0 THEN list_aggregate(samples, 'quantile_cont', [0.25, 0.5, 0.75])
  END AS q FROM ({{rows}})))"""
REFERENCE_ROWS = f"SELECT *, NULL::{_SUMMARY_TYPE} AS summary, 1.0 AS factor FROM _rows"
# rows staged, rows whose stated summary disagrees
FINAL_SQL = "SELECT count(*), count(*) FILTER (WHERE NOT summary_ok) FROM _final"
INPUTS = ("result_id, workload, suite, case_key, params_json, dtype, compile, metric, unit, status, message, "
          "warnings_json, samples, passed, tolerance")  # what a result says; the rest is derived from it
DIGEST_SQL = f"SELECT bit_xor(hash({INPUTS}))::VARCHAR FROM _final"
