"""Compare's "What ran" panel for the picked case (db.views.release.what_ran.case_what_ran): what changed in words, and
both sides' device time per op call by entry as stacked bars (Altair), µs on the axis, the device named (a CPU
breakdown says CPU). Not a page of its own: pages/compare.py places it in the case detail."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from db.views.release.what_ran import CaseWhatRan
from pages.parts.charts import FIT_WIDTH

BAR_PX = 40  # each side's row: its bar and its label (a box of fixed height squeezed both to a few px)


def what_ran_chart(bars: pd.DataFrame, axis: str) -> alt.Chart:
    """One stacked bar per side: its entries' device time per op call (µs), the largest first in each stack."""
    return (
        alt.Chart(bars)
        .mark_bar()
        .encode(
            x=alt.X("sum(device_time_us):Q", title=axis, stack="zero"),
            y=alt.Y("side:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
            # below the bars, in columns: 9 names beside a 2-bar chart were cut off by its height
            color=alt.Color(
                "entry:N",
                title="entry (kernel, graph or aten op)",
                legend=alt.Legend(orient="bottom", columns=3, labelLimit=320, titleLimit=400),
            ),
            order=alt.Order("device_time_us:Q", sort="descending"),
            tooltip=[
                alt.Tooltip("side:N"),
                alt.Tooltip("name:N", title="entry"),
                alt.Tooltip("kind:N"),
                alt.Tooltip("device_time_us:Q", title="µs per op call", format=".4g"),
                alt.Tooltip("calls_per_call:Q", title="calls per op call", format=".3g"),
            ],
        )
        .properties(height=alt.Step(BAR_PX), autosize=FIT_WIDTH)
    )


def what_ran_panel(found: CaseWhatRan) -> None:
    st.markdown("**What ran**")
    if found.bars.empty:  # neither side broke the case down: one line, how to get one
        st.text(found.note)
        return
    st.text(found.what_ran.words())
    for move in found.what_ran.moved[1:]:  # the first is in the words above
        st.text(f"also moved: {move.words()}")
    st.text(found.note)
    st.altair_chart(what_ran_chart(found.bars, found.axis), width="stretch")
