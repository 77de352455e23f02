"""Overview: the release verdict per chip, with the same Baseline / Candidate pickers and URL as Compare; the
nightly preview labelled apart; machines × builds with their latest runs, result counts by status, open warnings."""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from db.views.defaults import default_sides, side_labels
from db.views.inputs import available_selectors
from db.views.release.live_run import LIVE_VARIABLE, live_run
from db.views.release.overview import overview_of
from pages.parts.cache import load
from pages.parts.guard import guarded, stop_if_empty
from pages.parts.plain import plain
from pages.parts.review_sidebar import shown_review
from pages.parts.table import table
from pages.parts.url_state import picker
from pages.parts.verdict import show_summary


def _sides() -> tuple[str, str]:
    """The pickers (URL `baseline`, `candidate`); ("", "") until the store holds two builds."""
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    first, last = default_sides(selectors)  # the release question: latest stable vs the newest rc
    if len(options) < 2 or not first or first == last:
        return "", ""
    shown = side_labels(selectors)
    left, right = st.columns(2)
    with left:
        baseline = picker("Baseline", "baseline", options, first, page="ovw", format_func=shown)
    with right:
        candidate = picker("Candidate", "candidate", options, last, page="ovw", format_func=shown)
    shown_review(baseline=baseline, candidate=candidate)
    return baseline, candidate


@st.fragment(run_every=2)
def _live() -> None:
    """The run collecting here now (scripts/start.sh serves before its first run is stored), refreshed every 2 s;
    when it ends, the whole page reruns and reads the stored run."""
    live = live_run()
    if live is None or not live.running:
        if st.session_state.pop("ovw_live", False):
            st.rerun()
        return
    st.session_state["ovw_live"] = True
    with st.container(border=True):
        st.markdown(f"**Collecting on this machine:** run {plain(live.run_id[:8])} on {plain(live.device)}")
        st.progress(
            min(1.0, live.done / max(live.total, 1)),
            text=f"{live.done} of {live.total} measurements done (each case in each worker process)",
        )
        st.text(f"now: {live.doing}")
        if live.finished_cases:
            st.caption("Finished so far, newest first (each the median of all its worker processes' samples):")
            table(pd.DataFrame(live.finished_cases).head(12))
        st.caption("This page fills in with the run's verdicts once it is stored.")


def body() -> None:
    st.title("Overview")
    if os.environ.get(LIVE_VARIABLE):
        _live()
    baseline, candidate = _sides()
    view = load(overview_of, baseline, candidate)
    stop_if_empty(view.latest)
    if view.hint:
        st.info(plain(view.hint))
    if view.empty:  # where the verdict goes: why there is none (names the selector from the URL: text)
        st.warning(plain(view.empty))
    show_summary(view.verdict)  # the answer first: the release question per chip
    if view.preview:
        st.divider()
        st.caption(
            "Preview, a second comparison (not the release question): the newest nightly against the same stable build"
        )
        show_summary(view.preview)
    st.subheader("Machines × builds (latest run)")
    table(view.latest, column_config={"memory_GiB": st.column_config.NumberColumn("memory (GiB)")})
    left, right = st.columns(2)
    left.metric("runs", view.runs)
    with right:
        st.subheader("Results by status")
        table(view.status)
    st.subheader("Open warnings")
    if view.warnings.empty:
        st.success("No open warnings: no fallbacks, battery runs, noisy samples or incomplete runs.")
    else:
        table(view.warnings)


guarded(body)
