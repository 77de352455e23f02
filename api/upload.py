"""Upload API: POST /api/v1/runs (one bundle as JSON); GET /api/v1/health is api/health.py.

Auth: `Authorization: Bearer <token>`, a named token (db.store.writers.tokens: MPSBENCH_UPLOAD_TOKENS name=token pairs,
or the one generated at first start); the run records the token's name (uploaded_by). No token, no write, from
loopback too. DELETE /api/v1/runs/{run_id} with {"reason": "…"} retracts a run (its uploader or an admin).
Body limit: env MPSBENCH_MAX_UPLOAD_MB (default 64) -> 413, on the body as sent and, for a gzip body
(Content-Encoding: gzip), on the decompressed bundle too (read in bounded steps: a small bomb never expands in
memory). Statuses: 201 new, 200 already present, 400 not UTF-8 JSON, 401 token, 409 conflicting run_id or a retracted run,
413 too large, 415 not application/json or an encoding other than gzip, 422 invalid bundle.
A stored new run is queued for the release review's webhook (api/notify.py, MPSBENCH_NOTIFY_URL) after the
ingest: the answer never waits for the review or the post.
"""

from __future__ import annotations

import json
import zlib

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from api.auth import writer
from api.errors import json_ok
from api.notify import notify_upload
from db.errors import Problem, StoreError
from db.views.actions.upload import ingest, max_upload_bytes, retract_run, summarise_soon
from db.views.serving import shared_engine


def _limit() -> int:
    return max_upload_bytes()


def _words(limit: int) -> str:
    """The limit as the Upload page states it (db.views.actions.upload.upload_limit): MiB and bytes."""
    return f"{limit / 2**20:.4g} MiB ({limit:,} bytes)"


RETRACT_BODY_BYTES = 64 * 1024


async def _read_body(request: Request, limit: int, too_large: str) -> bytes:
    """The body, read in the chunks it arrives in and refused (413) as soon as it passes `limit`: a body that is
    too large is never held in memory, whatever its Content-Length says (or does not say)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise StoreError(413, too_large)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise StoreError(413, too_large)
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
        raise StoreError(
            413, f"the decompressed bundle is larger than the limit of {_words(limit)} (MPSBENCH_MAX_UPLOAD_MB)"
        )
    if not inflate.eof:
        raise StoreError(400, "body is not valid gzip: the stream is truncated")
    return out


async def upload_run(request: Request):
    """POST /api/v1/runs: one bundle stored for the token's name (a refusal is the guard's JSON error, api.errors)."""
    who = writer(request)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise StoreError(415, f"Content-Type must be application/json, not {kind or 'missing'!r}")
    limit = _limit()
    body = _decoded(
        request,
        await _read_body(
            request, limit, f"bundle is larger than the limit of {_words(limit)} (MPSBENCH_MAX_UPLOAD_MB)"
        ),
        limit,
    )
    outcome = await run_in_threadpool(ingest, shared_engine(), body, who.name)
    notify_upload(outcome, who.name)  # queued only: the release review is judged and posted after this answer
    payload = {"run_id": outcome.run_id, "created": outcome.created, "results": outcome.n_results}
    return _then_upkeep(json_ok(payload, 201 if outcome.created else 200), outcome.created)


def _then_upkeep(response, wrote: bool):
    """The written run's group summarised after this answer is sent (db.store.writers.upkeep), never before it."""
    if wrote:
        response.background = BackgroundTask(summarise_soon, shared_engine())
    return response


async def retract(request: Request):
    """DELETE /api/v1/runs/{run_id}, body {"reason": "…"}: 200 with who/when/why, 401/403 token, 404, 409 twice."""
    who = writer(request)
    body = await _read_body(request, RETRACT_BODY_BYTES, "a retraction body is at most 64 KiB")
    try:
        doc = json.loads(body.decode("utf-8")) if body else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise StoreError(
            400, 'body must be UTF-8 JSON: {"reason": "…"}', [Problem("reason", "send a JSON object with a reason")]
        ) from None
    reason = doc.get("reason") if isinstance(doc, dict) else None
    done = await run_in_threadpool(
        retract_run, shared_engine(), request.path_params["run_id"], reason, who.name, who.role == "admin"
    )
    return _then_upkeep(json_ok(done), True)


ROUTES = [
    Route("/api/v1/runs", upload_run, methods=["POST"]),
    Route("/api/v1/runs/{run_id}", retract, methods=["DELETE"]),
]
