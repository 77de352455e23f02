"""The verdict first, on Overview, Compare and Regressions: one bordered card per (scope, device, dtype, compile)
group of the release summary (db.views.verdict_cards over db.review.summary), three to a row, red when the group
regressed or newly fails, green otherwise; then the summary's table of every group and its notes. Rendered from the
plain dicts the JSON twins return, so a page and its twin show the same figures. Strings that can come from a
bundle (machine names, tag values in selectors) are shown as text or through pages.widgets.plain."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.widgets import plain  # the one escape for user text in Markdown-rendering elements
from db.views.verdict_cards import Cards

PER_ROW = 3
SHOWN = 9  # cards drawn; more groups (machine scope, many dtypes) are listed in the summary table below them


def show_summary(cards: Cards | dict | None) -> None:
    """The cards and the summary table (nothing when there is no summary: fewer than two builds)."""
    cards = Cards(**cards) if isinstance(cards, dict) else cards
    if cards is None or not cards.summary:
        return
    st.subheader(f"Verdict: {plain(cards.candidate)} against baseline {plain(cards.baseline)}")
    st.caption(plain(f"{cards.verdict}; one card per {cards.scope} · dtype · compile mode, regressions first"))
    shown = cards.cards[:SHOWN]
    for start in range(0, len(shown), PER_ROW):
        for column, card in zip(st.columns(PER_ROW), shown[start:start + PER_ROW]):
            with column.container(border=True):
                _card(card)
    if len(cards.cards) > SHOWN:
        st.caption(f"… {len(cards.cards) - SHOWN} more groups in the table below (chip scope: one card per chip)")
    with st.expander("Release summary: every group", expanded=False):
        st.dataframe(pd.DataFrame(cards.summary["groups"]), hide_index=True)
    for note in cards.summary["notes"]:
        st.text(note)  # notes carry selector text (tag values from bundles): text, not Markdown


def _card(card: dict) -> None:
    st.markdown(f"**{plain(card['title'])}**")
    # red: regressed; orange: nothing regressed but some cases could not be tested; grey: nothing compared (never
    # green over nothing); green otherwise
    colour = ("red" if card["regressed"] or card["new_failures"] else "gray" if not card.get("compared", 1)
              else "orange" if card.get("unconfirmed") else "green")
    st.markdown(f":{colour}[**{plain(card['verdict'])}**]")
    for worst in card.get("worst") or []:  # the regressions by name, each linked to its trend
        st.markdown(f"- [{plain(worst['text'])}]({worst['link']})")
    quiet = ("no memory figures compared", "no correctness figures compared")  # nothing to say: left out
    moved = card["newly_supported"] or card["fixed"] or card["new_failures"]
    lines = [card["counts"], *card["families"], *(x for x in (card["memory"], card["correctness"]) if x not in quiet),
             *([card["status"]] if moved else []), *([card["detects"]] if card.get("detects") else []),
             *([f"evidence: {card['evidence']}"] if card.get("evidence") else [])]
    if not card.get("compared", 1):  # the verdict says why; zero counts would only look like a result
        lines = [card["status"]] if moved else []
    st.text("\n".join(lines))  # one element: a compact card

