"""The page boundary: a store error shown once as text, a store fault named, anything else logged and shown as one
short message (never a traceback); and a page's early stop, its URL written first."""

from __future__ import annotations

import logging
from typing import Callable

import pandas as pd
import streamlit as st

from db.errors import StoreError
from db.views.serving import store_fault
from pages.parts.plain import plain
from pages.parts.review_sidebar import sidebar_review
from pages.parts.url_state import flush_params

log = logging.getLogger("mpsbench.pages")
EMPTY_HINT = (
    "No runs yet: run `mpsbench run …` on a machine (it pushes its bundle here), or upload a bundle on the Upload page."
)


def guarded(render: Callable[[], None]) -> None:
    """Run a page body (navigation.py runs every page under it too): a store error is shown once as st.error (as plain text); a
    store fault (disk full, locked, damaged) names itself and the store is reopened on the next run
    (db.store.faults); anything else is a short message, its traceback logged on the server, never shown (it
    names server paths). st.stop/st.rerun pass through (BaseException, not Exception)."""
    try:
        render()
    except StoreError as exc:
        st.error(plain(exc))
    except Exception as exc:  # noqa: BLE001 - the page boundary: no traceback reaches the browser
        page_failed(exc)


def page_failed(exc: Exception) -> None:
    """A page's unexpected exception as one short st.error: a store fault (the store reopened on the next run) or
    a server out of memory, threads or file handles names itself (db.store.faults), anything else is logged here
    with its traceback and shown without it."""
    fault = store_fault(exc)
    if fault is not None:
        st.error(plain(fault))
        return
    log.error("page failed", exc_info=exc)
    st.error("This page failed on the server (the error is logged there). Reload, or try another page.")


def stop_if_empty(frame: pd.DataFrame, what: str = "runs") -> None:
    if frame.empty:
        st.info(EMPTY_HINT if what == "runs" else f"No {what} stored yet.")
        stop()


def stop() -> None:
    """st.stop() after writing this run's URL: once a stop is requested, Streamlit drops every later message
    (navigation.py's flush_params included), so the browser kept the old URL while the server held the new one
    and a later page inherited it."""
    sidebar_review()
    flush_params()
    st.stop()
