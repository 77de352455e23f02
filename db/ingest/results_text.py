"""The bundle's results array as text: cut out of the body, written to scratch files, parsed by DuckDB.

The array is cut out without parsing it in Python (it must be the document's last key, as the collector
writes it; db.ingest.core puts it there otherwise). A long one is cut in two between elements, and each piece
is parsed on its own core (DuckDB reads one JSON array file on one thread), every field as JSON text and typed
in the read's pipeline (db.ingest.schema_checks.typed_select). Each file starts with TEMPLATE, from which the reader
takes its columns, so it refuses any unknown or repeated key after it. Then, beside the judging, a regular
expression over the same files looks for what DuckDB's lenient reader lets through and no parsed value shows:
a trailing comma (NaN and Infinity it re-writes as such, and the field checks refuse them). A match, even
inside a string, only asks for a stricter look (db.ingest.core): it may cost time, never accept what the
schema refuses. The reader gives NULL for a null and for an absent key alike: explicit_nulls tells them apart
where it matters.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import duckdb

from db.ingest import schema_checks

SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # memory-backed temp files where there are
SPLIT_BYTES = 32 << 20  # an array this long is parsed as two pieces
PARTS = "_ingest_parts"  # the attached in-memory database
_WS = b" \t\r\n"
_BETWEEN = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_OBJECT_SIZE = 1 << 30


def _object_size(path: str) -> int:
    """No element is longer than its file: DuckDB's reader reserves twice this against the store's memory_limit
    (db.store.pool.apply_limits), so a fixed 1 GiB made every ingest need 2 GiB of it, per piece."""
    return min(_OBJECT_SIZE, max(os.path.getsize(path) + 1, 1 << 20))


# The first element of every file: every field with a non-null value (the reader infers its columns from it)
TEMPLATE = json.dumps(dict.fromkeys(schema_checks.FIELDS, 0)).encode()
TRAILING_COMMA = r",[ \t\r\n]*[\]}]"


def split(data: bytes) -> tuple[bytes, memoryview] | None:
    """(the header's JSON with results=[], the bytes from the results value to the last "]"), or None.

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
    return data[:prefix] + b"[]}", memoryview(data)[prefix : end + 1]


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
    except RecursionError:  # nesting deeper than Python's parser goes: the schema's parser refuses it
        return -1
    except (IndexError, ValueError):
        return None


def _skip(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i


def _pieces(array: memoryview, whole: bool) -> list[memoryview]:
    """The array's elements text (no brackets), whole or in two, cut after the first "}, {" past the middle.
    A cut inside a string or a nested object leaves a piece DuckDB cannot read as an array, so it raises and
    the caller reads it again whole: a cut that reads is between elements."""
    body = array[1:-1]
    cut = _BETWEEN.search(body, len(body) // 2) if len(body) >= SPLIT_BYTES and not whole else None
    return [body] if cut is None else [body[: cut.start() + 1], body[cut.end() - 1 :]]


def _write(path: str, body: memoryview) -> str:
    empty = len(body) < 4096 and not bytes(body).strip(_WS)
    with open(path, "wb") as f:
        f.write(b"[" + TEMPLATE + (b"]" if empty else b","))
        if not empty:
            f.write(body)
            f.write(b"]")
    return path


def _files(paths: list[str]) -> str:
    return "[" + ", ".join(f"'{p}'" for p in paths) + "]"  # scratch files this process named


def _scan(paths: list[str]) -> bool:
    """Whether a trailing comma may hide in the files' text."""
    con = duckdb.connect()  # its own database: this scan runs beside the reads
    try:
        return con.sql(
            f"SELECT coalesce(bool_or(regexp_matches(content, '{TRAILING_COMMA}')), false) "
            f"FROM read_text({_files(paths)})"
        ).fetchall()[0][0]
    finally:
        con.close()


def _parse(con, n: int, path: str) -> int:
    """Piece n into table part{n} of PARTS; its element count (TEMPLATE not counted)."""
    source = (
        f"read_json('{path}', format='array', records=true, sample_size=1, maximum_depth=1, "
        f"maximum_object_size={_object_size(path)})"
    )
    try:
        con.execute(f"CREATE OR REPLACE TABLE {PARTS}.part{n} AS {schema_checks.typed_select(source)}")
        return con.execute(f"SELECT count(*) - 1 FROM {PARTS}.part{n}").fetchall()[0][0]
    finally:
        con.close()


def _scan_into(scan: Future, paths: list[str], folder: str) -> None:
    """The scan's answer into `scan`, once its files are gone."""
    try:
        try:
            found = _scan(paths)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting ingest
        scan.set_exception(exc)
    else:
        scan.set_result(found)


def parse(raw_conn, array: memoryview, whole: bool = False) -> Future:
    """Parse the array into temp view _typed (i: the result's index, then typed_select's columns). Returns a
    future of whether a trailing comma may hide: the scan starts once the pieces are parsed, so it takes the
    cores the judging leaves idle rather than the parse's (0.3 s of 7 at a million results on two cores).
    DuckDB's errors propagate (the caller asks the schema what is wrong)."""
    raw_conn.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {PARTS}")
    folder = tempfile.mkdtemp(dir=SCRATCH)
    try:
        paths = [_write(os.path.join(folder, f"part{n}.json"), body) for n, body in enumerate(_pieces(array, whole))]
        cons = [raw_conn.duplicate() for _ in paths]
        with ThreadPoolExecutor(len(paths)) as pool:
            counts = list(pool.map(_parse, cons, range(len(paths)), paths))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    starts = [sum(counts[:n]) for n in range(len(counts))]
    raw_conn.execute(
        "CREATE TEMP VIEW _typed AS "
        + " UNION ALL ".join(
            f"SELECT {start} + rowid - 1 AS i, * FROM {PARTS}.part{n} WHERE rowid > 0" for n, start in enumerate(starts)
        )
    )
    scan: Future = Future()  # its own thread, not a pool kept across calls: nothing for a fork to copy half-done
    threading.Thread(target=_scan_into, args=(scan, paths, folder), name="mpsbench-comma-scan").start()
    return scan


def _objects(array: memoryview, where: str, params: list, limit: int | None = None) -> list[tuple]:
    with tempfile.NamedTemporaryFile(suffix=".json", dir=SCRATCH) as f:
        f.write(array)
        f.flush()
        con = duckdb.connect()
        try:
            size = _object_size(f.name)
            return con.execute(
                f"SELECT i, json FROM (SELECT row_number() OVER () - 1 AS i, json FROM "
                f"read_json_objects('{f.name}', format='array', maximum_object_size={size}))"
                f" WHERE {where} ORDER BY i" + (f" LIMIT {int(limit)}" if limit else ""),
                params,
            ).fetchall()
        finally:
            con.close()


def objects(array: memoryview, indices: list[int]) -> dict[int, str]:
    """The JSON text of the results at these indices (one more read of the array, on its own connection)."""
    return dict(_objects(array, "list_contains(?, i)", [indices]))


def may_hide_null(raw_conn, array: memoryview) -> bool:
    """Whether a field that may be absent but never null could be null in some row: it reads as NULL somewhere
    (absent and null read alike) and the text holds `"<that field>": null` or any \\u escape (an escaped key
    could spell the field). A bundle of schema 1 or 2 lacks `contention` (and `processes`) in every row: a second
    read of every object to tell absent from null (explicit_nulls) cost 12 s of a million-result ingest; these
    searches of the text cost ~0.3 s a field."""
    test = ", ".join(
        f'count(*) FILTER (WHERE "{k}" IS NULL)'
        if k not in schema_checks.BULK
        else f'count(*) FILTER (WHERE "{k}_absent")'
        for k in schema_checks.NEVER_NULL
    )
    counts = raw_conn.execute(f"SELECT {test} FROM _typed").fetchall()[0]
    read_null = [k for k, n in zip(schema_checks.NEVER_NULL, counts) if n]
    if not read_null:
        return False
    if _ESCAPE.search(array):
        return True
    return any(re.search(rb'"' + k.encode() + rb'"\s*:\s*null', array) for k in read_null)


_ESCAPE = re.compile(rb"\\u")


def explicit_nulls(array: memoryview, limit: int) -> list[int]:
    """The first results holding a null where Result allows absence only (schema_checks.NEVER_NULL)."""
    where = " OR ".join(f"json_type(json, '$.{k}') = 'NULL'" for k in schema_checks.NEVER_NULL)
    return [i for i, _ in _objects(array, where, [], limit)]


def drop(raw_conn) -> None:
    raw_conn.execute("DROP VIEW IF EXISTS _typed")
    raw_conn.execute(f"DETACH DATABASE IF EXISTS {PARTS}")
