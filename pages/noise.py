"""Noise: the A/A noise model — how far two runs of one build on one machine differ, per chip, workload, metric,
dtype and compile mode; how many A/A pairs back each figure; which groups are noisier than the review threshold
(one run a side cannot tell a change of that size there); and how many runs per side a comparison needs."""

from __future__ import annotations

import streamlit as st

from bundle.metrics import RATIO_METRICS
from db.views.browse.noise import DEFAULT_PRECISION, noise_view
from pages.parts.cache import load
from pages.parts.guard import guarded, stop
from pages.parts.table import table
from pages.parts.url_state import picker, text_param


def body() -> None:
    st.title("Noise")
    st.caption(
        "A/A pairs: one case measured by two runs of the same build (torch version and git hash) on the same "
        "machine. The noise bound (%) is the 95th percentile of how far the two runs' medians differ; fewer "
        "than 2 pairs is insufficient data (no bound). The same pairs give each case its run-to-run variance "
        "in a review's test (docs/regressions.md). Runs per side: runs each side needs for a 95 % CI of the "
        "candidate/baseline ratio within ± the precision (Kalibera & Jones's planner)."
    )
    everything = load(noise_view, {})
    if everything.message:
        st.info(everything.message)
        stop()
    left, mid, right, fourth = st.columns(4)
    with left:
        chip = picker("Chip", "chip", everything.groups.chip, page="noise")
    with mid:
        metric = picker("Metric", "metric", RATIO_METRICS, page="noise")
    with right:
        precision = text_param("Precision (± %, 95 % CI)", "precision", f"{DEFAULT_PRECISION:g}", page="noise")
    with fourth:
        threshold = text_param(
            "Review threshold (% worse)", "threshold", f"{everything.threshold_percent:g}", page="noise"
        )
    view = load(noise_view, {"chip": chip, "metric": metric, "precision": precision, "threshold": threshold})
    noisy = int(view.groups.noisy.sum())
    st.metric("A/A pairs (each measurement once)", view.pairs_listed)
    st.write(
        f"{noisy} of {len(view.groups)} groups are noisier than the {view.threshold_percent:g} % threshold; "
        f"runs per side for ±{view.precision_percent:g} % at 95 % confidence."
        + (
            f" Bandwidth and tokens/s are their timing measured once ({view.derived} such groups are counted "
            "under their op time or decode time)."
            if view.derived
            else ""
        )
    )
    if view.message:
        st.info(view.message)
        return
    table(view.groups)


guarded(body)
