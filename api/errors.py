"""The one JSON error shape of the whole API: {"ok": false, "status", "error", "errors": [{"field", "rule"}]},
and the one guard every route runs under (app.api_routes), so no request ends in a plain-text 500 or a traceback."""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

from db.errors import Problem, StoreError
from db.views.serving import store_fault, write_succeeded

log = logging.getLogger("mpsbench.api")
RETRY_AFTER_S = "5"  # a 503 (store fault) is worth retrying soon: the store is reopened on the next request


def error_response(err: StoreError) -> JSONResponse:
    body = {
        "ok": False,
        "status": err.status,
        "error": err.message,
        "errors": [{"field": p.field, "rule": p.rule} for p in err.problems],
    }
    headers = {"Retry-After": RETRY_AFTER_S} if err.status == 503 else None
    return JSONResponse(body, status_code=err.status, headers=headers)


def json_ok(payload: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse({"ok": True} | payload, status_code=status)


def guarded(endpoint: Callable) -> Callable:
    """A route's endpoint under the one guard: StoreError → its JSON error; a store fault (disk full, locked,
    damaged, invalidated) → JSON 503 naming it (db.store.faults reopens the store); anything else → a JSON 500
    without details (logged here with its traceback). A write that succeeds clears the last write fault."""

    @functools.wraps(endpoint)
    async def route(request: Request) -> Response:
        try:
            response = await endpoint(request)
        except StoreError as err:
            return error_response(err)
        except Exception as exc:  # the boundary: nothing leaves as a traceback
            fault = store_fault(exc)
            if fault is not None:
                return error_response(fault)
            log.exception("%s %s failed", request.method, request.url.path)
            return error_response(
                StoreError(
                    500,
                    "internal error (logged on the server)",
                    [Problem("server", "an unexpected error; nothing was stored")],
                )
            )
        if request.method not in ("GET", "HEAD") and response.status_code < 300:
            write_succeeded()
        return response

    return route


def guard_routes(routes: list[BaseRoute]) -> list[BaseRoute]:
    """One route per path with every method's endpoint guarded; a method the path does not take is a JSON 405
    naming the allowed ones (Starlette's own is plain text). Other route kinds pass as they are."""
    by_path: dict[str, dict[str, Callable]] = {}
    others: list[BaseRoute] = []
    for r in routes:
        if isinstance(r, Route):
            for method in r.methods or ("GET",):
                by_path.setdefault(r.path, {}).setdefault(method, guarded(r.endpoint))
        else:
            others.append(r)
    return [GuardedRoute(path, methods) for path, methods in by_path.items()] + others + [ApiNotFound()]


class ApiNotFound(Route):
    """Any other path under /api/v1 (last in the list): the JSON 404, not the dashboard's HTML page."""

    def __init__(self):
        super().__init__("/api/v1/{rest:path}", self._missing, name="api-not-found")
        self.methods = None  # every method

    async def _missing(self, request: Request) -> Response:
        return error_response(
            StoreError(
                404,
                "no such API route (GET /api/v1/openapi.json lists them)",
                [Problem("path", "must be one of the routes in /api/v1/openapi.json")],
            )
        )


class GuardedRoute(Route):
    """A path's endpoints by method. It matches every method (Starlette would answer another with a plain-text
    405) and answers one it does not take with the JSON 405; `methods` still lists what it takes."""

    def __init__(self, path: str, endpoints: dict[str, Callable]):
        self.endpoints = endpoints
        super().__init__(path, self._dispatch, methods=sorted(endpoints), name=path)

    def matches(self, scope):
        match, child = super().matches(scope)
        return (Match.FULL if match == Match.PARTIAL else match), child

    async def handle(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)

    async def _dispatch(self, request: Request) -> Response:
        endpoint = self.endpoints.get(request.method)
        if endpoint is None:
            allowed = ", ".join(route_methods(self))
            response = error_response(
                StoreError(
                    405,
                    f"method {request.method[:20]} not allowed here; use {allowed}",
                    [Problem("method", f"one of {allowed}")],
                )
            )
            response.headers["Allow"] = allowed
            return response
        return await endpoint(request)


def route_methods(route: Route) -> tuple[str, ...]:
    """The methods a route answers, without the HEAD Starlette adds to every GET."""
    return tuple(sorted(m for m in route.methods or () if m != "HEAD"))
