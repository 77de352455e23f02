"""Overview: machines × builds with their latest runs, result counts by status, open warnings."""
from __future__ import annotations

import streamlit as st

from db.query import browse
from pages.widgets import guarded, load, stop_if_empty


def body() -> None:
    st.title("Overview")
    runs = load(browse.runs)
    stop_if_empty(runs)
    st.subheader("Machines × builds (latest run)")
    latest = runs.sort_values("started_at").groupby(["machine_name", "build"], as_index=False).last()
    latest = latest.assign(runs=runs.groupby(["machine_name", "build"]).size().values)
    st.dataframe(latest[["machine_name", "chip", "memory_GiB", "gpu_cores", "device_type", "build", "git_hash",
                         "runs", "run_id", "started_at", "complete", "n_results"]],
                 hide_index=True, column_config={"memory_GiB": st.column_config.NumberColumn("memory (GiB)")})
    left, right = st.columns(2)
    left.metric("runs", len(runs))
    right.subheader("Results by status")
    right.dataframe(load(browse.status_counts), hide_index=True)
    st.subheader("Open warnings")
    warnings = load(browse.open_warnings)
    if warnings.empty:
        st.success("No open warnings: no fallbacks, battery runs, noisy samples or incomplete runs.")
    else:
        st.dataframe(warnings, hide_index=True)


guarded(body)
