"""GET /api/v1/openapi.json: an OpenAPI 3.1 document of /api/v1, made from what the server mounts (every /api/v1
route and its methods, read from the app at request time, so a new route is listed at once) and from the views'
own parameter tuples (the same names each view's `only(...)` check allows, so the document and the checks cannot
drift); the upload's body is the bundle's JSON Schema (bundle.schema, the one source of truth).

Every rule the server checks on a parameter's form is stated from the checking code's own constants (enums,
patterns, ranges, lengths), so a request the document allows is never refused as malformed (a 400): what it may
still get is a 404, a well-formed value naming nothing stored (tests/test_api_fuzz.py fuzzes both ways)."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.errors import ApiNotFound, route_methods
from bundle.metrics import METRICS, RULE_LIMITS, RULES
from bundle.schema import Bundle
from db.query.browse import CORRECTNESS_METRICS
from db.query.compare.pivot import FILTERS as COMPARE_FILTERS
from db.query.params import THRESHOLD_PERCENT
from db.query.runs import RUN_FILTERS
from db.query.selectors import SELECTOR_PATTERN, SYNTAX
from db.review.comparison import SCOPES
from db.store.derived.aa_pairs import RATIO_METRICS
from db.views import correctness, matrix, memory, noise, trends
from db.views.sweeps import SWEEP_ID_PATTERN

PREFIX = "/api/v1"
_REF = "#/components/schemas/{model}"


def _param(
    name: str,
    description: str,
    schema: dict | None = None,
    required: bool = False,
    where: str = "query",
    example: Any = None,
) -> dict:
    out = {
        "name": name,
        "in": where,
        "required": required or where == "path",
        "description": description,
        "schema": schema or {"type": "string"},
    }
    if example is not None:
        out["example"] = example
    return out


def _side(name: str, required: bool = True) -> dict:
    return _param(
        name,
        f"selector: {SYNTAX}",
        {"type": "string", "pattern": SELECTOR_PATTERN},
        required=required,
        example="torch=2.14.1" if name == "baseline" else "torch=2.15.0rc1",
    )


def _enum(values) -> dict:
    return {"type": "string", "enum": list(values)}


def _comma_list(values) -> dict:
    """One or more of `values`, comma-separated (the server splits on commas, strips each and drops empties)."""
    one = "|".join(values)
    return {"type": "string", "pattern": f"^(?:{one})(?:,(?:{one}))*$"}


def _compare() -> list[dict]:
    return [
        _side("baseline"),
        _side("candidate"),
        _param("scope", "pair results on the same machine or the same chip", _enum(SCOPES)),
        _param("pool", "1: pool the builds a side spans, on purpose", _enum(["0", "1"])),
        *(
            _param(f, f"comma-separated metrics ({', '.join(METRICS)})", _comma_list(METRICS))
            if f == "metric"
            else _param(f, "comma-separated values")
            for f in COMPARE_FILTERS
        ),
    ]


def _names(names, schemas: dict | None = None, description: str = "exact value; empty or absent: any") -> list[dict]:
    """A query parameter per name: its schema from `schemas` where the view checks its form, else any string."""
    return [_param(n, description, (schemas or {}).get(n)) for n in names]


def _range(low: float, high: float) -> dict:
    return {"type": "number", "minimum": low, "maximum": high}


def _threshold() -> dict:
    low, high = THRESHOLD_PERCENT
    return _param("threshold", f"percent worse, {low:g}..{high:g} (5 = 5 %)", _range(low, high))


def _rule_number(low: float, high: float) -> str:
    """A decimal from low to high as a pattern (the rules' limits: db.review.review.check_rules)."""
    if low == 0:  # e.g. 0..1000: up to 999.x; no limit: up to 15 digits
        digits = 15 if high == float("inf") else len(str(int(high))) - 1
        return f"[0-9]{{1,{digits}}}(?:[.][0-9]{{1,6}})?"
    if low != 1 or high == float("inf"):
        raise ValueError(f"no pattern for a rule limit {low:g}..{high:g}: write one here")
    return f"[1-9][0-9]{{0,{len(str(int(high))) - 2}}}(?:[.][0-9]{{1,6}})?"


def _rules() -> dict:
    """rules=metric.field=value,… : each metric's own fields, each field's number in its limits."""
    items = [
        f"{name}[.]{field}={_rule_number(*RULE_LIMITS[field])}" for name, rule in RULES.items() for field in rule.fields
    ]
    one = "|".join(items)
    return _param(
        "rules",
        "per-metric rules: metric.field=value,… (e.g. memory_driver_peak.percent=10)",
        {"type": "string", "pattern": f"^(?:{one})(?:,(?:{one}))*$"},
    )


_NOISE_FILTER = {"type": "string", "maxLength": 200}


# path → (summary, query/path parameters); a mounted route missing here is listed with no parameters
GETS: dict[str, tuple[str, list[dict]]] = {
    "/api/v1/health": ("the store's state, versions and run count; 503 when the store cannot be read", []),
    "/api/v1/openapi.json": ("this document", []),
    "/api/v1/overview": ("the Overview page: machines x builds, results per status, open warnings", []),
    "/api/v1/runs": (
        "the Runs page's list",
        [
            *_names(RUN_FILTERS, {"tag": {"type": "string", "pattern": "^[^=]+="}}, "exact value (tag: key=value)"),
            _param("limit", "at most this many runs", {"type": "integer", "minimum": 1, "maximum": 10000}),
        ],
    ),
    "/api/v1/compare": ("per-case figures, significance and geomeans of candidate against baseline", _compare()),
    "/api/v1/regressions": (
        "the Regressions page's rows",
        [*_compare(), _threshold(), _rules()],
    ),
    "/api/v1/claims": (
        "published MPS claims beside what was measured: a row per matching case, with its figure's verdict",
        [_side("baseline", False), _side("candidate", False)],
    ),
    "/api/v1/trends": (
        "one case's points over builds, its change points and build annotations",
        _names(trends.FIELDS, {"metric": _enum(METRICS)}),
    ),
    "/api/v1/matrix": (
        "geomean cells of builds against a baseline",
        _names(matrix.PARAMS, {"metric": _enum(METRICS), "rows": _enum(matrix.ROWS)}),
    ),
    "/api/v1/memory": ("the three memory peaks per case and build", _names(memory.PARAMS)),
    "/api/v1/correctness": (
        "PSNR and max-error records against the CPU reference",
        _names(correctness.PARAMS, {"metric": _enum(CORRECTNESS_METRICS)}),
    ),
    "/api/v1/noise": (
        "A/A noise per group and the repeats a difference needs",
        _names(
            noise.PARAMS,
            {
                **{name: _NOISE_FILTER for name in noise.FILTERS},
                "metric": _enum(RATIO_METRICS),
                "precision": _range(*noise.PRECISION),
                "threshold": _range(*THRESHOLD_PERCENT),
            },
        ),
    ),
    "/api/v1/sweeps": ("sweeps", []),
    "/api/v1/sweeps/{sweep}": (
        "one sweep's builds, runs, A/A pairs and comparisons",
        [
            _param(
                "sweep",
                "the sweep's id (its bundles' `sweep` tag): 6-32 hex digits",
                {"type": "string", "pattern": SWEEP_ID_PATTERN},
                where="path",
            )
        ],
    ),
}

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
    from db.store.writers.retract import MAX_REASON, RUN_ID_PATTERN

    return {
        "summary": "retract a run (the uploading token or an admin token): it leaves every comparison",
        "parameters": [
            _param(
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
    return params + [_param(n, "path segment", where="path") for n in re.findall(r"{(\w+)}", path) if n not in named]


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
