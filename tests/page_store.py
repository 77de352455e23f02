"""Page tests under Streamlit's AppTest: a store file (made, filled, named in MPSBENCH_DB, Streamlit's caches
cleared so a page reads it and not an earlier test's) and a page opened as a user's browser would."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from db.store.engine import open_store
from pages.signin import KEY as SESSION_TOKEN

SCRIPT = str(Path(__file__).resolve().parent.parent / "pages" / "navigation.py")
TIMEOUT_S = 90  # a loaded 2-core machine


def page_store(tmp_path: Path, monkeypatch, fill=lambda engine: None, name: str = "store.duckdb") -> Path:
    path = tmp_path / name
    engine = open_store(path)
    fill(engine)
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    return path


def open_page(file: str, query: dict[str, str] | None = None, token: str | None = None) -> AppTest:
    """pages/<file> with URL parameters `query`; signed in with `token` as pages/signin.py keeps it."""
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
    if token is not None:
        at.session_state[SESSION_TOKEN] = token
    at.run()
    at.switch_page(file)
    at.query_params.clear()  # as a browser's page change does (st.switch_page clears them)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()
