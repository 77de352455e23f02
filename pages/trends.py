"""Trends: one metric of one case over builds (version order, nightlies by date) per chip, with change points."""
from __future__ import annotations

import altair as alt
import streamlit as st

from db.views.trends import trend
from pages.render import guarded, load, tooltips

FIELDS = [("workload", "softmax"), ("case_key", '{"rows":1,"vocab":128256}'), ("dtype", "float32"),
          ("compile", "eager"), ("metric", "op_time")]


def _render() -> None:
    st.title("Trends")
    chosen = {}
    for col, (name, default) in zip(st.columns(len(FIELDS)), FIELDS):
        with col:
            chosen[name] = st.text_input(name, st.query_params.get(name, default), key=f"tr_{name}")
            st.query_params[name] = chosen[name]
    points = load(trend, chosen["workload"], chosen["case_key"], chosen["dtype"], chosen["compile"], chosen["metric"])
    if points.empty:
        st.info("No ok results for this case.")
        return
    st.caption("Change points: L1 Potts model on log medians, penalty 4·ln(n)·σ (σ from first differences), "
               "segments ≥ 2 builds, steps ≥ 5 % (db/changepoints.py).")
    order = points.sort_values(["chip", "position"]).torch_version.drop_duplicates().tolist()
    line = alt.Chart(points).mark_line(point=True).encode(
        x=alt.X("torch_version:N", sort=order, title="build"), y=alt.Y("median:Q", title=f"median ({points.unit.iloc[0]})"),
        color=alt.Color("chip:N"),
        tooltip=tooltips(points, "chip", "torch_version", "nightly_date", "median", "unit", "p25", "p75", "n", "runs",
                         "machines", "change_point"))
    steps = alt.Chart(points[points.change_point]).mark_rule(strokeDash=[3, 3]).encode(x=alt.X("torch_version:N", sort=order))
    st.altair_chart(line + steps, width="stretch")
    st.dataframe(points, hide_index=True)


guarded(_render)
