"""Claims: each published claim beside the measured cases that match it, each case with its own figure and verdict
(reproduced / not / no data), and each figure's verdict by its rule (db/views/browse/claims.py)."""

from __future__ import annotations

import streamlit as st

from db.views.browse.claims import evaluate_claims
from pages.parts.cache import load
from pages.parts.guard import guarded
from pages.parts.table import table
from pages.parts.url_state import text_param

FIGURE = ["claim", "id", "chip", "dtype", "compile"]  # one verdict per figure on each chip, dtype and compile mode


def _render() -> None:
    st.title("Claims")
    st.caption(
        "Each claim compares its own baseline (before) and candidate (after) build; leave empty to use them, "
        "or replace both for every claim. Ratios are oriented (> 1 = after is better). Every matching case "
        "is measured on its own, never averaged with another: a case reproduces a claimed change when its "
        "own change is within tolerance and the review calls it a change (as Compare does). A model case built "
        "from a config with random weights is a stand-in for the published model: it says so, and reproduces a "
        "claim only 'on a stand-in'. A figure is reproduced when every matching case "
        "reproduces it (rule 'every'), or, for a claim quoting one measurement without naming its case, "
        "when at least one does (rule 'some'); a geomean figure by its geomean over the cases."
    )
    baseline = text_param("Baseline selector for every claim (optional)", "baseline", page="cl")
    candidate = text_param("Candidate selector for every claim (optional)", "candidate", page="cl")
    claims = load(evaluate_claims, baseline or None, candidate or None)
    figures = claims.drop_duplicates(FIGURE)
    for status in ("reproduced", "reproduced on a stand-in", "not reproduced", "no data"):
        st.text(f"{status}: {int((figures.figure_status == status).sum())} figure(s)")
    for claim_id, rows in claims.groupby("claim", sort=False):
        first = rows.iloc[0]
        st.subheader(claim_id)
        st.text(first.title)
        st.text(
            f"baseline {first.baseline}: {first.baseline_is}\ncandidate {first.candidate}: {first.candidate_is}"
            f"\nsource: {first.source}"
        )
        for f in rows.drop_duplicates(FIGURE).itertuples():
            where = " · ".join(x for x in (f.chip, f.dtype, f.compile) if x)
            st.text(f"{f.id} ({where}): {f.figure_status} — {f.figure_detail}")
        table(rows[CASE_VIEW])


CASE_VIEW = [
    "id",
    "chip",
    "dtype",
    "compile",
    "case",
    "status",
    "claimed_words",
    "measured_words",
    "stand_in",
    "claimed",
    "measured",
    "unit",
    "tolerance",
    "figure_status",
    "rule",
    "figure_measured",
    "n_cases",
    "claimed_cases",
    "detail",
    "case_key",
]


guarded(_render)
