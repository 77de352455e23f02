"""The page's store engine: the process's one engine (DuckDB has one writer), one per MPSBENCH_DB."""

from __future__ import annotations

import os

import streamlit as st
from sqlalchemy import Engine

from db.views.serving import shared_engine


@st.cache_resource(show_spinner=False)
def _engine(db_path: str) -> Engine:
    return shared_engine()  # one engine per process (DuckDB has one writer)


def engine() -> Engine:
    """The process's store engine, keyed on MPSBENCH_DB so a test with another file gets its own."""
    return _engine(os.environ.get("MPSBENCH_DB", ""))
