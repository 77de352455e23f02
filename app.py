"""mpsbench dashboard: `mpsbench serve` (which runs `streamlit run app.py`).

`streamlit run` finds the st.App below and serves pages/navigation.py (the Streamlit script) together with the
HTTP API routes, so uploads are written by the dashboard's own process (DuckDB allows one writer).
"""
from __future__ import annotations

import asyncio
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st

SCRIPT = str(Path(__file__).resolve().with_name("pages") / "navigation.py")  # from any working directory


def api_routes() -> list:
    """The upload API and the JSON twins of the pages, mounted beside Streamlit, each under the one guard (no
    request ends in a plain-text 500; a store fault is a JSON 503)."""
    from api import health, query, sweeps, upload
    from api.errors import guard_routes

    return guard_routes(upload.ROUTES + health.ROUTES + query.ROUTES + sweeps.ROUTES)


def preload() -> None:
    """What every first page view would otherwise wait for, done while the server starts: the chart library's
    import (~0.3 s) and the store (opened, checked and migrated once per process). A store that cannot be
    opened is left for the pages and the API to report, as they do for every request."""
    import altair  # noqa: F401

    from db.store.engine import shared_store
    try:
        shared_store()
    except Exception as exc:  # noqa: BLE001 - reported by each page and API call that needs the store
        print(f"mpsbench: the store did not open at start: {exc}", file=sys.stderr)


@asynccontextmanager
async def _warm_start(_app):
    await asyncio.to_thread(preload)
    yield


app = st.App(SCRIPT, routes=api_routes(), lifespan=_warm_start)
