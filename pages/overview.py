"""Overview: machines × builds with their latest runs, result counts by status, open warnings."""
from __future__ import annotations

import streamlit as st

from db.views.overview import overview
from pages.verdict import show_summary
from pages.widgets import guarded, load, stop_if_empty


def body() -> None:
    st.title("Overview")
    view = load(overview)
    stop_if_empty(view.latest)
    show_summary(view.verdict)  # the answer first: the latest stable build against the newest preview, per chip
    st.subheader("Machines × builds (latest run)")
    st.dataframe(view.latest, hide_index=True,
                 column_config={"memory_GiB": st.column_config.NumberColumn("memory (GiB)")})
    left, right = st.columns(2)
    left.metric("runs", view.runs)
    right.subheader("Results by status")
    right.dataframe(view.status, hide_index=True)
    st.subheader("Open warnings")
    if view.warnings.empty:
        st.success("No open warnings: no fallbacks, battery runs, noisy samples or incomplete runs.")
    else:
        st.dataframe(view.warnings, hide_index=True)


guarded(body)
