"""Upload API: POST /api/v1/runs (one bundle as JSON); GET /api/v1/health is api/health.py.

Auth: `Authorization: Bearer <token>`, tokens from env MPSBENCH_UPLOAD_TOKENS (comma separated, compared in
constant time). Safe default when no token is configured: uploads are accepted only from loopback clients
(127.0.0.1 / ::1); others get 401 telling the operator to set MPSBENCH_UPLOAD_TOKENS.
Body limit: env MPSBENCH_MAX_UPLOAD_MB (default 64) -> 413, on the body as sent and, for a gzip body
(Content-Encoding: gzip), on the decompressed bundle too (read in bounded steps: a small bomb never expands in
memory). Statuses: 201 new, 200 already present, 400 not UTF-8 JSON, 401 token, 409 conflicting run_id,
413 too large, 415 not application/json or an encoding other than gzip, 422 invalid bundle.
"""
from __future__ import annotations

import hmac
import os
import zlib

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from api.errors import error_response, json_ok
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import shared_store

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def _tokens() -> list[str]:
    return [t.strip() for t in os.environ.get("MPSBENCH_UPLOAD_TOKENS", "").split(",") if t.strip()]


def _limit() -> int:
    return int(float(os.environ.get("MPSBENCH_MAX_UPLOAD_MB", "64")) * 1024 * 1024)


def _authorise(request: Request) -> None:
    tokens = _tokens()
    if not tokens:
        host = request.client.host if request.client else ""
        if host not in LOOPBACK:
            raise StoreError(401, "uploads from other machines need a token: set MPSBENCH_UPLOAD_TOKENS on the server")
        return
    given = request.headers.get("authorization", "")
    presented = given[7:].encode() if given.lower().startswith("bearer ") else b""
    matched = False
    for t in tokens:  # check every token so timing does not tell which one nearly matched
        matched |= hmac.compare_digest(presented, t.encode())
    if not matched:
        raise StoreError(401, "missing or wrong upload token (Authorization: Bearer <token>)")


async def _read_body(request: Request) -> bytes:
    limit = _limit()
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise StoreError(413, f"bundle is larger than the limit of {limit} bytes (MPSBENCH_MAX_UPLOAD_MB)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise StoreError(413, f"bundle is larger than the limit of {limit} bytes (MPSBENCH_MAX_UPLOAD_MB)")
        chunks.append(chunk)
    return b"".join(chunks)


def _decoded(request: Request, body: bytes, limit: int) -> bytes:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise StoreError(415, f"Content-Encoding {encoding!r} is not supported; send the bundle as is or gzip")
    inflate = zlib.decompressobj(wbits=31)  # 31: gzip framing
    try:
        out = inflate.decompress(body, limit + 1)
    except zlib.error as exc:
        raise StoreError(400, f"body is not valid gzip: {exc}") from None
    if len(out) > limit:
        raise StoreError(413, f"the decompressed bundle is larger than the limit of {limit} bytes "
                              "(MPSBENCH_MAX_UPLOAD_MB)")
    if not inflate.eof:
        raise StoreError(400, "body is not valid gzip: the stream is truncated")
    return out


async def upload_run(request: Request):
    try:
        _authorise(request)
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise StoreError(415, f"Content-Type must be application/json, not {kind or 'missing'!r}")
        body = _decoded(request, await _read_body(request), _limit())
        outcome = await run_in_threadpool(ingest_bundle, shared_store(), body)
    except StoreError as err:
        return error_response(err)
    payload = {"run_id": outcome.run_id, "created": outcome.created, "results": outcome.n_results}
    return json_ok(payload, 201 if outcome.created else 200)


ROUTES = [Route("/api/v1/runs", upload_run, methods=["POST"])]
