"""mpsbench dashboard: `streamlit run app.py`.

`streamlit run` finds the st.App below and serves pages/navigation.py (the Streamlit script) together with the
HTTP API routes, so uploads are written by the dashboard's own process (DuckDB allows one writer).
"""
from __future__ import annotations

import importlib
import sys

import streamlit as st

SCRIPT = "pages/navigation.py"


def api_routes() -> list:
    """The upload API and the JSON twins of the pages, mounted beside Streamlit."""
    routes: list = []
    for module in ("api.upload", "api.query"):
        try:
            routes += importlib.import_module(module).ROUTES
        except ModuleNotFoundError as exc:  # only while a part is not yet written; anything else is a real error
            if exc.name not in (module, "api"):
                raise
            print(f"mpsbench: {module} is missing; its routes are not mounted", file=sys.stderr)
    return routes


app = st.App(SCRIPT, routes=api_routes())
