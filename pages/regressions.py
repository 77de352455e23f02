"""Regressions: every significant slowdown beyond a threshold (and every passed → failed), worst first, with triage."""

from __future__ import annotations

import hashlib

import streamlit as st

from db.errors import StoreError
from db.query.params import threshold_percent
from db.query.selectors import available_selectors
from db.review.comparison import CompareQuery
from db.review.review import Review
from db.store.writers.triage import NOTE_KEY, STATES, save_note
from db.views.defaults import default_sides, side_labels
from db.views.regressions import TRIAGE_RULE, regressions_view, saved_triage
from db.views.review_export import review_csv, review_markdown
from pages.signin import require_writer
from pages.verdict import show_summary
from pages.widgets import (
    engine,
    follow_url,
    guarded,
    load,
    picker,
    plain,
    say_if_default_review,
    set_param,
    shown_review,
    stop,
    table,
    text_param,
)


def _triage_form(found, query: CompareQuery) -> None:
    who = require_writer("triage a regression")  # the note's author is the signed-in name, never typed
    labels = [f"{r.scope} · {r.case} · {r.compile} · {r.metric}" for r in found.itertuples()]  # the table's names
    if st.session_state.pop("reg_saved", None):
        st.success("Triage saved: the table above shows it, for everyone.")
        for key in [k for k in st.session_state if str(k).startswith(FORM_KEYS)]:  # refilled from what is saved
            st.session_state.pop(key, None)
    st.subheader("Triage")
    # outside the form: picking a regression reruns the page and fills the form with its saved state
    pick = st.selectbox("Regression", range(len(labels)), format_func=lambda i: labels[i], key="reg_pick")
    row = found.iloc[pick]
    st.caption(plain(saved_triage(row)))  # a comment and a link are user text
    st.caption(TRIAGE_RULE)
    one = hashlib.sha1(repr([str(row[k]) for k in NOTE_KEY]).encode()).hexdigest()[:12]  # this regression's fields
    with st.form(f"triage_{one}"):
        state = st.selectbox("State", STATES, index=STATES.index(row["state"]), key=f"reg_state_{one}")
        comment = st.text_area("Comment", value=row["comment"], key=f"reg_comment_{one}")
        link = st.text_input("Link (http(s)://…)", value=row["link"], key=f"reg_link_{one}")
        st.text(f"Author: {who.name}")
        if st.form_submit_button("Save triage"):
            try:
                save_note(
                    engine(),
                    query.baseline,
                    query.candidate,
                    {k: row[k] for k in NOTE_KEY},
                    state,
                    who.name,
                    comment,
                    link,
                )
            except StoreError as err:  # e.g. a link that is no URL: named, the comment and link left to mend
                st.error(plain(err))
                return
            st.session_state["reg_saved"] = True  # shown after the rerun that re-reads the notes
            st.rerun()


FORM_KEYS = ("reg_state_", "reg_comment_", "reg_link_")  # the form's fields, one set per regression


def _render() -> None:
    st.title("Regressions")
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    if not options:
        st.info("No runs stored yet.")
        stop()
    first, last = default_sides(selectors)  # the latest stable build vs the newest rc or nightly after it
    shown = side_labels(selectors)
    say_if_default_review()
    baseline = picker("Baseline", "baseline", options, first or options[0], page="reg", format_func=shown)
    candidate = picker("Candidate", "candidate", options, last or options[-1], page="reg", format_func=shown)
    scope = picker("Scope", "scope", ["machine", "chip"], "machine", page="reg")
    shown_review(baseline=baseline, candidate=candidate, scope=scope)
    start = threshold_percent(st.query_params.get("threshold"))  # percent, read as GET /api/v1/regressions does
    threshold = st.slider("Threshold (% worse)", 1, 100, key=follow_url("reg", "threshold", int(round(start))))
    set_param("threshold", str(threshold), "5")
    rules = text_param("Rule overrides (metric.field=value, comma list)", "rules", page="reg")
    review = Review.from_params(
        {"baseline": baseline, "candidate": candidate, "scope": scope, "threshold": str(threshold), "rules": rules}
    )
    query = review.compare
    view = regressions_view(engine(), review)  # one judged review for the table, the doubtful cases and the cards
    if view.empty:
        st.warning(plain(view.empty))  # names the selectors from the URL: text
        stop()
    found, cards = view.found, view.cards
    show_summary(cards)  # the verdict first, with the comparison's notes
    st.text(
        f"{len(found)} regression(s) of {candidate} against baseline {baseline}, worst first "
        f"(threshold {threshold} % for replicated figures; each metric's own rule otherwise; "
        "docs/regressions.md)"
    )
    table(found)
    for mine, words in (
        (
            view.unconfirmed,
            "unconfirmed, not regressions: worse beyond the threshold with nothing "
            "to test them on (one process, one run a side, no A/A data), or contended "
            "— too few worker processes ran while the cores were free, whichever way "
            "they moved (`doubt` and `contention` say which; `mpsbench confirm` "
            "reruns them)",
        ),
        (
            view.suspected,
            "likely worse, not certain: each one's own test says worse, the test over the "
            "whole review does not yet (more runs decide: `mpsbench confirm`; see How this is decided)",
        ),
    ):
        if len(mine):
            st.text(f"{len(mine)} {words}")
            table(mine.drop(columns=["state", "comment", "author", "link"]))
    summary = cards.summary
    doubts = view.doubts
    st.download_button(
        "Markdown",
        review_markdown(found, baseline, candidate, summary["notes"], summary, view.changes, doubts),
        "regressions.md",
        "text/markdown",
    )
    st.download_button("CSV", review_csv(found, doubts), "regressions.csv", "text/csv")
    if not found.empty:
        _triage_form(found, query)


guarded(_render)
