"""Memory: driver total, allocator reserved and live tensor peaks, and driver memory outside the allocator, in GiB."""
from __future__ import annotations

import altair as alt
import streamlit as st

from db.query import browse
from db.views import memory as browse_memory
from pages.render import guarded, load, query_choice, stop_if_empty, tooltips


def body() -> None:
    st.title("Memory")
    st.caption("Peaks in GiB. A figure the device or build cannot give is shown as unavailable with its reason, "
               "never as 0.")
    split = query_choice("Split builds by tag (A/B runs of one build)", "split_tag", load(browse.tag_keys))
    long = load(browse_memory.memory_long, split or None)
    stop_if_empty(long, "memory records")
    workload = query_choice("workload", "workload", list(long["workload"]))
    if workload:
        long = long[long["workload"] == workload]
    st.dataframe(browse_memory.memory_table(long), hide_index=True)
    measured = long.dropna(subset=["GiB"])
    if measured.empty:
        return
    chart = alt.Chart(measured).mark_bar().encode(
        x=alt.X("figure:N", title=None), xOffset=alt.XOffset("build:N"), y=alt.Y("GiB:Q", title="peak (GiB)"),
        color=alt.Color("build:N"), column=alt.Column("workload:N"),
        tooltip=tooltips(measured, "machine_name", "build", "workload", "case_key", "dtype", "figure") + [
            alt.Tooltip("GiB:Q", format=".3f", title="peak (GiB)")])
    st.altair_chart(chart)


guarded(body)
