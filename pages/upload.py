"""Upload: drop bundle files; each goes through the same ingest (same validation, same messages) as the API."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from db.errors import StoreError
from pages.widgets import engine


def outcome_of(name: str, raw: bytes) -> dict:
    """Ingest one file and describe what happened to it: new, already present, or refused with its problems."""
    from db.ingest.core import ingest_bundle

    try:
        done = ingest_bundle(engine(), raw)
    except StoreError as exc:
        problems = "; ".join(f"{p.field}: {p.rule}" for p in exc.problems)
        return {"file": name, "outcome": "refused", "run_id": "", "results": 0,
                "detail": f"{exc.message}" + (f" — {problems}" if problems else "")}
    outcome = "new" if done.created else "already present"
    return {"file": name, "outcome": outcome, "run_id": done.run_id, "results": done.n_results, "detail": ""}


def body() -> None:
    st.title("Upload")
    st.caption("Result bundles (JSON) written by `mpsbench run`. A refused file changes nothing stored.")
    files = st.file_uploader("Bundle files", type=["json"], accept_multiple_files=True)
    if not files:
        return
    # One ingest per uploaded file: a rerun of the page shows the first outcome, not "already present".
    seen = st.session_state.setdefault("upload_outcomes", {})
    for f in files:
        if f.file_id not in seen:
            seen[f.file_id] = outcome_of(f.name, f.getvalue())
    outcomes = pd.DataFrame([seen[f.file_id] for f in files])
    st.dataframe(outcomes, hide_index=True)
    if (outcomes["outcome"] == "refused").any():
        st.error(f"{(outcomes['outcome'] == 'refused').sum()} file(s) refused: nothing of them was stored.")


body()
