"""bundle.schema.Result's rules as set-based checks, derived from the schema rather than copied (one definition).

A result's fields fall in two kinds. Most take few distinct values in a bundle (workload, metric, unit, status,
params, messages…): DuckDB lists each distinct JSON text once and pydantic judges it with the field's own
annotation in strict JSON mode, and each cross-field rule (bundle.schema.*_rule) is called on each distinct
input it needs (metric and unit; params and case_key; status and whether there are samples and a message;
metric and the sign of the smallest sample). Two fields have one value per row, samples and summary: their
checks are compiled here from their annotations (a JSON array of numbers, its length bound, finiteness; the
stated summary's keys and JSON types from bundle.stats.Summary) and the derived summary must pass Summary's
own finiteness, as SQL over the whole column. A stated summary is then compared with the derived one by
bundle.stats.agree, the function Summary.agrees uses. This module raises at import if an annotation changes
to one it cannot compile, so a new rule cannot be skipped silently.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, get_args

from pydantic import TypeAdapter, ValidationError

from bundle.metrics import METRICS
from bundle.schema import (
    Result,
    Status,
    case_key_rule,
    contention_rule,
    processes_rule,
    sign_rule,
    status_rule,
    unit_rule,
)
from bundle.stats import Summary
from bundle.units import conversion_factor

FIELDS = Result.model_fields
BULK = ("samples", "summary", "contention")  # one value per row: compiled to SQL, never judged one by one
COMBO = ("metric", "unit", "status")  # judged together with the facts below (cross-field rules)
# judged together (case_key_rule; processes_rule with the sample count, contention_rule with the number of
# shares) or re-dumped for storage
OWN = ("params", "case_key", "warnings", "processes")
SIMPLE = tuple(f for f in FIELDS if f not in BULK + COMBO + OWN)  # judged alone: only the bad values matter


def field_adapter(model, name: str) -> TypeAdapter:
    fi = model.model_fields[name]
    return TypeAdapter(Annotated[(fi.annotation, *fi.metadata)] if fi.metadata else fi.annotation)


@cache
def adapter(name: str) -> TypeAdapter:
    return field_adapter(Result, name)


def field_value(name: str, text: str | None) -> Any:
    """A field's value from its JSON text (None: absent), by its own annotation; raises ValueError."""
    if text is None:
        if FIELDS[name].is_required():
            raise ValueError(f"{name} is required")
        return FIELDS[name].get_default(call_default_factory=True)
    return adapter(name).validate_json(text, strict=True)


def _admits_null(name: str) -> bool:
    try:
        adapter(name).validate_json("null", strict=True)
        return True
    except ValidationError:
        return False


# Fields that may be absent but never null: the reader gives NULL for both (results_text.explicit_nulls)
NEVER_NULL = tuple(f for f in FIELDS if not FIELDS[f].is_required() and not _admits_null(f))
DEFAULTS = {f: FIELDS[f].get_default(call_default_factory=True) for f in FIELDS if not FIELDS[f].is_required()}

# -- the bulk fields, compiled from their annotations --------------------------------------------------------
_SAMPLES = FIELDS["samples"]
(_ELEMENT,) = get_args(_SAMPLES.annotation)
MAX_SAMPLES = next(m.max_length for m in _SAMPLES.metadata)
# JSON value spellings by JSON schema type, as DuckDB re-writes a parsed value (minified)
_SPELLINGS = {"integer": "-?[0-9]+", "number": "-?[0-9][-+0-9.eE]*", "null": "null"}


def _spelling(schema: dict) -> str:
    """A regular expression for the values of this JSON schema (numbers and null only)."""
    kinds = [s["type"] for s in schema.get("anyOf", [schema])]
    if any(k not in _SPELLINGS for k in kinds):
        raise TypeError(f"db.ingest.schema_checks cannot compile a check for JSON schema {schema}")
    return "(?:" + "|".join(_SPELLINGS[k] for k in kinds) + ")"


_ELEMENT_SCHEMA = TypeAdapter(_ELEMENT).json_schema()


def _array_re(schema: dict) -> str:
    """A JSON array of values of this schema, as DuckDB re-writes it."""
    return r"\[(?:" + _spelling(schema) + "(?:," + _spelling(schema) + r")*)?\]"


# samples: a JSON array of numbers (only numbers re-write to these bytes)
SAMPLES_RE = _array_re(_ELEMENT_SCHEMA)
# contention: an array of shares or nulls, each share within the bounds its annotation states
_CONTENTION = FIELDS["contention"]
(_SHARE,) = get_args(_CONTENTION.annotation)
_SHARE_SCHEMA = TypeAdapter(_SHARE).json_schema()
MAX_SHARES = next(m.max_length for m in _CONTENTION.metadata)


def _bounds(schema: dict) -> tuple[float, float]:
    """(minimum, maximum) a number of this JSON schema may take (the share's Field(ge=, le=))."""
    numbers = [s for s in schema.get("anyOf", [schema]) if s.get("type") == "number"]
    if len(numbers) != 1 or "minimum" not in numbers[0] or "maximum" not in numbers[0]:
        raise TypeError(f"db.ingest.schema_checks cannot compile a bounds check for JSON schema {schema}")
    return float(numbers[0]["minimum"]), float(numbers[0]["maximum"])


CONTENTION_RE = _array_re(_SHARE_SCHEMA)
_SHARE_LOW, _SHARE_HIGH = _bounds(_SHARE_SCHEMA)


def _finite(ta: TypeAdapter) -> bool:
    try:
        ta.validate_python(float("inf"))
        return False
    except ValidationError:
        return True


SUMMARY_KEYS = tuple(Summary.model_fields)
_PAIR = "(?:" + "|".join(f'"{k}":{_spelling(field_adapter(Summary, k).json_schema())}' for k in SUMMARY_KEYS) + ")"
# a stated summary: an object of exactly Summary's keys (every key present, as many pairs as keys), each with a
# value of its annotation's JSON type
SUMMARY_RE = r"\{" + _PAIR + "(?:," + _PAIR + r")*\}"
# the same pairs in Summary's order, each once, as the collector writes them: one match where the general check
# (any order: the pattern, every key present, as many pairs as keys) takes three passes
SUMMARY_IN_ORDER_RE = (
    r"\{" + ",".join(f'"{k}":{_spelling(field_adapter(Summary, k).json_schema())}' for k in SUMMARY_KEYS) + r"\}"
)
_SUMMARY_FINITE = [k for k in SUMMARY_KEYS if k != "n" and _finite(field_adapter(Summary, k))]
_NULLABLE = {k for k in SUMMARY_KEYS if "null" in json.dumps(field_adapter(Summary, k).json_schema())}
SUMMARY_STRUCT = "STRUCT(" + ", ".join(f"{k} DOUBLE" for k in SUMMARY_KEYS) + ")"


def _summary_typed(col: str) -> str:
    every = " AND ".join(f"contains({col}, '\"{k}\":')" for k in SUMMARY_KEYS)
    pairs = f"length({col}) - length(replace({col}, ':', '')) = {len(SUMMARY_KEYS)}"  # no ':' in a number
    null = f" OR {col} = 'null'" if _admits_null("summary") else ""
    general = f"regexp_full_match({col}, '{SUMMARY_RE}') AND {every} AND {pairs}"
    # CASE, not OR: DuckDB evaluates the general check only for the rows the in-order one did not take
    return (
        f"({col} IS NULL{null} OR CASE WHEN regexp_full_match({col}, '{SUMMARY_IN_ORDER_RE}') THEN true "
        f"ELSE {general} END)"
    )


def typed_select(source: str) -> str:
    """Every field of `source` (one JSON column per field, read at depth 1): the JSON text of each judged
    field, the string values to store, and the bulk fields cast, with whether their JSON types fit."""
    texts = [f'j."{f}"::VARCHAR AS "{f}"' for f in FIELDS if f not in BULK]
    texts += [f'j."{f}" IS NULL AS "{f}_absent"' for f in NEVER_NULL if f in BULK]  # or null: see NEVER_NULL
    values = [f'j."{f}"->>\'$\' AS "{f}_value"' for f in ("workload", "suite", "dtype", "compile", "message")]
    return f"""SELECT {", ".join(texts + values)},
  j.samples IS NULL OR regexp_full_match(j.samples::VARCHAR, '{SAMPLES_RE}') AS samples_typed,
  coalesce(TRY_CAST(j.samples AS DOUBLE[]), []) AS samples, TRY_CAST(j.passed AS BOOLEAN) AS passed_value,
  j.contention IS NULL OR regexp_full_match(j.contention::VARCHAR, '{CONTENTION_RE}') AS contention_typed,
  coalesce(TRY_CAST(j.contention AS DOUBLE[]), []) AS contention,
  TRY_CAST(j.tolerance AS DOUBLE) AS tolerance_value, TRY_CAST(j.rounding AS DOUBLE) AS rounding_value,
  coalesce({_summary_typed("j.summary::VARCHAR")}, false)
  AS summary_typed, TRY_CAST(j.summary AS {SUMMARY_STRUCT}) AS summary
FROM {source} j"""


# -- the judged fields: pydantic on each distinct input ------------------------------------------------------
def _text(v) -> str | None:
    return v if v else None  # '' stands for absent in the join keys (a JSON text is never empty)


def combo_row(metric_j, unit_j, status_j, has_samples, has_message, sign) -> tuple:
    """(the keys…, ok, metric, canonical unit, factor to it, status) by unit_rule, status_rule, sign_rule."""
    try:
        m, u, s = (field_value(f, _text(t)) for f, t in zip(COMBO, (metric_j, unit_j, status_j)))
        given = unit_rule(m, u)
        status_rule(Status(s), has_samples, has_message)
        if has_samples:
            sign_rule(m, float(sign))  # the smallest sample's sign (-1, 0, 1), or 5e-324 for a subnormal one
        canon = METRICS[m].unit
        return (
            metric_j,
            unit_j,
            status_j,
            has_samples,
            has_message,
            sign,
            True,
            m,
            canon,
            conversion_factor(given, canon),
            Status(s).value,
        )
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return metric_j, unit_j, status_j, has_samples, has_message, sign, False, None, None, None, None


def params_row(params_j, case_key_j) -> tuple:
    """(the keys…, ok, canonical case_key, params_json as stored)."""
    try:
        params = field_value("params", _text(params_j))
        key = case_key_rule(params, field_value("case_key", _text(case_key_j)))
        return params_j, case_key_j, True, key, json.dumps(params, ensure_ascii=False)
    except (ValueError, TypeError):
        return params_j, case_key_j, False, None, None


def processes_row(processes_j, n_samples, n_contention) -> tuple:
    """(the keys…, ok, the sizes as stored): each distinct (processes, sample count, share count) once."""
    try:
        sizes = field_value("processes", _text(processes_j))
        processes_rule(sizes, int(n_samples))
        contention_rule(int(n_contention), len(sizes))
        return processes_j, n_samples, n_contention, True, sizes
    except (ValueError, TypeError):
        return processes_j, n_samples, n_contention, False, None


def warnings_row(warnings_j) -> tuple:
    try:
        return warnings_j, True, json.dumps(field_value("warnings", _text(warnings_j)), ensure_ascii=False)
    except (ValueError, TypeError):
        return warnings_j, False, None


def simple_ok(name: str, text) -> bool:
    try:
        field_value(name, _text(text))
        return True
    except (ValueError, TypeError):
        return False


# -- the checks over every row -------------------------------------------------------------------------------
def _finite_sql(col: str) -> str:
    optional = col in _NULLABLE  # stdev: None for one sample
    return f"({col} IS NULL OR isfinite({col}))" if optional else f"isfinite({col})"


_DERIVED_FINITE = " AND ".join(map(_finite_sql, _SUMMARY_FINITE))
_ELEMENTS_FINITE = (
    "(len(samples) = 0 OR (isfinite(list_min(samples)) AND isfinite(list_max(samples))))"
    if _finite(TypeAdapter(_ELEMENT))
    else "true"
)
_SHARES_BOUNDED = (
    f"(len(contention) = 0 OR (coalesce(list_min(contention), {_SHARE_LOW!r}) >= {_SHARE_LOW!r} "
    f"AND coalesce(list_max(contention), {_SHARE_HIGH!r}) <= {_SHARE_HIGH!r}))"
)
ROW_OK = f"""samples_typed AND summary_typed AND len(samples) <= {MAX_SAMPLES} AND {_ELEMENTS_FINITE}
  AND (n = 0 OR ({_DERIVED_FINITE})) AND contention_typed AND len(contention) <= {MAX_SHARES}
  AND {_SHARES_BOUNDED}"""
