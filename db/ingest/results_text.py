"""The bundle's results array as text: cut out of the body, written to scratch files, parsed by DuckDB.

The array is cut out without parsing it in Python (it must be the document's last key, as the collector
writes it). A long one is cut in two between elements, and each piece is parsed on its own core (DuckDB reads
one JSON array file on one thread), every field as JSON text. Each file starts with rules.TEMPLATE, from which
the reader takes its columns, so it refuses any unknown or repeated key after it. Meanwhile a regular
expression over the same files looks for what the reader cannot see: a null where Result allows absence only.
Each piece's values are typed in its read's pipeline (db.ingest.rules) and land in an in-memory database
attached for the ingest, where any connection to the store can write.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor

import duckdb

from db.ingest import rules

SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # memory-backed temp files where there are
SPLIT_BYTES = 32 << 20  # an array this long is parsed as two pieces
PARTS = "_ingest_parts"  # the attached in-memory database
_WS = b" \t\r\n"
_BETWEEN = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


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


def _pieces(array: memoryview) -> list[memoryview]:
    """The array's elements text (no brackets), whole or in two, cut after the first "}, {" past the middle.
    A cut inside a string or a nested object leaves a piece DuckDB cannot read as an array, so it raises and
    the reference path runs: a cut that reads is between elements."""
    body = array[1:-1]
    cut = _BETWEEN.search(body, len(body) // 2) if len(body) >= SPLIT_BYTES else None
    return [body] if cut is None else [body[:cut.start() + 1], body[cut.end() - 1:]]


def _write(path: str, body: memoryview) -> str:
    empty = len(body) < 4096 and not bytes(body).strip(_WS)
    with open(path, "wb") as f:
        f.write(b"[" + rules.TEMPLATE + (b"]" if empty else b","))
        if not empty:
            f.write(body)
            f.write(b"]")
    return path


def _forbidden_null(paths: list[str]) -> bool:
    con = duckdb.connect()  # its own database: this scan runs beside the reads
    try:
        return con.sql(rules.forbidden_null_sql(paths)).fetchall()[0][0]
    finally:
        con.close()


def _parse(con, n: int, path: str) -> int:
    """Piece n into table part{n} of PARTS; its element count (TEMPLATE not counted)."""
    try:
        con.execute(rules.read_sql(f"{PARTS}.part{n}", path))
        return con.execute(f"SELECT count(*) - 1 FROM {PARTS}.part{n}").fetchall()[0][0]
    finally:
        con.close()


def parse(raw_conn, array: memoryview) -> bool:
    """Parse the array into temp view _typed (db.ingest.rules.typed_view_sql); False where a forbidden null
    may hide. DuckDB's errors propagate (the reference path says what is wrong)."""
    raw_conn.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {PARTS}")
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp, ThreadPoolExecutor(3) as pool:
        paths = [_write(os.path.join(tmp, f"part{n}.json"), body) for n, body in enumerate(_pieces(array))]
        scan = pool.submit(_forbidden_null, paths)
        parsed = [pool.submit(_parse, raw_conn.duplicate(), n, path) for n, path in enumerate(paths)]
        counts = [p.result() for p in parsed]
        forbidden = scan.result()
    raw_conn.execute(rules.typed_view_sql(PARTS, counts))
    return not forbidden


def objects(array: memoryview, indices: list[int]) -> dict[int, str]:
    """The JSON text of the results at these indices (one more read of the array, on its own connection)."""
    with tempfile.NamedTemporaryFile(suffix=".json", dir=SCRATCH) as f:
        f.write(array)
        f.flush()
        con = duckdb.connect()
        try:
            return dict(con.execute(rules.objects_sql(f.name), [indices]).fetchall())
        finally:
            con.close()


def drop(raw_conn) -> None:
    raw_conn.execute("DROP VIEW IF EXISTS _typed")
    raw_conn.execute(f"DETACH DATABASE IF EXISTS {PARTS}")
