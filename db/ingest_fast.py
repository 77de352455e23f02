"""The fast ingest path: DuckDB reads the results array, db.result_rules checks it set-wise, rows are staged.

Only the header (everything but `results`) goes through pydantic. The results array is cut out of the body
without parsing it in Python (it must be the document's last key, as the collector writes it) and read by
DuckDB twice at once: values on the store's connection, key shapes on a private one (the second core).
Any doubt — the array not last, DuckDB refusing the text, any rule broken — returns None and the caller runs
the reference path, which gives the exact refusal or accepts what only pydantic's lax mode allows.
"""
from __future__ import annotations

import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pyarrow as pa

from bundle.schema import Bundle
from db import result_rules as rules

SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # memory-backed temp file where there is one
_WS = b" \t\r\n"


def split(data: bytes) -> tuple[dict, memoryview] | None:
    """(header dict with results=[], the bytes from the results value to the last "]"), or None.

    Where results is not the last key, the cut holds more than one JSON value: DuckDB's reader refuses it."""
    dec, head_len = json.JSONDecoder(), 1 << 16
    while True:
        start = _results_offset(dec, data[:head_len].decode("utf-8", "ignore"))
        if start is not None or head_len >= len(data):
            break
        head_len *= 4
    if start is None or start < 0:
        return None
    prefix = len(data[:head_len].decode("utf-8", "ignore")[:start].encode())
    end = _before(data, len(data), b"}")  # the document ends: results array, then only the closing brace
    end = _before(data, end, b"]") if end > prefix else -1
    if end <= prefix:
        return None
    try:
        header = json.loads(data[:prefix] + b"[]}")
    except ValueError:
        return None
    return header, memoryview(data)[prefix:end + 1]


def _before(data: bytes, end: int, char: bytes) -> int:
    """Index of `char` as the last non-space byte before `end` (no copy of the body), or -1."""
    while end > 0 and data[end - 1] in _WS:
        end -= 1
    return end - 1 if end > 0 and data[end - 1] == char[0] else -1


def _results_offset(dec: json.JSONDecoder, text: str) -> int | None:
    """Character offset of the results value in text; -1: no results key / not an object; None: text too short."""
    try:
        i = _skip(text, 0)
        if text[i] != "{":
            return -1
        i = _skip(text, i + 1)
        while text[i] == '"':
            key, i = dec.raw_decode(text, i)
            i = _skip(text, i)
            if text[i] != ":":
                return -1
            i = _skip(text, i + 1)
            if key == "results":
                return i if text[i] == "[" else -1
            _, i = dec.raw_decode(text, i)
            i = _skip(text, i)
            if text[i] != ",":
                return -1
            i = _skip(text, i + 1)
        return -1
    except (IndexError, ValueError):
        return None


def _skip(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i


def _shape_ok(path: str) -> tuple[int, bool]:
    con = duckdb.connect()
    try:
        count, ok = con.sql(rules.shape_sql(path)).fetchall()[0]
        return count, ok
    finally:
        con.close()


def stage(raw_conn, data: bytes) -> tuple[Bundle, int] | None:
    """Stage the bundle's rows as temp table _final on raw_conn; (header, n_results), or None: use the reference."""
    parts = split(data)
    if parts is None:
        return None
    header, array = parts
    try:
        bundle = Bundle.model_validate(header)
    except ValueError:
        return None
    with tempfile.NamedTemporaryFile(suffix=".json", dir=SCRATCH) as f:
        f.write(array)
        f.flush()
        with ThreadPoolExecutor(1) as pool:  # the shape scan on the other core, while this one stages
            shape = pool.submit(_shape_ok, f.name)
            try:
                raw_conn.execute(rules.stage_sql(f.name))
                checked = _checked(raw_conn, bundle.run_id)
            finally:
                count, keys_ok = shape.result()
    return (bundle, count) if keys_ok and checked == count else None


def _checked(raw_conn, run_id: str) -> int:
    """Rows that pass every row and summary rule, staged as _final (-1: some row broke one)."""
    raw_conn.register("_unit_arrow", pa.table(dict(zip(("metric", "given", "factor", "canon"),
                                                       zip(*rules.unit_rows())))))
    raw_conn.execute("CREATE TEMP TABLE _units AS SELECT * FROM _unit_arrow")
    raw_conn.unregister("_unit_arrow")
    if raw_conn.execute(rules.ROW_RULES_SQL).fetchall()[0][0]:
        return -1
    _distinct_table(raw_conn, "_params", "params", ("text", "key", "params_json", "ok"), rules.params_row)
    _distinct_table(raw_conn, "_warnings", "warnings", ("text", "warnings_json", "ok"), rules.warnings_row)
    raw_conn.execute(rules.DERIVE_SQL.format(run=run_id, rows=rules.ROWS_SQL))
    if raw_conn.execute(rules.SUMMARY_RULES_SQL).fetchall()[0][0]:
        return -1
    # a row whose params, warnings or case_key broke a rule dropped out of _final's joins
    return raw_conn.execute("SELECT count(*) FROM _final").fetchall()[0][0]


def _distinct_table(raw_conn, name: str, column: str, names: tuple, fn) -> None:
    """Judge each distinct JSON text once in Python (params and warnings repeat across rows)."""
    texts = [r[0] for r in raw_conn.execute(f"SELECT DISTINCT {column} FROM _typed").fetchall()]
    rows = [fn(t) for t in texts] or [tuple([None] * len(names))]
    raw_conn.register("_distinct_arrow", pa.table(dict(zip(names, map(list, zip(*rows))))))
    raw_conn.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM _distinct_arrow")
    raw_conn.unregister("_distinct_arrow")


def drop_staging(raw_conn) -> None:
    for t in ("_typed", "_units", "_params", "_warnings", "_rows", "_final"):  # _rows: the reference path's
        raw_conn.execute(f"DROP TABLE IF EXISTS {t}")
