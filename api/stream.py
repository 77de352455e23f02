"""A JSON answer written a slice of rows at a time (the bytes JSONResponse would send for the same content, without
ever holding a whole table as Python dicts or the whole body as one string), and every request counted in flight
until its answer is sent, so the process gives its memory back when the last one ends (db.memory).

A machine-scope Compare of two builds on a 10 M-result store is ~45,000 case rows of ~45 columns: as one list of
dicts, then one JSON string, then its UTF-8 bytes, the answer alone took several hundred MB on top of the review
it was made from. Here each DataFrame value (db.query.json_values.records is the one conversion) is written ROWS rows at
a time, every other value as json.dumps writes it, with JSONResponse's own settings; after the answer is sent the
freed memory is handed back to the system."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Iterator

import pandas as pd
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from db.views.serving import read_ended, read_started, records, settle

ROWS = 2000  # rows of a table per piece: ~2 MB of JSON for Compare's widest rows


def _dumps(value: Any) -> str:
    # starlette.responses.JSONResponse.render's settings: the same bytes
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))


def pieces(value: Any) -> Iterator[str]:
    """`value` as JSON text in pieces; DataFrames (at any depth of dicts) as their records, ROWS at a time."""
    if isinstance(value, pd.DataFrame):
        yield "["
        for start in range(0, len(value), ROWS):
            text = _dumps(records(value.iloc[start : start + ROWS]))
            yield ("," if start else "") + text[1:-1]
        yield "]"
    elif isinstance(value, dict) and _has_frame(value):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ("," if i else "") + _dumps(str(key)) + ":"
            yield from pieces(item)
        yield "}"
    else:
        yield _dumps(value)


def _has_frame(value: dict) -> bool:
    return any(isinstance(v, pd.DataFrame) or (isinstance(v, dict) and _has_frame(v)) for v in value.values())


def _body(content: dict) -> Iterator[bytes]:
    buffered: list[str] = []
    size = 0
    for piece in pieces(content):
        buffered.append(piece)
        size += len(piece)
        if size >= 1 << 20:  # ~1 MB a write
            yield "".join(buffered).encode("utf-8")
            buffered, size = [], 0
    content.clear()  # the frames were the caller's to share; this answer's references go now
    if buffered:
        yield "".join(buffered).encode("utf-8")


def streamed_json(content: dict, status_code: int = 200) -> StreamingResponse:
    """`content` (a dict whose values may be DataFrames) as a JSON response, written in pieces."""
    return StreamingResponse(_body(dict(content)), status_code=status_code, media_type="application/json")


class InFlight:
    """ASGI middleware: every /api/ request is in flight (db.memory) until its answer and its background work
    (an upload's upkeep) are done; the last one to end settles the process, on a worker thread."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/api/"):
            await self.app(scope, receive, send)
            return
        read_started()
        try:
            await self.app(scope, receive, send)
        finally:
            if read_ended():
                await asyncio.to_thread(settle)
