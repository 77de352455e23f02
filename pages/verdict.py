"""The release summary (db.views.summary) as the first thing on Compare and Regressions: the verdict, one row per
(scope, device, dtype, compile), the timing families' geomeans and the notes. Rendered from the plain dict the
JSON twins return, so a page and its twin show the same figures."""
from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

FAMILY_LINES = 12  # geomean sentences printed; GET /api/v1/compare lists every family


def show_summary(summary: dict[str, Any]) -> None:
    st.subheader(f"Release summary: {summary['verdict']}")
    st.dataframe(pd.DataFrame(summary["groups"]), hide_index=True)
    families = summary["families"]
    for family in families[:FAMILY_LINES]:
        st.text(family["summary"])
    if len(families) > FAMILY_LINES:
        st.text(f"… {len(families) - FAMILY_LINES} more families (timing geomeans) in the JSON twin")
    for note in summary["notes"]:
        st.text(note)  # notes carry selector text (tag values from bundles): text, not Markdown
