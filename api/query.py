"""JSON twins of the pages: GET /api/v1/<page> calls the page's own view function (db/views) with the URL's
parameters, so a page and its twin answer the same question the same way. Every number goes out beside its unit
field (or a column named with its unit); errors in the one JSON error shape (api/errors.py)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pandas as pd
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.errors import error_response
from api.stream import streamed_json
from db.errors import Problem, StoreError
from db.query.runs import RUN_FILTERS, list_runs
from db.query.selectors import parse_selector
from db.review.release.summary import review_answer
from db.review.review import Review
from db.views.compare import compare_answer
from db.views.correctness import correctness_view
from db.views.matrix import matrix_view
from db.views.memory import memory_view
from db.views.noise import noise_view
from db.views.overview import overview
from db.views.trends import trend_view


def _engine():
    from db.store.engine import shared_store

    return shared_store()


def answer_fields(answer: Any) -> dict[str, Any]:
    """A view's answer (a dataclass) as the fields of its JSON: its frames written as their records
    (db.query.json_values.records), a slice at a time (api.stream), its other fields as they are."""
    return {f.name: getattr(answer, f.name) for f in dataclasses.fields(answer)}


def _frames(frame: pd.DataFrame) -> pd.DataFrame:
    """An answer's table as it is: api.stream writes its records."""
    return frame


def twin(view: Callable) -> Callable:
    """GET route of a page's JSON twin: view(engine, query parameters) → {"ok": true, …the answer's fields}."""

    async def route(request: Request) -> Response:
        try:
            answer = await run_in_threadpool(view, _engine(), dict(request.query_params))
        except StoreError as exc:
            return error_response(exc)
        return streamed_json({"ok": True, **answer_fields(answer)})

    return route


async def compare_route(request: Request) -> Response:
    try:
        review = Review.from_params(dict(request.query_params))  # the summary's threshold and rules, if given
        answer = await run_in_threadpool(compare_answer, _engine(), review, _frames)
    except StoreError as exc:
        return error_response(exc)
    return streamed_json({"ok": True, **answer})


async def runs_route(request: Request) -> Response:
    params = dict(request.query_params)
    try:
        unknown = [k for k in params if k not in RUN_FILTERS + ("limit",)]
        if unknown:
            raise StoreError(
                400, f"{unknown[0]}: unknown filter", [Problem(unknown[0], f"allowed: {', '.join(RUN_FILTERS)}, limit")]
            )
        frame = await run_in_threadpool(list_runs, _engine(), params)
    except StoreError as exc:
        return error_response(exc)
    return streamed_json({"ok": True, "runs": frame})


async def regressions_route(request: Request) -> Response:
    try:
        review = Review.from_params(dict(request.query_params))
        answer = await run_in_threadpool(review_answer, _engine(), review, _frames)
    except StoreError as exc:
        return error_response(exc)
    return streamed_json({"ok": True, **answer})


async def claims_route(request: Request) -> Response:
    from db.views.claims import evaluate_claims

    params = dict(request.query_params)
    try:
        for field in ("baseline", "candidate"):
            if params.get(field):
                parse_selector(params[field], field)
        frame = await run_in_threadpool(evaluate_claims, _engine(), params.get("baseline"), params.get("candidate"))
    except StoreError as exc:
        return error_response(exc)
    return streamed_json({"ok": True, "claims": frame})


ROUTES = [
    Route("/api/v1/claims", claims_route, methods=["GET"]),
    Route("/api/v1/overview", twin(overview), methods=["GET"]),
    Route("/api/v1/trends", twin(trend_view), methods=["GET"]),
    Route("/api/v1/matrix", twin(matrix_view), methods=["GET"]),
    Route("/api/v1/memory", twin(memory_view), methods=["GET"]),
    Route("/api/v1/correctness", twin(correctness_view), methods=["GET"]),
    Route("/api/v1/noise", twin(noise_view), methods=["GET"]),
    Route("/api/v1/regressions", regressions_route, methods=["GET"]),
    Route("/api/v1/compare", compare_route, methods=["GET"]),
    Route("/api/v1/runs", runs_route, methods=["GET"]),
]
