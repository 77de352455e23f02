"""Sweeps: pick one, see its builds, its runs in the order they ran, its A/A pairs, and open the comparison of
any of its builds against the baseline (the rounds are the replicates)."""

from __future__ import annotations

import streamlit as st

from db.views.browse.sweeps import sweep_detail, sweeps
from pages.parts.cache import load
from pages.parts.guard import guarded, stop
from pages.parts.table import table
from pages.parts.url_state import picker

LINK = st.column_config.LinkColumn("compare", display_text="open in Compare")


def body() -> None:
    st.title("Sweeps")
    found = load(sweeps)
    if found.empty:
        st.info("No sweeps stored yet: `mpsbench sweep --build … --build … --push URL` makes one.")
        stop()
    table(found)
    chosen = picker("Sweep", "sweep", found.sweep.tolist(), found.sweep.iloc[0], page="swp")
    detail = load(sweep_detail, chosen)
    st.subheader("Builds")
    table(detail.builds)
    st.subheader("Comparisons")
    table(detail.comparisons, column_config={"link": LINK})
    st.subheader("A/A pairs (the baseline twice in a round)")
    table(detail.aa_pairs)
    st.subheader("Runs, in the order they ran")
    table(detail.runs)


guarded(body)
