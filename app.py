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

from db.views.serving import limit_arenas

SCRIPT = str(Path(__file__).resolve().with_name("pages") / "navigation.py")  # from any working directory


def api_routes() -> list:
    """The upload API and the JSON twins of the pages, mounted beside Streamlit, each under the one guard (no
    request ends in a plain-text 500; a store fault is a JSON 503)."""
    from api import health, openapi, query, sweeps, upload
    from api.auth import protect_routes
    from api.errors import guard_routes

    # inside the guard: Host/Origin, then the read token where one is configured
    return guard_routes(protect_routes(upload.ROUTES + health.ROUTES + query.ROUTES + sweeps.ROUTES + openapi.ROUTES))


def default_page_alias() -> list:
    """/overview answers as every other page's path does: Streamlit serves the default page at / only and shows
    "Page not found" for its own url path. A relative redirect keeps a configured base path and the query."""
    from starlette.responses import RedirectResponse
    from starlette.routing import Route

    def to_default(request):
        query = request.url.query
        return RedirectResponse("./" + (f"?{query}" if query else ""), status_code=307)

    return [Route("/overview", to_default)]


def announce_token() -> None:
    """With no writer token configured, make (or reuse) the local one beside the store and print it with a
    sign-in link, as Jupyter does: the operator can upload at once, no one else can. A token file that is not
    the server user's own private, non-empty file is refused, and the reason printed instead."""
    from db.views.actions.access import configured, local_token, local_token_path, local_token_refusal

    roles = configured()
    if roles["upload"] or roles["admin"]:
        return
    token = local_token()
    if token is None:
        print(
            f"mpsbench: no MPSBENCH_UPLOAD_TOKENS set and {local_token_refusal() or 'no local token'}; "
            f"writes are refused until that is fixed",
            file=sys.stderr,
            flush=True,
        )
        return
    port = st.config.get_option("server.port") or 8501
    print(
        f"mpsbench: no MPSBENCH_UPLOAD_TOKENS set; writes need the local token (name 'local'), kept in "
        f"{local_token_path() or 'memory'}:\n    http://127.0.0.1:{port}/upload?token={token}\n"
        f"  (for mpsbench push: export MPSBENCH_TOKEN={token})",
        file=sys.stderr,
        flush=True,
    )


def preload() -> None:
    """What every first page view would otherwise wait for, done while the server starts: the chart library's
    import (~0.3 s) and the store (opened, checked and migrated once per process). A store that cannot be
    opened is left for the pages and the API to report, as they do for every request."""
    import altair  # noqa: F401

    from db.views.serving import serve_reads, shared_engine, watch_idle

    try:
        watch_idle()  # an idle server forgets its memoised reviews and gives the memory back (db.memory)
    except ValueError as exc:  # a bare `streamlit run app.py` (mpsbench serve refuses to start on it)
        print(f"mpsbench: no idle release: {exc}", file=sys.stderr)
    try:
        engine = shared_engine()
    except Exception as exc:  # noqa: BLE001 - reported by each page and API call that needs the store
        print(f"mpsbench: the store did not open at start: {exc}", file=sys.stderr)
        serve_reads(None)
    else:
        from db.views.actions.upload import summarise_soon

        serve_reads(engine)  # opened (and migrated) first: DuckDB's memory for reads from now on
        summarise_soon(engine)  # the summaries a stopped server left behind (db.store.writers.upkeep; never raises)
    try:
        announce_token()
    except Exception as exc:  # noqa: BLE001 - e.g. an unreadable tokens file: writes are refused until fixed
        print(f"mpsbench: no upload token: {exc}", file=sys.stderr)
    from db.views.actions.access import secret_refusal

    refused = secret_refusal()  # `mpsbench serve` refuses to start on it; a bare `streamlit run app.py` says it
    if refused:
        print(f"mpsbench: sign-in sessions are off: {refused}", file=sys.stderr, flush=True)
    try:
        from api.notify import prime

        prime()  # the watched review's regressions recorded now, so the first upload's new ones are posted
    except Exception as exc:  # noqa: BLE001 - notifications are never what stops a server from starting
        print(f"mpsbench: notifications off: {exc}", file=sys.stderr)


@asynccontextmanager
async def _warm_start(_app):
    await asyncio.to_thread(preload)
    yield
    await asyncio.to_thread(close_store)


def close_store() -> None:
    """At a clean stop (SIGTERM, Ctrl-C): the store checkpointed, so its `.duckdb` alone holds every acknowledged
    run (db.store.engine.checkpoint_shared); a failure is said, and the WAL replays it at the next start."""
    from db.views.serving import checkpoint

    try:
        checkpoint()
    except Exception as exc:  # noqa: BLE001 - stopping anyway; DuckDB replays the WAL at the next open
        print(
            f"mpsbench: the store was not checkpointed at stop (its WAL is replayed at the next start): {exc}",
            file=sys.stderr,
        )


def _middleware() -> list:
    from starlette.middleware import Middleware

    from api.auth import HostCheck
    from api.signin_link import SignInLink
    from api.stream import InFlight

    # the first listed runs first; InFlight outermost: a request counts until everything it started has ended
    return [Middleware(InFlight), Middleware(HostCheck), Middleware(SignInLink)]


def _script_error(exc: Exception) -> bool:
    """What pages.parts.guard.guarded cannot wrap (a widget callback): the same short message, logged; True keeps
    Streamlit's traceback out of the page."""
    from pages.parts.guard import page_failed

    page_failed(exc)
    return True


def apply_upload_limit() -> None:
    """Streamlit's upload limit (server.maxUploadSize) from the server's one limit, MPSBENCH_MAX_UPLOAD_MB
    (db.views.actions.upload.upload_limit): set here, where `mpsbench serve` and a bare `streamlit run app.py` both pass,
    so neither says "200MB" (Streamlit's default) nor refuses a bundle the API takes."""
    from db.views.actions.upload import upload_limit

    try:
        st.config.set_option("server.maxUploadSize", upload_limit()[1])
    except Exception as exc:  # noqa: BLE001 - a bad MPSBENCH_MAX_UPLOAD_MB: the API and the page name it per request
        print(f"mpsbench: upload limit: {exc}", file=sys.stderr)


apply_upload_limit()
limit_arenas()  # a few malloc arenas, set before the server's threads allocate (db.memory)
app = st.App(
    SCRIPT,
    routes=api_routes() + default_page_alias(),
    middleware=_middleware(),
    lifespan=_warm_start,
    on_script_error=_script_error,
)
