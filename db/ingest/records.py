"""`mpsbench ingest` of PyTorch OSS benchmark records (bundle.pytorch_oss): a file of records — a JSON list, or
JSON-each-row as pytorch/test-infra's uploader reads it — becomes one run's bundle, then goes the one ingest path
(db.ingest.core.ingest_bundle). A bundle file is told apart by its first character and first line, without
parsing a large bundle twice."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from bundle.pytorch_oss import RecordError, from_records, looks_like_records
from db.errors import Problem, StoreError

FIRST_LINE_LIMIT = 1 << 20  # a record line is small; a first line longer than this is a one-line bundle


def _records(raw: bytes) -> list[Any] | None:
    text = raw.lstrip()
    if text.startswith(b"["):
        try:
            doc = json.loads(raw)
        except ValueError:
            return None  # not JSON: the bundle path words the refusal
        return doc if looks_like_records(doc) else None
    first, _, _ = text.partition(b"\n")
    if not text.startswith(b"{") or len(first) > FIRST_LINE_LIMIT or b'"benchmark"' not in first:
        return None
    try:
        head = json.loads(first)
    except ValueError:
        return None
    if not looks_like_records([head]):
        return None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError:
                raise StoreError(
                    422,
                    f"line {n}: not JSON (a JSON-each-row file has one record a line)",
                    [Problem(f"line {n}", "not JSON")],
                ) from None
            rows += row if isinstance(row, list) else [row]
    return rows


def records_bundle(raw: bytes, source: str, modified: datetime) -> tuple[bytes, list[str]] | None:
    """The file as a bundle (UTF-8 JSON) and the records not stored with why; None: not PyTorch OSS records."""
    records = _records(raw)
    if records is None:
        return None
    try:
        bundle, skipped = from_records(records, raw, source, modified)
    except RecordError as exc:
        raise StoreError(422, f"not a run: {exc}", [Problem(exc.field, exc.rule)]) from None
    if not bundle["results"]:
        raise StoreError(
            422,
            f"no record measures an mpsbench metric ({len(skipped)} skipped)",
            [Problem("records", s) for s in skipped[:20]],
        )
    return json.dumps(bundle, ensure_ascii=False).encode(), skipped
