"""Correctness: PSNR (dB) and max error per case across builds against tolerances; "faster but wrong" flags."""
from __future__ import annotations

import altair as alt
import streamlit as st

from db.query import browse
from db.views import correctness as browse_correctness
from pages.render import guarded, load, query_choice, stop_if_empty, tooltips


def body() -> None:
    st.title("Correctness")
    split = query_choice("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    records = load(browse_correctness.correctness, split or None)
    stop_if_empty(records, "correctness records")
    wrong = load(browse_correctness.faster_but_wrong, split or None)
    if not wrong.empty:
        st.error(f"faster but wrong: {len(wrong)} case(s) got faster than the previous build while failing "
                 "their correctness tolerance")
        st.dataframe(wrong, hide_index=True)
    metric = query_choice("metric", "metric", list(records["metric"])) or "psnr_vs_cpu"
    shown = records[records["metric"] == metric]
    st.dataframe(shown.drop(columns=["started_at"]), hide_index=True)
    measured = shown.dropna(subset=["median"])
    if measured.empty:
        return
    unit = measured["unit"].iloc[0]
    chart = alt.Chart(measured).mark_point(filled=True, size=80).encode(
        x=alt.X("build:N", axis=alt.Axis(labelLimit=400, labelAngle=-20)),
        y=alt.Y("median:Q", title=f"{metric} ({unit})"),
        color=alt.Color("verdict:N"), shape=alt.Shape("dtype:N"),
        tooltip=tooltips(measured, "machine_name", "workload", "case_key", "dtype", "compile", "build", "verdict") + [
            alt.Tooltip("median:Q", title=f"{metric} ({unit})"),
            alt.Tooltip("tolerance:Q", title=f"tolerance ({unit})")])
    st.altair_chart(chart)


guarded(body)
