"""The dashboard's Streamlit script: navigation over every page, each at its own url path (/compare, …).

It lives inside pages/ on purpose: Streamlit treats a `pages/` folder beside the main script as an old-style
(v1) multipage app and would run a deep link such as /compare without this navigation. app.py serves this file.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

PAGES = [  # (file, title, url path); Overview is the default
    ("overview.py", "Overview", "overview"),
    ("runs.py", "Runs", "runs"),
    ("compare.py", "Compare", "compare"),
    ("sweeps.py", "Sweeps", "sweeps"),
    ("noise.py", "Noise", "noise"),
    ("regressions.py", "Regressions", "regressions"),
    ("trends.py", "Trends", "trends"),
    ("matrix.py", "Matrix", "matrix"),
    ("memory.py", "Memory", "memory"),
    ("correctness.py", "Correctness", "correctness"),
    ("claims.py", "Claims", "claims"),
    ("upload.py", "Upload", "upload"),
    ("signin.py", "Sign in", "signin"),
]


def pages() -> list:
    return [
        st.Page(HERE / file, title=title, url_path=path, default=(path == "overview"))
        for file, title, path in PAGES
        if (HERE / file).exists()
    ]


if __name__ == "__main__":  # the Streamlit script run; importing this module (tests) only reads PAGES
    st.set_page_config(page_title="mpsbench", layout="wide")
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    from db.memory import busy
    from db.store.writers.tokens import reads_need_token
    from pages.signin import signed_in
    from pages.widgets import drop_params, flush_params, guarded, sidebar_review  # guarded: a short st.error

    # with read tokens configured, a session that has not signed in sees the sign-in page only
    shown = pages() if not reads_need_token() or signed_in() else [p for p in pages() if p.url_path == "signin"]
    try:
        with busy():  # the page's run is a read in flight: the last to end gives the memory back (db.memory)
            guarded(st.navigation(shown, expanded=True).run)  # every page listed, beside the review links
            sidebar_review()  # after the page: its own picks are the review carried
    except RerunException:  # a click or another page replaced this run: that run writes its URL; this one's
        drop_params()  # would land on the next page's address (/memory?scope=chip)
        raise
    finally:  # the page's URL in one change (a stop wrote it already: widgets.stop)
        flush_params()
