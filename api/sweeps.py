"""JSON twin of the Sweeps page: GET /api/v1/sweeps (the list) and GET /api/v1/sweeps/{sweep} (builds, runs in
order, A/A pairs, the comparisons with their selectors). Same view functions as the page (db.views.browse.sweeps)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.query import _engine
from api.stream import streamed_json
from db.views.browse.sweeps import sweep_detail, sweeps


async def sweeps_route(request: Request) -> Response:
    frame = await run_in_threadpool(sweeps, _engine())
    return streamed_json({"ok": True, "sweeps": frame})


async def sweep_route(request: Request) -> Response:
    found = await run_in_threadpool(sweep_detail, _engine(), request.path_params["sweep"])
    return streamed_json(
        {
            "ok": True,
            "sweep": found.sweep,
            "builds": found.builds,
            "runs": found.runs,
            "aa_pairs": found.aa_pairs,
            "comparisons": found.comparisons,
        }
    )


ROUTES = [
    Route("/api/v1/sweeps", sweeps_route, methods=["GET"]),
    Route("/api/v1/sweeps/{sweep}", sweep_route, methods=["GET"]),
]
