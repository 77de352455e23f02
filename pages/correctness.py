"""Correctness: PSNR (dB) and max error per case across builds against tolerances; "faster but wrong" flags."""
from __future__ import annotations

import streamlit as st

from db.query import browse
from db.views import correctness as browse_correctness
from pages.charts import correctness_chart
from pages.widgets import guarded, load, picker, stop_if_empty


def body() -> None:
    st.title("Correctness")
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    records = load(browse_correctness.correctness, split or None)
    stop_if_empty(records, "correctness records")
    wrong = load(browse_correctness.faster_but_wrong, split or None)
    if not wrong.empty:
        st.error(f"faster but wrong: {len(wrong)} case(s) got faster than the previous build while failing "
                 "their correctness tolerance")
        st.dataframe(wrong, hide_index=True)
    metric = picker("metric", "metric", list(records["metric"])) or "psnr_vs_cpu"
    shown = records[records["metric"] == metric]
    st.dataframe(shown.drop(columns=["started_at"]), hide_index=True)
    measured = shown.dropna(subset=["median"])
    if measured.empty:
        return
    st.altair_chart(correctness_chart(measured, metric))


guarded(body)
