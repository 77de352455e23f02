"""Correctness: PSNR (dB) and max error per case across builds against tolerances; "faster but wrong" flags."""
from __future__ import annotations

import streamlit as st

from db.query import browse
from db.query.browse import CORRECTNESS_METRICS
from db.views.correctness import correctness_view
from pages.charts import correctness_chart
from pages.widgets import guarded, load, picker, stop_if_empty


def body() -> None:
    st.title("Correctness")
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    metric = picker("metric", "metric", CORRECTNESS_METRICS)  # (any) = psnr_vs_cpu, as in the JSON twin
    view = load(correctness_view, {"split_tag": split, "metric": metric})
    wrong = view.faster_but_wrong
    if not view.stored:
        stop_if_empty(view.records, "correctness records")
    if not wrong.empty:
        st.error(f"faster but wrong: {len(wrong)} case(s) got faster than the previous build while failing "
                 "their correctness tolerance")
        st.dataframe(wrong, hide_index=True)
    st.dataframe(view.records, hide_index=True)
    measured = view.records.dropna(subset=["median"])
    if not measured.empty:
        st.altair_chart(correctness_chart(measured, view.metric))


guarded(body)
