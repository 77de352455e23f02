"""JSON twin of the Sweeps page: GET /api/v1/sweeps (the list) and GET /api/v1/sweeps/{sweep} (builds, runs in
order, A/A pairs, the comparisons with their selectors). Same view functions as the page (db.views.sweeps)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.errors import error_response, json_ok
from api.query import _engine, records
from db.errors import StoreError
from db.views.sweeps import sweep_detail, sweeps


async def sweeps_route(request: Request) -> JSONResponse:
    try:
        frame = await run_in_threadpool(sweeps, _engine())
    except StoreError as exc:
        return error_response(exc)
    return json_ok({"sweeps": records(frame)})


async def sweep_route(request: Request) -> JSONResponse:
    try:
        found = await run_in_threadpool(sweep_detail, _engine(), request.path_params["sweep"])
    except StoreError as exc:
        return error_response(exc)
    return json_ok(
        {
            "sweep": found.sweep,
            "builds": records(found.builds),
            "runs": records(found.runs),
            "aa_pairs": records(found.aa_pairs),
            "comparisons": records(found.comparisons),
        }
    )


ROUTES = [
    Route("/api/v1/sweeps", sweeps_route, methods=["GET"]),
    Route("/api/v1/sweeps/{sweep}", sweep_route, methods=["GET"]),
]
