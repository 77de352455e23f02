"""Shared page plumbing: the one cached engine, data-version-keyed result caching, empty state, safe errors.

Strings from bundles (tags, messages, names) are rendered through st.dataframe / st.text / st.code only:
they are data, never Markdown or HTML.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import altair as alt
import pandas as pd
import streamlit as st
from altair.utils.core import infer_vegalite_type_for_pandas
from sqlalchemy import Engine

from db.errors import StoreError
from db.store.read import read_data_version

EMPTY_HINT = ("No runs yet: run `python -m collector run …` on a machine (it pushes its bundle here), "
              "or upload a bundle on the Upload page.")


@st.cache_resource(show_spinner=False)
def _engine(db_path: str) -> Engine:
    from db.store.engine import shared_store  # one engine per process (DuckDB has one writer)

    return shared_store()


def engine() -> Engine:
    """The process's store engine, keyed on MPSBENCH_DB so a test with another file gets its own."""
    return _engine(os.environ.get("MPSBENCH_DB", ""))


def data_version() -> Any:
    return read_data_version(engine())


@st.cache_data(show_spinner=False, max_entries=256)
def _cached(name: str, version: Any, args: tuple, _query: Callable) -> Any:
    return _query(engine(), *args)


def load(query: Callable, *args: Any) -> Any:
    """query(engine, *args), cached until the store's data version changes (a new run was ingested)."""
    name = f"{query.__module__}.{query.__qualname__}:{os.environ.get('MPSBENCH_DB', '')}"
    return _cached(name, data_version(), args, query)


def guarded(render: Callable[[], None]) -> None:
    """Run a page body; a store error is shown once as st.error, not as a traceback."""
    try:
        render()
    except StoreError as exc:
        st.error(str(exc))


def stop_if_empty(frame: pd.DataFrame, what: str = "runs") -> None:
    if frame.empty:
        st.info(EMPTY_HINT if what == "runs" else f"No {what} stored yet.")
        st.stop()


def query_choice(label: str, key: str, options: list[str]) -> str:
    """A selectbox whose choice lives in st.query_params[key], so a pasted link reproduces the view."""
    choices = [""] + sorted({str(o) for o in options if o is not None and not pd.isna(o)})
    current = st.query_params.get(key, "")
    index = choices.index(current) if current in choices else 0
    chosen = st.selectbox(label, choices, index=index, key=f"qp_{key}", format_func=lambda v: v or "(any)")
    if chosen:
        st.query_params[key] = chosen
    elif key in st.query_params:
        del st.query_params[key]
    return chosen


def tooltips(data: pd.DataFrame, *fields: str) -> list[alt.Tooltip]:
    """Tooltips for plain fields, typed as Altair would infer them from `data`, as channel objects: given bare
    names, Altair rebuilds its schema lookup for each (~8 ms a field, ~0.2 s for the Compare page's charts)."""
    return [alt.Tooltip(name, type=infer_vegalite_type_for_pandas(data[name])) for name in fields]
