"""Claims: each published claim beside the measured comparison that matches it (reproduced / not / no data)."""
from __future__ import annotations

import streamlit as st

from db.views.claims import evaluate_claims
from pages.widgets import guarded, load, text_param


def _render() -> None:
    st.title("Claims")
    st.caption("Each claim compares its own baseline (before) and candidate (after) build; leave empty to use them, "
               "or replace both for every claim. Ratios are oriented (> 1 = after is better).")
    baseline = text_param("Baseline selector for every claim (optional)", "baseline", page="cl")
    candidate = text_param("Candidate selector for every claim (optional)", "candidate", page="cl")
    claims = load(evaluate_claims, baseline or None, candidate or None)
    for status in ("reproduced", "not reproduced", "no data"):
        st.text(f"{status}: {int((claims.status == status).sum())}")
    for claim_id, rows in claims.groupby("claim", sort=False):
        first = rows.iloc[0]
        st.subheader(claim_id)
        st.text(first.title)
        st.text(f"baseline {first.baseline}: {first.baseline_is}\ncandidate {first.candidate}: {first.candidate_is}"
                f"\nsource: {first.source}")
        st.dataframe(rows[FIGURE_VIEW], hide_index=True)


FIGURE_VIEW = ["id", "chip", "dtype", "compile", "status", "claimed", "measured", "unit", "tolerance", "n_cases",
               "claimed_cases", "detail"]


guarded(_render)
