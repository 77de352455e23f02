"""Claims: each published claim beside the measured comparison that matches it (reproduced / not / no data)."""
from __future__ import annotations

import streamlit as st

from db.views.claims import evaluate_claims
from pages.render import guarded, load


def _override(label: str, key: str) -> str:
    value = st.text_input(label, st.query_params.get(key, ""), key=f"cl_{key}")
    if value:
        st.query_params[key] = value
    elif key in st.query_params:
        del st.query_params[key]
    return value


def _render() -> None:
    st.title("Claims")
    st.caption("Each claim compares its own baseline (before) and candidate (after) build; leave empty to use them, "
               "or replace both for every claim. Ratios are oriented (> 1 = after is better).")
    baseline = _override("Baseline selector for every claim (optional)", "baseline")
    candidate = _override("Candidate selector for every claim (optional)", "candidate")
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
