"""The review carried between pages: the last review a page showed, linked under the sidebar's menu to Compare and
Regressions, and the caption that says when a page shows the default review instead."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from pages.parts.plain import plain
from pages.parts.url_state import url_param

_REVIEW = "_review"  # session state: the review (baseline, candidate, scope) the last page with one showed
REVIEW_PAGES = (("compare.py", "Compare"), ("regressions.py", "Regressions"))


def shown_review(**sides: str) -> None:
    """Record the review this page shows (called after its pickers), for the sidebar's links: a default review
    (the URL names neither side) only while none was picked, so a visit by the menu keeps the review picked."""
    explicit = url_param("baseline") is not None or url_param("candidate") is not None
    if sides.get("baseline") and sides.get("candidate") and (explicit or _REVIEW not in st.session_state):
        st.session_state.setdefault(_REVIEW, {}).update({k: v for k, v in sides.items() if v})


def sidebar_review() -> None:
    """Links under the sidebar's menu that carry the review last shown to Compare and Regressions (the menu's own
    links open each page's default review). navigation.py draws them after every page run."""
    review = st.session_state.get(_REVIEW)
    if not review:
        return
    scope = f" · {review['scope']} scope" if review.get("scope") else ""
    with st.sidebar:
        st.caption(plain(f"This review: {review['baseline']} → {review['candidate']}{scope}"))
        for file, title in REVIEW_PAGES:
            try:
                st.page_link(file, label=f"{title} of this review", query_params=review)
            except StreamlitAPIException:  # a page run on its own (no navigation: AppTest) has no pages to link
                return


DEFAULT_REVIEW = (
    "Showing the default review, the latest stable build against the newest rc (else nightly) after "
    'it: pick others above, or open a review picked elsewhere from the sidebar\'s "of this review" '
    "links."
)


def say_if_default_review() -> None:
    """A caption when the URL names neither side: the page shows the default, not the review picked elsewhere."""
    if url_param("baseline") is None and url_param("candidate") is None:
        st.caption(DEFAULT_REVIEW)
