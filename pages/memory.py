"""Memory: driver total, allocator reserved and live tensor peaks, and driver memory outside the allocator, in GiB."""
from __future__ import annotations

import streamlit as st

from db.query import browse
from db.views.memory import memory_view
from pages.charts import memory_chart
from pages.widgets import guarded, load, picker, stop_if_empty


def body() -> None:
    st.title("Memory")
    st.caption("Peaks in GiB. A figure the device or build cannot give is shown as unavailable with its reason, "
               "never as 0.")
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    view = load(memory_view, {"split_tag": split})
    stop_if_empty(view.records, "memory records")
    workload = picker("workload", "workload", view.workloads)
    if workload:
        view = load(memory_view, {"split_tag": split, "workload": workload})
    st.dataframe(view.table, hide_index=True)
    measured = view.records.dropna(subset=["GiB"])
    if not measured.empty:
        st.altair_chart(memory_chart(measured))


guarded(body)
