"""GET /api/v1/openapi.json: an OpenAPI 3.1 document of /api/v1, made from what the server mounts (every /api/v1
route and its methods, read from the app at request time, so a new route is listed at once) and from the views'
own parameter tuples (the same names each view's `only(...)` check allows, so the document and the checks cannot
drift: api/openapi_params.py); the upload's body is the bundle's JSON Schema (bundle.schema, the one source of truth).

Every rule the server checks on a parameter's form is stated from the checking code's own constants (enums,
patterns, ranges, lengths), so a request the document allows is never refused as malformed (a 400): what it may
still get is a 404, a well-formed value naming nothing stored (tests/test_api_fuzz.py fuzzes both ways)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.errors import ApiNotFound, route_methods
from api.openapi_params import GETS, param
from bundle.schema import Bundle

PREFIX = "/api/v1"
_REF = "#/components/schemas/{model}"


_ERROR = {
    "type": "object",
    "required": ["ok", "status", "error", "errors"],
    "properties": {
        "ok": {"const": False},
        "status": {"type": "integer"},
        "error": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["field", "rule"],
                "properties": {"field": {"type": "string"}, "rule": {"type": "string"}},
            },
        },
    },
}
_OK = {"type": "object", "required": ["ok"], "properties": {"ok": {"const": True}}}


def _json(ref: str) -> dict:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _errors(*codes: int) -> dict:
    return {str(c): {"description": _MEANING[c], "content": _json("Error")} for c in codes}


_MEANING = {
    400: "a parameter or the body breaks a rule (named in errors)",
    401: "no or a wrong token",
    403: "the token may not do this (a read-only token; a retraction: not the run's uploader nor an admin)",
    404: "nothing stored matches",
    409: "run_id stored with other content, or already retracted",
    413: "body too large",
    415: "not application/json, or an encoding other than gzip",
    422: "invalid input: the bundle, or the retraction's run_id or reason (fields named)",
    500: "an unexpected server error (logged; never the client's input)",
    503: "the store is unavailable (disk full, locked, damaged) or the server is out of memory, threads or file "
    "handles; retry after Retry-After seconds",
}


def _get(summary: str, params: list[dict]) -> dict:
    return {
        "summary": summary,
        "parameters": params,
        "responses": {"200": {"description": "the answer", "content": _json("Ok")}, **_errors(400, 404, 503)},
    }


def _upload() -> dict:
    return {
        "summary": "upload one result bundle (docs/bundle.md)",
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="Bundle")}}},
        },
        "responses": {
            "201": {"description": "stored", "content": _json("Ok")},
            "200": {"description": "already present (same run_id, same content)", "content": _json("Ok")},
            **_errors(400, 401, 403, 409, 413, 415, 422, 503),
        },
    }


# a character neither JSON Schema's \s nor Python's str.strip takes for white space: a reason the schema allows is
# one the route's strip() does not leave empty
_NOT_BLANK = r"[^\s\u001c-\u001f\u0085]"


def _retract() -> dict:
    """The route's own rules (db.store.writers.retract.check_request) as the schema, so a request the schema allows is not
    refused for its run_id or reason; the 422 that a broken rule gets, documented."""
    from db.views.actions.upload import MAX_REASON, RUN_ID_PATTERN

    return {
        "summary": "retract a run (the uploading token or an admin token): it leaves every comparison",
        "parameters": [
            param(
                "run_id",
                "the run's id: 32 lower-case hex digits",
                where="path",
                schema={"type": "string", "pattern": RUN_ID_PATTERN},
            )
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["reason"],
                        "properties": {
                            "reason": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_REASON,
                                "pattern": _NOT_BLANK,
                                "description": f"why: not blank, at most {MAX_REASON} characters",
                            }
                        },
                    }
                }
            },
        },
        "responses": {
            "200": {"description": "retracted: who, when, why", "content": _json("Ok")},
            **_errors(400, 401, 403, 404, 409, 413, 422, 503),
        },
    }


OTHERS = {("post", "/api/v1/runs"): _upload, ("delete", "/api/v1/runs/{run_id}"): _retract}


def _path_params(path: str, params: list[dict]) -> list[dict]:
    """Every {name} in the path as a path parameter (a route not described here still validates)."""
    named = {p["name"] for p in params if p["in"] == "path"}
    return params + [param(n, "path segment", where="path") for n in re.findall(r"{(\w+)}", path) if n not in named]


def _operation(path: str, method: str) -> dict:
    if (method, path) in OTHERS:
        return OTHERS[method, path]()
    summary, params = GETS.get(path, ("", []))
    params = _path_params(path, params)
    if method == "get":
        return _get(summary, params)
    return {
        "summary": summary,
        "parameters": params,
        "responses": {"200": {"description": "done", "content": _json("Ok")}, **_errors(400, 401, 404, 503)},
    }


def document(routes) -> dict:
    """The OpenAPI document of the mounted /api/v1 routes (starlette Route objects)."""
    schemas = Bundle.model_json_schema(ref_template=_REF)
    components = {**schemas.pop("$defs", {}), "Bundle": schemas, "Error": _ERROR, "Ok": _OK}
    paths: dict[str, dict] = {}
    for route in routes:
        if isinstance(route, Route) and route.path.startswith(PREFIX) and not isinstance(route, ApiNotFound):
            for method in sorted(m.lower() for m in route_methods(route)):
                paths.setdefault(route.path, {})[method] = _operation(route.path, method)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mpsbench API",
            "version": "1",
            "description": "Every error has one shape: {ok: false, status, error, errors: [{field, rule}]}.",
        },
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": components},
    }


async def openapi_route(request: Request) -> JSONResponse:
    return JSONResponse(document(request.app.routes))


ROUTES = [Route("/api/v1/openapi.json", openapi_route, methods=["GET"])]
