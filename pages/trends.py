"""Trends: one metric of one case over builds (version order, nightlies by date) per chip, with change points."""
from __future__ import annotations

import streamlit as st

from db.views.trends import trend
from pages.charts import trend_chart
from pages.widgets import guarded, load, text_param

FIELDS = [("workload", "softmax"), ("case_key", '{"rows":1,"vocab":128256}'), ("dtype", "float32"),
          ("compile", "eager"), ("metric", "op_time")]


def _render() -> None:
    st.title("Trends")
    chosen = {}
    for col, (name, default) in zip(st.columns(len(FIELDS)), FIELDS):
        with col:
            chosen[name] = text_param(name, name, default, page="tr")
    points = load(trend, chosen["workload"], chosen["case_key"], chosen["dtype"], chosen["compile"], chosen["metric"])
    if points.empty:
        st.info("No ok results for this case.")
        return
    st.caption("Change points: L1 Potts model on log medians, penalty 4·ln(n)·σ (σ from first differences), "
               "segments ≥ 2 builds, steps ≥ 5 % (db/changepoints.py).")
    st.altair_chart(trend_chart(points), width="stretch")
    st.dataframe(points, hide_index=True)


guarded(_render)
