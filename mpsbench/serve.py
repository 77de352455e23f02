"""`mpsbench serve`: the dashboard and its HTTP API, started by Streamlit once the store, the sign-in secret, the
memory settings and the upload limit are checked (a bad one is an ERROR before the server binds a port)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DESCRIPTION = "the dashboard and its HTTP API (127.0.0.1, PORT or --port, default 8501)"


def _streamlit_argv(app_path: Path, address: str, port: int, upload_mb: int) -> list[str]:
    """`streamlit run` with the settings a shared server wants."""
    return [
        "streamlit",
        "run",
        str(app_path),
        "--server.headless",
        "true",
        "--server.address",
        address,
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--server.maxUploadSize",
        str(upload_mb),
        "--client.toolbarMode",
        "viewer",  # no Deploy button or developer menu for users
        "--client.showErrorDetails",
        "none",
    ]  # no traceback (server paths) reaches a browser


def main(args: list[str]) -> int:
    """`streamlit run app.py` with the settings a shared server wants (no file watcher, no usage stats)."""
    import argparse

    p = argparse.ArgumentParser(prog="mpsbench serve", description=DESCRIPTION)
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8501")))
    p.add_argument("--address", default="127.0.0.1", help="bind address (put a TLS reverse proxy in front)")
    opts = p.parse_args(args)
    from db.errors import StoreError
    from db.store.engine import shared_store, store_path
    from db.store.lake import is_lake

    if is_lake(store_path()):  # a wrong lake is refused here, naming the variable, not at the first request
        try:
            shared_store()
        except StoreError as err:
            print(f"ERROR: {err}")
            return 1
    from db.store.writers.sessions import SECRET_RULE, secret_refusal

    refused = secret_refusal()  # a team server starts with sign-in working, or not at all
    if refused:
        print(f"ERROR: {refused}; {SECRET_RULE}")
        return 1
    from db.memory import idle_seconds

    try:
        idle_seconds()  # read again by app.py's start: refused here, before the server starts
    except ValueError as err:
        print(f"ERROR: {err}")
        return 1
    import app  # the st.App: its path is what streamlit runs (it sets server.maxUploadSize too, app.apply_upload_limit)
    from db.views.actions.upload import upload_limit

    try:
        upload_mb = upload_limit()[1]  # Streamlit's own file limit, in whole MB: the one source, as app.py's
    except StoreError as err:
        print(f"ERROR: {err}")
        return 1

    from streamlit.web import cli as stcli

    sys.argv = _streamlit_argv(Path(app.__file__).resolve(), opts.address, opts.port, upload_mb)
    return stcli.main()
