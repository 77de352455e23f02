"""The verdict first, on Overview, Compare and Regressions: one bordered card per (scope, device, dtype, compile)
group of the release summary (db.views.verdict_cards over db.review.summary), three to a row, red when the group
regressed or newly fails, green otherwise; then the summary's table of every group and its notes. Rendered from the
plain dicts the JSON twins return, so a page and its twin show the same figures. Strings that can come from a
bundle (machine names, tag values in selectors) are shown as text or through pages.widgets.plain."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db.views.verdict_cards import Cards
from pages.widgets import plain, table  # the one escape for user text in Markdown-rendering elements

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
        for column, card in zip(st.columns(PER_ROW), shown[start : start + PER_ROW]):
            with column.container(border=True):
                _card(card, bool(cards.summary.get("same_build")))
    if len(cards.cards) > SHOWN:
        st.caption(f"… {len(cards.cards) - SHOWN} more groups in the table below (chip scope: one card per chip)")
    if cards.summary.get("confirm"):  # the doubtful cases named on the cards are decided by rerunning them
        st.text(
            "Decide the unconfirmed and suspected cases on a machine of each scope (each build's environment "
            "filled in):"
        )
        st.code(cards.summary["confirm"], language=None, wrap_lines=True)
    with st.expander("Release summary: every group", expanded=False):
        table(pd.DataFrame(cards.summary["groups"]))
    for note in cards.summary["notes"]:
        st.text(note)  # notes carry selector text (tag values from bundles): text, not Markdown


TONE = {"better": "green", "worse": "red"}  # a line's tone (db.views.verdict_cards) as its Markdown colour
DOUBTS_SHOWN = 3  # doubtful cases a card names; Regressions lists them all


def _card(card: dict, same_build: bool = False) -> None:
    st.markdown(f"**{plain(card['title'])}**")
    # red: regressed; orange: nothing regressed but some cases were not confirmed or not tested; grey: nothing
    # compared (never green over nothing); blue: one build on both sides; green otherwise
    doubtful = card.get("unconfirmed") or card.get("suspected") or card.get("untested")
    colour = (
        "red"
        if card["regressed"] or card["new_failures"]
        else "gray"
        if not card.get("compared", 1)
        else "blue"
        if same_build
        else "orange"
        if doubtful
        else "green"
    )  # an A/A review is no verdict
    st.markdown(f":{colour}[**{plain(card['verdict'])}**]")
    for worst in card.get("worst") or []:  # the regressions by name, each linked to its trend
        st.markdown(f"- [{plain(worst['text'])}]({worst['link']})")
    doubts = card.get("doubts") or []
    for doubt in doubts[:DOUBTS_SHOWN]:  # what could not be confirmed, by name: never only a count
        st.markdown(f"- :orange[unconfirmed:] [{plain(doubt['text'])}]({doubt['link']})")
    more = max(card.get("unconfirmed", 0) + card.get("suspected", 0), len(doubts)) - DOUBTS_SHOWN
    if more > 0:
        st.caption(f"… {more} more doubtful on the Regressions page")
    if not card.get("compared", 1):  # the verdict says why; zero counts would only look like a result
        if card["newly_supported"] or card["fixed"] or card["new_failures"]:
            st.markdown(_toned(card["status"], (card.get("tones") or {}).get("status", "")))
        return
    tones = [TONE.get(f.get("tone", "")) for f in card["families"]]
    st.markdown(
        "  \n".join(
            [_counts(card)]
            + [f":{tone}[{plain(f['text'])}]" if tone else plain(f["text"]) for f, tone in zip(card["families"], tones)]
        )
    )
    quiet = ("no memory figures compared", "no correctness figures compared")  # nothing to say: left out
    moved = card["newly_supported"] or card["fixed"] or card["new_failures"] or card.get("other_gains")
    tones = card.get("tones") or {}
    said = [(card[k], tones.get(k, "")) for k in ("memory", "correctness") if card[k] not in quiet]
    said += [(card["status"], tones.get("status", ""))] if moved else []
    said += [(card["detects"], "")] if card.get("detects") else []
    if card.get("evidence") and not str(card.get("detects")).startswith("detects nothing"):  # said there already
        said.append((f"evidence: {card['evidence']}", ""))
    # one element: a compact card; wins green as losses red (the words are the summary's: escaped)
    st.markdown("  \n".join(_toned(x, t) for x, t in said))


def _toned(text: str, tone: str) -> str:
    """A card line as Markdown: the summary's words escaped, green when better, red when worse."""
    return f":{TONE[tone]}[{plain(text)}]" if TONE.get(tone) else plain(text)


def _counts(card: dict) -> str:
    """The timing counts with the wins green and the losses red (Markdown: the words are ours, the numbers ints)."""
    faster, slower = card.get("faster", 0), card.get("slower", 0)
    words = [
        f":green[{faster} faster]" if faster else "0 faster",
        f":red[{slower} slower]" if slower else "0 slower",
        f"{card.get('unchanged', 0)} unchanged (tested timing cases)",
    ]
    extra = card["counts"].partition("(tested timing cases)")[2]  # untested / contended, as worded
    return " / ".join(words) + plain(extra)
