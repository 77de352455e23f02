"""A page's views cached for its reruns (a widget's change), keyed on the store's data version: a new run ingested
is a new version, so a cached view is never stale."""

from __future__ import annotations

import os
from typing import Any, Callable

import streamlit as st

from db.views.serving import data_version, on_idle
from pages.parts.engine import engine

# a page's views, pickled per (view, arguments, data version), for its reruns (a widget's change): a Memory view of
# a 10 M-result store pickles to 25 MB, a Correctness view to 10 MB, so a few, for two minutes, and none past an
# idle spell (db.memory): 256 of them for good grew a long-running server by hundreds of MB an hour
PAGE_CACHE_ENTRIES, PAGE_CACHE_TTL_S = 16, 120


@st.cache_data(show_spinner=False, max_entries=PAGE_CACHE_ENTRIES, ttl=PAGE_CACHE_TTL_S)
def _cached(name: str, version: Any, args: tuple, _query: Callable) -> Any:
    return _query(engine(), *args)


on_idle(_cached.clear)


def load(query: Callable, *args: Any) -> Any:
    """query(engine, *args), cached until the store's data version changes (a new run was ingested)."""
    name = f"{query.__module__}.{query.__qualname__}:{os.environ.get('MPSBENCH_DB', '')}"
    return _cached(name, data_version(engine()), args, query)
