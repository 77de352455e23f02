"""Upload: drop bundle files; each goes through the same ingest (same validation, same messages, same size limit)
as the API, after sign-in (pages/signin.py), and the run records the signed-in name."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db.errors import StoreError
from db.store.writers.upkeep import catch_up_soon
from pages.signin import require_writer
from pages.widgets import engine, plain, table, upload_limit

NOT_BUNDLE = "not a JSON bundle"


def refused_words(name: str, detail: str) -> str:
    """One refused file in words: "shot.png is not a JSON bundle: …", else "bad.json: <the problems>"."""
    return f"{name} is {detail}" if detail.startswith(NOT_BUNDLE) else f"{name}: {detail}"


def outcome_of(name: str, raw: bytes, who: str) -> dict:
    """Ingest one file and describe what happened to it: new, already present, or refused with its problems."""
    from db.ingest.core import ingest_bundle

    try:
        limit, _, words = upload_limit()
        if len(raw) > limit:
            raise StoreError(
                413, f"the file is {len(raw):,} bytes, above the server's limit of {words} (MPSBENCH_MAX_UPLOAD_MB)"
            )
        done = ingest_bundle(engine(), raw, who)
    except StoreError as exc:
        problems = "; ".join(f"{p.field}: {p.rule}" for p in exc.problems)
        detail = f"{exc.message}" + (f" — {problems}" if problems else "")
        if exc.status == 400 and exc.message.startswith("body is not"):  # a picture, a log: no JSON at all
            detail = f"{NOT_BUNDLE}: " + ("; ".join(p.rule for p in exc.problems) or "a bundle is one JSON object")
        return {"file": name, "outcome": "refused", "run_id": "", "results": 0, "detail": detail}
    outcome = "new" if done.created else "already present"
    return {"file": name, "outcome": outcome, "run_id": done.run_id, "results": done.n_results, "detail": ""}


def body() -> None:
    st.title("Upload")
    who = require_writer("upload bundles")
    _, picker_mb, words = upload_limit()
    st.markdown(
        f"Signed in as {plain(who.name)}. Result bundles (JSON) written by `mpsbench run`, at most "
        f"{words} each, as the API takes. A refused file changes nothing stored."
    )
    # any file is taken and judged here: with type=["json"] the browser refused a .png itself, a red icon and no words
    files = st.file_uploader("Bundle files", accept_multiple_files=True, max_upload_size=picker_mb)
    if not files:
        return
    # One ingest per uploaded file: a rerun of the page shows the first outcome, not "already present".
    seen = st.session_state.setdefault("upload_outcomes", {})
    new = [f for f in files if f.file_id not in seen]
    for f in new:
        seen[f.file_id] = outcome_of(f.name, f.getvalue(), who.name)
    if any(seen[f.file_id]["outcome"] == "new" for f in new):
        with st.spinner("Summarising the new runs for Compare…"):
            catch_up_soon(engine())  # db.store.writers.upkeep: Compare is right without it, only slower
    outcomes = pd.DataFrame([seen[f.file_id] for f in files])
    table(outcomes, column_config={"detail": st.column_config.TextColumn(width="large")})
    refused = outcomes[outcomes["outcome"] == "refused"]
    if len(refused) == 1:  # the reason in full, wrapped (a table cell cuts it off), as text
        st.error(plain(f"{refused_words(refused.file.iloc[0], refused.detail.iloc[0])}. Nothing of it was stored."))
    elif len(refused):  # each reason in full, in one message
        reasons = "\n".join(f"- {plain(refused_words(r.file, r.detail))}" for r in refused.itertuples())
        st.error(f"{len(refused)} files refused: nothing of them was stored.\n{reasons}")


body()
