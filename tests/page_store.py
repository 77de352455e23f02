"""A store file for page tests: made, filled, named in MPSBENCH_DB, with Streamlit's caches cleared so a page
run under AppTest reads it and not an earlier test's."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from db.store.engine import open_store


def page_store(tmp_path: Path, monkeypatch, fill=lambda engine: None, name: str = "store.duckdb") -> Path:
    path = tmp_path / name
    engine = open_store(path)
    fill(engine)
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    return path
