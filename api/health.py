"""GET /api/v1/health: the store's state. 200 with state "ok", or "degraded" (reads work; the last write failed,
e.g. a full disk, and none has succeeded since); 503 in the one JSON error shape, with Retry-After, when the store
cannot be opened or read (locked, damaged, disk full while reopening). Each call opens the store if it is closed,
so polling health is also what reopens it after a fault."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Route

from api.errors import error_response, json_ok
from bundle.schema import SCHEMA_VERSION
from db.store import faults
from db.store.engine import shared_store, store_path
from db.store.lake import is_lake
from db.store.tables import STORE_VERSION


def _count_runs() -> int:
    with shared_store().connect() as conn:
        return conn.execute(text("SELECT count(*) FROM runs")).scalar()


def _free_bytes() -> int | None:
    path = store_path()
    if path == ":memory:" or is_lake(path):  # a lake's data may be anywhere (s3://): unavailable, not this disk's
        return None
    try:
        return shutil.disk_usage(Path(path).resolve().parent).free
    except OSError:
        return None


async def health(request: Request):
    try:
        runs = await run_in_threadpool(_count_runs)
    except Exception as exc:  # a store fault is this route's answer, anything else the guard's
        fault = faults.as_store_error(exc)
        if fault is None:
            raise
        return error_response(fault)
    last = faults.last_fault()
    store = {"state": "degraded" if last else "ok", "free_bytes": await run_in_threadpool(_free_bytes)}
    if last:
        store["last_write_fault"] = last
    return json_ok({"schema_version": SCHEMA_VERSION, "store_version": STORE_VERSION, "runs": runs, "store": store})


ROUTES = [Route("/api/v1/health", health, methods=["GET"])]
