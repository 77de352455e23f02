"""Matrix: chip × build (or dtype × build) heatmap of one metric's geomean ratio against a chosen baseline build."""
from __future__ import annotations

import altair as alt
import streamlit as st

from bundle.metrics import METRICS
from db.views.matrix import _builds, matrix
from pages.render import engine, guarded, load, tooltips


def _choice(label: str, key: str, options: list[str], default: str) -> str:
    current = st.query_params.get(key, default).removeprefix("torch=")  # a Compare link's selector works too
    choices = options if current in options else [current] + options
    chosen = st.selectbox(label, choices, index=choices.index(current), key=f"mx_{key}")
    st.query_params[key] = chosen
    return chosen


def _render() -> None:
    st.title("Matrix")
    builds = _builds(engine())
    if not builds:
        st.info("No runs stored yet.")
        st.stop()
    cols = st.columns(5)
    with cols[0]:
        metric = _choice("Metric", "metric", list(METRICS), "op_time")
    with cols[1]:
        baseline = _choice("Baseline build", "baseline", builds, builds[0])
    with cols[2]:
        rows = _choice("Rows", "rows", ["chip", "dtype"], "chip")
    with cols[3]:
        dtype = st.text_input("dtype (required for chip rows)", st.query_params.get("dtype", "float32"), key="mx_dtype")
        st.query_params["dtype"] = dtype
    with cols[4]:
        compile_mode = _choice("Compile", "compile", ["eager", "inductor"], "eager")
    cells = load(matrix, metric, baseline, rows, dtype if rows == "chip" else "", compile_mode, "")
    if cells.empty:
        st.info("No paired cases for this selection.")
        return
    st.altair_chart(alt.Chart(cells).mark_rect().encode(
        x=alt.X("build:N", sort=builds), y=alt.Y("row:N"),
        color=alt.Color("geomean:Q", scale=alt.Scale(type="log", scheme="redblue", domainMid=1.0),
                        title="geomean (× better)"),
        tooltip=tooltips(cells, "row", "build", "geomean", "ci_low", "ci_high", "n_cases", "unit", "baseline")),
        width="stretch")
    st.dataframe(cells, hide_index=True)


guarded(_render)
