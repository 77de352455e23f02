"""Compare: baseline → candidate, case by case, with per-family geomeans and the cases that could not be paired."""
from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import altair as alt
import pandas as pd
import streamlit as st

from db.compare import CompareQuery, compare
from db.selectors import available_selectors
from pages.render import guarded, load

CASE_VIEW = ["scope", "device", "workload", "case_key", "dtype", "compile", "metric", "unit", "baseline_median",
             "baseline_iqr", "baseline_n", "candidate_median", "candidate_iqr", "candidate_n", "change", "ratio",
             "oriented_ratio", "difference", "change_unit", "ci_low", "ci_high", "p_value", "significance", "caveats"]


def _pick(label: str, key: str, options: list[str], default: str) -> str:
    current = st.query_params.get(key, default)
    choices = options if current in options else [current] + options
    chosen = st.selectbox(label, choices, index=choices.index(current), key=f"cmp_{key}")
    st.query_params[key] = chosen
    return chosen


def _text(label: str, key: str) -> str:
    value = st.text_input(label, st.query_params.get(key, ""), key=f"cmp_{key}")
    if value:
        st.query_params[key] = value
    elif key in st.query_params:
        del st.query_params[key]
    return value


def _controls() -> dict[str, str]:
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    if not options:
        st.info("No runs stored yet.")
        st.stop()
    left, right, scope_col = st.columns([3, 3, 1])
    with left:
        baseline = _pick("Baseline (build, tag:key=value or runs:id,id)", "baseline", options, options[0])
    with right:
        candidate = _pick("Candidate", "candidate", options, options[-1])
    with scope_col:
        scope = _pick("Scope", "scope", ["machine", "chip"], "machine")
    cols = st.columns(4)
    filters = {}
    for col, name in zip(cols, ("workload", "dtype", "compile", "metric")):
        with col:
            filters[name] = _text(name.capitalize() + " (comma list)", name)
    return {"baseline": baseline, "candidate": candidate, "scope": scope, **filters}


def _ratio_chart(cases: pd.DataFrame) -> alt.Chart:
    data = cases[cases.comparison == "ratio"].dropna(subset=["oriented_ratio"]).copy()
    data["case"] = data.workload + " " + data.case_key + " " + data.dtype + " " + data["compile"]
    base = alt.Chart(data).mark_point(filled=True).encode(
        x=alt.X("oriented_ratio:Q", scale=alt.Scale(type="log"), title="candidate vs baseline (× better, log)"),
        y=alt.Y("case:N", title=None), color=alt.Color("significance:N"), shape="scope:N",
        tooltip=["scope", "workload", "case_key", "dtype", "compile", "metric", "unit", "baseline_median",
                 "candidate_median", "change", "ci_low", "ci_high", "p_value", "significance"])
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return base + rule


def _absolute_chart(cases: pd.DataFrame) -> alt.Chart:
    long = cases.melt(id_vars=["scope", "workload", "case_key", "metric", "unit"],
                      value_vars=["baseline_median", "candidate_median"], var_name="side", value_name="median")
    long["case"] = long.workload + " " + long.case_key
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("median:Q", title="median (in the metric's unit)"), y=alt.Y("case:N", title=None),
        color="side:N", yOffset="side:N", row=alt.Row("metric:N"),
        tooltip=["scope", "workload", "case_key", "metric", "side", "median", "unit"]).resolve_scale(x="independent")


def _render() -> None:
    st.title("Compare")
    params = _controls()
    query = CompareQuery.from_params(params)
    result = load(compare, query)
    for note in result.notes:
        st.caption(note)
    st.subheader("Per family geomean")
    for summary in result.families.summary:
        st.text(summary)
    st.dataframe(result.families, hide_index=True)
    st.subheader("Per case")
    st.dataframe(result.cases[CASE_VIEW], hide_index=True)
    if not result.cases.empty:
        st.altair_chart(_ratio_chart(result.cases), use_container_width=True)
        metric = st.selectbox("Absolute values for metric", sorted(result.cases.metric.unique()), key="cmp_abs")
        st.altair_chart(_absolute_chart(result.cases[result.cases.metric == metric]), use_container_width=True)
    st.subheader("Not compared (one side only, or no ok figure on a side)")
    st.dataframe(result.unmatched, hide_index=True)


guarded(_render)
