"""Trends: one metric of one case over builds (version order, nightlies by date) per chip, with change points."""
from __future__ import annotations

import streamlit as st

from db.views.trends import DEFAULTS, trend_view
from pages.charts import trend_chart
from pages.widgets import guarded, load, text_param


def _render() -> None:
    st.title("Trends")
    params = {}
    for col, (name, default) in zip(st.columns(len(DEFAULTS)), DEFAULTS.items()):
        with col:
            params[name] = text_param(name, name, default, page="tr")
    points = load(trend_view, params).points
    if points.empty:
        st.info("No ok results for this case.")
        return
    st.caption("Change points: L1 Potts model on log medians, penalty 4·ln(n)·σ (σ from first differences), "
               "segments ≥ 2 builds, steps ≥ 5 % (db/stats/changepoints.py).")
    st.altair_chart(trend_chart(points), width="stretch")
    st.dataframe(points, hide_index=True)


guarded(_render)
