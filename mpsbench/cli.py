"""`mpsbench COMMAND …`: dispatches to the layer that owns the command, importing only that layer (a Mac that
only collects never imports the store or the web)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

COLLECTOR = {
    "run": "run workloads and write a bundle",
    "list": "workloads, cases and metrics with units",
    "show": "a bundle as a table",
    "sweep": "run the plan under several torch builds, interleaved in rounds",
    "push": "send bundles to a team server (or its outbox)",
}
STORE = {
    "ingest": "store bundles (or PyTorch OSS benchmark records) in the local DuckDB file",
    "export": "stored runs as PyTorch OSS benchmark records (--format pytorch-oss), a file per run",
    "compare": "baseline → candidate review (summary, regressions); --fail-on gates CI with exit 1",
    "info": "the store's path, version and row counts",
    "retract": "take a run out of every comparison, with a reason (local store, or --url server)",
    "backup": "export the store to a new folder (Parquet)",
    "restore": "import a backup into a new store",
    "migrate-store": "copy the store file into a new DuckLake (--to ducklake:postgres:…)",
}
WEB = {"serve": "the dashboard and its HTTP API (127.0.0.1, PORT or --port, default 8501)"}
BOTH = {
    "confirm": "rerun a review's suspected and unconfirmed cases here, both builds interleaved, until decided",
    "bisect": "find the first bad build between a good and a bad one (nightlies, releases or your envs)",
}


def usage() -> str:
    rows = [f"  {name:<13} {text}" for group in (COLLECTOR, STORE, BOTH, WEB) for name, text in group.items()]
    return "usage: mpsbench COMMAND [options]   (mpsbench COMMAND --help for each)\n\ncommands:\n" + "\n".join(rows)


def serve(args: list[str]) -> int:
    """`streamlit run app.py` with the settings a shared server wants (no file watcher, no usage stats)."""
    import argparse

    p = argparse.ArgumentParser(prog="mpsbench serve", description=WEB["serve"])
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
    from pages.widgets import upload_limit

    try:
        upload_mb = upload_limit()[1]  # Streamlit's own file limit, in whole MB: the one source, as app.py's
    except StoreError as err:
        print(f"ERROR: {err}")
        return 1

    from streamlit.web import cli as stcli

    sys.argv = [
        "streamlit",
        "run",
        str(Path(app.__file__).resolve()),
        "--server.headless",
        "true",
        "--server.address",
        opts.address,
        "--server.port",
        str(opts.port),
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
    return stcli.main()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[0] if args else ""
    if command in COLLECTOR:
        from collector.cli import main as collector_main

        return collector_main(args)
    if command in STORE:
        from db.cli import main as store_main

        return store_main(args)
    if command in WEB:
        return serve(args[1:])
    if command in BOTH:  # collects with the collector, judges with the store's review
        if command == "bisect":
            from mpsbench.bisect import main as bisect_main

            return bisect_main(args[1:])
        from mpsbench.confirm import main as confirm_main

        return confirm_main(args[1:])
    print(usage(), file=sys.stderr if command not in ("-h", "--help") else sys.stdout)
    return 0 if command in ("-h", "--help") else 2
