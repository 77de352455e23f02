"""`mpsbench ingest` of PyTorch OSS benchmark records (bundle.pytorch_oss.reading): a file of records — a JSON list, or
JSON-each-row as pytorch/test-infra's uploader reads and writes them — becomes one run's bundle, then goes the one
ingest path (db.ingest.core.ingest_bundle). A bundle file is told apart by its first bytes, without reading it.

The file is streamed, never held whole: a record at a time is cut out of the bytes (a line, or a list element
found by its brackets outside strings), parsed by pydantic-core (the bundle reader's parser: strict JSON, UTF-8)
and converted, and only the stored results' JSON is kept, in a temporary file, until the bundle is made. So the
peak is the bundle path's own for those results, not the Python objects of every record (6× the file before).
The bounds are the bundle path's (db.ingest.limits): nesting past MAX_NESTING levels (checked on the bytes before
parsing) and a record larger than one upload may be are refused, naming the record."""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pydantic_core

from bundle.pytorch_oss.metrics import MetricMap, RecordError
from bundle.pytorch_oss.reading import RunFromRecords
from db.errors import Problem, StoreError
from db.ingest.limits import MAX_NESTING, max_upload_bytes

FIRST_LINE_LIMIT = 1 << 20  # a record line is small; a first line longer than this is a one-line bundle
CHUNK = 8 << 20
_WS = b" \t\r\n"
# the next bracket outside a string (what a list element's end is found by): every other byte and every whole
# string (escapes included) skipped inside the expression, so Python sees only brackets; a lone quote captured is
# a string the bytes read so far cut short
_TOKEN = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+(["\[\]{}])', re.S)  # possessive: no backtracking
# a record's `benchmark` object: no bundle has one (its params are scalars)
_BENCHMARK_KEY = re.compile(rb'(?<!\\)"benchmark"\s*:\s*\{')


class _Bytes:
    """The file's bytes from `at`, read in chunks, hashed as they go by (a foreign run's id is the file's hash)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.digest, self.buf, self.pos = f, hashlib.sha256(), b"", 0

    def more(self, at_least: int = 0) -> bool:
        chunk = self.f.read(max(CHUNK, at_least))
        if not chunk:
            return False
        self.digest.update(chunk)
        self.buf, self.pos = self.buf[self.pos :] + chunk, 0
        return True

    def peek(self) -> int | None:
        """The next byte that is not white space (not consumed), or None at the end."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return None


def _parse(text: bytes, where: str) -> Any:
    try:
        return pydantic_core.from_json(text)
    except ValueError as exc:
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise RecordError(where, f"not UTF-8 ({bad.reason} at byte {bad.start}): records are UTF-8 JSON") from None
        if "recursion limit" in str(exc):
            raise RecordError(where, f"nested deeper than {MAX_NESTING} levels (the bundle reader's limit)") from None
        raise RecordError(where, f"not JSON: {exc}") from None


def _element(src: _Bytes, i: int, limit: int) -> bytes:
    """The bytes of the list element at src.pos (an object), its nesting bounded as it is scanned."""
    where = f"records[{i}]"
    if src.peek() != ord("{"):
        raise RecordError(where, "must be a JSON object (a PyTorch OSS record)")
    while True:
        depth, end, at = 0, None, src.pos
        # match, not finditer: a search that finds no bracket would start again at every byte after it
        while (m := _TOKEN.match(src.buf, at)) is not None:
            at = m.end()
            c = src.buf[m.start(1)]
            if c == 0x22:  # a string the bytes read so far cut short
                break
            depth += 1 if c in b"[{" else -1
            if depth > MAX_NESTING:
                raise RecordError(where, f"nested deeper than {MAX_NESTING} levels (the bundle reader's limit)")
            if depth == 0:
                end = m.end()
                break
        pending = (end or len(src.buf)) - src.pos
        if pending > limit:
            raise RecordError(
                where, f"a record over {limit >> 20} MB (MPSBENCH_MAX_UPLOAD_MB: a record is one upload at most)"
            )
        if end is not None:
            text, src.pos = src.buf[src.pos : end], end
            return text
        if not src.more(pending):  # read at least as much again: each rescan of the record costs what it has
            raise RecordError(where, "the file ends inside this record (not JSON)")


def _list_records(src: _Bytes, limit: int) -> Iterator[Any]:
    src.peek()
    src.pos += 1  # the "[" _kind saw
    if src.peek() == ord("]"):
        src.pos += 1
    else:
        i = 0
        while True:
            yield _parse(_element(src, i, limit), f"records[{i}]")
            i += 1
            c = src.peek()
            src.pos += 1
            if c == ord("]"):
                break
            if c is None:
                raise RecordError("records", "the file ends before the list's closing ] (not JSON)")
            if c != ord(","):
                raise RecordError(f"records[{i - 1}]", "must be followed by , or ] (not JSON)")
    if src.peek() is not None:
        raise RecordError("records", "text after the list's closing ] (not JSON)")


def _row_records(src: _Bytes, limit: int) -> Iterator[Any]:
    line = 0
    while True:
        end = src.buf.find(b"\n", src.pos)
        while end < 0:
            pending = len(src.buf) - src.pos
            if pending > limit:
                raise RecordError(f"line {line + 1}", f"a line over {limit >> 20} MB (a record is one upload at most)")
            if not src.more(pending):
                end = len(src.buf)
                break
            end = src.buf.find(b"\n", src.pos)
        if src.pos >= len(src.buf):
            return
        if end - src.pos > limit:
            raise RecordError(f"line {line + 1}", f"a line over {limit >> 20} MB (a record is one upload at most)")
        line += 1
        text, src.pos = src.buf[src.pos : end], end + 1
        if not text.strip(_WS):
            continue
        row = _parse(text, f"line {line}")
        if not isinstance(row, (dict, list)):
            raise RecordError(f"line {line}", "must be a JSON object (a record) or a list of them")
        yield from row if isinstance(row, list) else [row]


def _kind(path: Path) -> str | None:
    """ "list" or "rows" for a file of PyTorch OSS records, None for anything else (a bundle: its reader words any
    refusal). A list whose first element is an object is records unless it parses as one without `benchmark` and
    `metric`; a first line that names both and starts an object is a record line."""
    with path.open("rb") as f:
        head = f.read(FIRST_LINE_LIMIT + 1)
        text = head.lstrip(_WS)
        if text.startswith(b"["):
            f.seek(0)
            src = _Bytes(f)
            src.peek()
            src.pos += 1
            try:
                first = _parse(_element(src, 0, max_upload_bytes()), "records[0]")
            except RecordError as exc:
                return "list" if exc.rule != "must be a JSON object (a PyTorch OSS record)" else None
            return "list" if isinstance(first, dict) and "benchmark" in first and "metric" in first else None
    if not text.startswith(b"{") or not _BENCHMARK_KEY.search(head):
        return None
    first, newline, _ = text.partition(b"\n")
    if not newline and len(text) > FIRST_LINE_LIMIT:
        return "rows"  # a first record longer than the head: the records reader reads it, within its bound
    try:
        row = _parse(first, "line 1")
    except RecordError:
        return "rows"  # starts like a record and is not JSON: the records reader names the line
    return "rows" if isinstance(row, dict) and "benchmark" in row and "metric" in row else None


def records_bundle(
    path: Path, source: str, modified: datetime, given: MetricMap
) -> tuple[bytearray, int, list[str]] | None:
    """The file as a bundle (UTF-8 JSON, results last), how many records were not stored and why (the first
    reasons); None: not PyTorch OSS records. A StoreError names what is refused."""
    kind = _kind(path)
    if kind is None:
        return None
    limit = max_upload_bytes()
    try:
        with path.open("rb") as f, tempfile.TemporaryFile() as sink:
            src = _Bytes(f)
            run = RunFromRecords(source, modified, given, sink)
            for record in (_list_records if kind == "list" else _row_records)(src, limit):
                run.add(record)
            head = run.head(src.digest.hexdigest())
            size = sink.tell()
            sink.seek(0)
            body = bytearray(len(head) + size + 2)  # made once: concatenating would copy the results twice
            body[: len(head)] = head
            view = memoryview(body)
            done = len(head)
            while done < len(head) + size:
                done += sink.readinto(view[done : len(head) + size]) or 0
            body[-2:] = b"]}"
    except RecordError as exc:
        raise StoreError(422, f"not a run: {exc}", [Problem(exc.field, exc.rule)]) from None
    if not run.results:
        raise StoreError(
            422,
            f"no record measures an mpsbench metric ({run.skipped} skipped)",
            [Problem("records", s) for s in run.skipped_reasons()[:20]],
        )
    return body, run.skipped, run.skipped_reasons()
