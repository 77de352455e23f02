"""GET /api/v1/health: the store's state. 200 with state "ok", or "degraded" (reads work; the last write failed,
e.g. a full disk, and none has succeeded since); 503 in the one JSON error shape, with Retry-After, when the store
cannot be opened or read (locked, damaged, disk full while reopening). Each call opens the store if it is closed,
so polling health is also what reopens it after a fault."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from api.errors import error_response, json_ok
from bundle.schema import SCHEMA_VERSION
from db.views.health import STORE_VERSION, count_runs, free_bytes
from db.views.serving import last_fault, store_fault


async def health(request: Request):
    try:
        runs = await run_in_threadpool(count_runs)
    except Exception as exc:  # a store fault is this route's answer, anything else the guard's
        fault = store_fault(exc)
        if fault is None:
            raise
        return error_response(fault)
    last = last_fault()
    store = {"state": "degraded" if last else "ok", "free_bytes": await run_in_threadpool(free_bytes)}
    if last:
        store["last_write_fault"] = last
    return json_ok({"schema_version": SCHEMA_VERSION, "store_version": STORE_VERSION, "runs": runs, "store": store})


ROUTES = [Route("/api/v1/health", health, methods=["GET"])]
