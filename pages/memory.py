"""Memory: driver total, allocator reserved and live tensor peaks, and driver memory outside the allocator, in GiB."""
from __future__ import annotations

import streamlit as st

from db.query import browse
from db.views import memory as browse_memory
from pages.charts import memory_chart
from pages.widgets import guarded, load, picker, stop_if_empty


def body() -> None:
    st.title("Memory")
    st.caption("Peaks in GiB. A figure the device or build cannot give is shown as unavailable with its reason, "
               "never as 0.")
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    long = load(browse_memory.memory_long, split or None)
    stop_if_empty(long, "memory records")
    workload = picker("workload", "workload", list(long["workload"]))
    if workload:
        long = long[long["workload"] == workload]
    st.dataframe(browse_memory.memory_table(long), hide_index=True)
    measured = long.dropna(subset=["GiB"])
    if measured.empty:
        return
    st.altair_chart(memory_chart(measured))


guarded(body)
