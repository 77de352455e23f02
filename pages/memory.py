"""Memory: per machine, driver total ⊇ allocator reserved ⊇ live tensors peaks of a baseline and a candidate build,
case by case, in GiB. Never summed across machines or cases; OOM and unavailable figures are marked, never 0."""

from __future__ import annotations

from functools import partial

import streamlit as st

from db.views.browse import memory as views
from db.views.inputs import as_build, tag_keys
from pages.parts.browse_charts import memory_chart
from pages.parts.cache import load
from pages.parts.guard import guarded, stop_if_empty
from pages.parts.plain import plain
from pages.parts.table import table
from pages.parts.url_state import picker

TABLE = [
    "case",
    "figure",
    "baseline",
    "candidate",
    "change",
    "baseline_runs",
    "candidate_runs",
    "workload",
    "dtype",
    "compile",
    "case_key",
]


def body() -> None:
    st.title("Memory")
    st.caption(
        "Peaks in GiB per machine and case: the driver's total holds the allocator's reserved pool, which "
        "holds the live tensors. Several runs of a build on one machine: the median of their peaks. "
        "A figure the device or build cannot give is shown as unavailable with its reason, never as 0."
    )
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(tag_keys), page="mem")
    # the URL's builds are checked by the view (a bad link is named); the defaults come from it too
    asked = {k: st.query_params.get(k, "") for k in ("baseline", "candidate", "workload")}
    view = load(views.memory_view, {"split_tag": split, **asked})
    stop_if_empty(view.records, "memory records")
    left, right, third = st.columns([3, 3, 2])
    with left:
        baseline = picker(
            "Baseline build", "baseline", view.builds, view.baseline, page="mem", clean=partial(as_build, view.builds)
        )
    with right:
        candidate = picker(
            "Candidate build",
            "candidate",
            view.builds,
            view.candidate,
            page="mem",
            clean=partial(as_build, view.builds),
        )
    with third:
        workload = picker("Workload", "workload", view.workloads, page="mem")
    if (baseline, candidate, workload) != (view.baseline, view.candidate, view.workload):
        view = load(
            views.memory_view, {"split_tag": split, "baseline": baseline, "candidate": candidate, "workload": workload}
        )
    if baseline == candidate:
        st.info("Baseline and candidate are the same build: pick another candidate to see a change.")
    if view.table.empty:
        st.info(plain(f"No memory records for {baseline} or {candidate}."))
        return
    for title, panel in views.memory_panels(view.table):
        st.subheader(title)
        st.altair_chart(memory_chart(views.chart_rows(panel), views.NESTED, baseline, candidate), width="content")
        table(panel[TABLE])


guarded(body)
