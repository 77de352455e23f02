"""The answer first, on Overview, Compare and Regressions: one bordered card per chip (machine in machine scope) —
regression, not decided, win or no change, with every regression and the biggest wins by name — then the detail,
one card per (scope, device, dtype, compile) group of the release summary (db.views.release.verdict_cards over
db.review.release.summary), red when the group regressed or newly fails, green only where it is decided; the summary's
table of every group and how it is decided. Rendered from the
plain dicts the JSON twins return, so a page and its twin show the same figures. Strings that can come from a
bundle (machine names, tag values in selectors) are shown as text or through pages.parts.plain."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from db.views.release.verdict_cards import Cards
from pages.parts.plain import plain
from pages.parts.table import table

PER_ROW = 3
SHOWN = 9  # cards drawn; more groups (machine scope, many dtypes) are listed in the summary table below them


def show_summary(cards: Cards | dict | None) -> None:
    """The release answer per chip (machine), then the detail per dtype and compile mode, the command that decides
    the doubtful cases, and how it is decided (nothing when there is no summary: fewer than two builds)."""
    cards = Cards(**cards) if isinstance(cards, dict) else cards
    if cards is None or not cards.summary:
        return
    st.html(WRAP_LINKS)  # a style alone takes no room on the page
    st.subheader(f"{plain(cards.candidate)} against {plain(cards.baseline)}")
    st.caption(plain(cards.verdict))
    for start in range(0, len(cards.answers), ANSWERS_PER_ROW):
        row = cards.answers[start : start + ANSWERS_PER_ROW]
        for column, answer in zip(st.columns(ANSWERS_PER_ROW), row):
            with column.container(border=True):
                _answer(answer, bool(cards.summary.get("same_build")))
    if cards.summary.get("confirm"):  # the doubtful cases named on the cards are decided by rerunning them
        st.text(
            "Decide the cases that are worse but not confirmed on a machine of each scope (each build's "
            "environment filled in):"
        )
        st.code(cards.summary["confirm"], language=None, wrap_lines=True)
    with st.expander(f"Detail: one card per {cards.scope}, dtype and compile mode", expanded=False):
        shown = cards.cards[:SHOWN]
        for start in range(0, len(shown), PER_ROW):
            for column, card in zip(st.columns(PER_ROW), shown[start : start + PER_ROW]):
                with column.container(border=True):
                    _card(card, bool(cards.summary.get("same_build")))
        if len(cards.cards) > SHOWN:
            st.caption(f"… {len(cards.cards) - SHOWN} more groups in the table below")
        table(pd.DataFrame(cards.summary["groups"]))
    with st.expander("How this is decided", expanded=False):
        st.text(HOW)
        st.text(WORDS)
        for note in cards.summary["notes"]:
            st.text(note)  # notes carry selector text (tag values from bundles): text, not Markdown


ANSWERS_PER_ROW = 2  # a chip's answer names its regressions and wins: two to a row stay readable at 1280 px
NAMED = 5  # regressions and doubts a chip's card names; the Regressions page lists them all
WINS_SHOWN = 3  # the biggest wins, in view beside the regressions
ANSWER_COLOUR = {"regression": "red", "not decided": "orange", "win": "green", "no change": "blue"}
HOW = (
    "A case is one op or model at one shape, dtype and compile mode on one chip (machine); its figures — time "
    "per call, first call, memory peaks, correctness — are counted once, under it. A timing is compared on "
    "its worker processes and runs (and the store's A/A reruns of the baseline): it regressed when it is "
    "slower by more than the threshold and the review's test says the slowdown is real, with the chance of "
    "any false alarm in a review of unchanged builds held at 5 %. A memory peak, PSNR or error regresses by "
    "its own rule. 'Unchanged' means its 95 % interval lies within the threshold both ways; 'not decided' "
    "means it reaches past it (more runs decide). A chip whose tests cannot see a change as small as the "
    "threshold is never called unchanged. A regression triaged as noise, expected or accepted on the "
    "Regressions page is counted apart, as triaged."
)
# the statistical terms behind a card's plain words, said once here
WORDS = (
    "The cards' words, in statistical terms: 'can see a 5 % slowdown (typical case)' — the median case's "
    "smallest slowdown its test finds with 80 % power at the level of Holm's first step (5 % over the number "
    "of cases tested, so the family-wise false-alarm rate of a review stays at 5 %), never less than the "
    "threshold. 'Reruns of the baseline give the noise' — A/A pairs, two runs of one build on one machine, whose "
    "spread is each case's run-to-run variance. '6 baseline runs, 3 candidate runs' — the runs each side "
    "pooled (an A/A baseline runs twice a round). 'Likely, not certain' — suspected: the case's own test "
    "passed, Holm's step over the review did not. 'Not testable' — one figure a side (no replicates), or "
    "figures all alike (a variance of exactly 0 is no evidence). 'Typical case' is the median case."
)


def _answer(card: dict, same_build: bool = False) -> None:
    """One chip's answer: the word, its line, every regression (then the wins, doubts, triage) by name."""
    st.markdown(f"**{plain(card['title'])}**")
    colour = "blue" if same_build else ANSWER_COLOUR.get(card["answer"], "gray")
    st.markdown(f"### :{colour}[{plain(card['answer'])}]")
    st.markdown(_counts(card))
    if card.get("blind"):  # why it is not decided though nothing regressed: what its tests can see
        st.caption(plain(card["blind"].replace("detects", "its tests can only see", 1)))
    for key, label, tone, shown in (
        ("regressions", "regressed", "red", NAMED),
        ("failures", "newly fails", "red", NAMED),
        ("doubts", "not confirmed", "orange", NAMED),
        ("wins", "better", "green", WINS_SHOWN),
        ("triage", "triaged", "gray", NAMED),
    ):
        rows = card.get(key) or []
        for item in rows[:shown]:
            if isinstance(item, dict):
                case_link(f":{tone}[{label}:] {plain(item['text'])}", item["link"])
            else:
                st.markdown(f"- :{tone}[{label}:] {plain(item)}")
        if len(rows) > shown:
            where = "Compare lists every case" if key == "wins" else "the Regressions page lists them all"
            st.caption(f"… {len(rows) - shown} more {label} ({where})")


TONE = {"better": "green", "worse": "red"}  # a line's tone (db.views.release.verdict_cards) as its Markdown colour
DOUBTS_SHOWN = 3  # doubtful cases a card names; Regressions lists them all


def _card(card: dict, same_build: bool = False) -> None:
    st.markdown(f"**{plain(card['title'])}**")
    # red: regressed; orange: nothing regressed but some cases were not confirmed or not tested; grey: nothing
    # compared (never green over nothing); blue: one build on both sides; green otherwise
    # a group whose tests cannot see a change as small as the bound cannot be called unchanged: never green
    doubtful = card.get("unconfirmed") or card.get("suspected") or card.get("untested") or not card.get("sees_bound", 1)
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
        case_link(plain(worst["text"]), worst["link"])
    doubts = card.get("doubts") or []
    for doubt in doubts[:DOUBTS_SHOWN]:  # what could not be confirmed, by name: never only a count
        case_link(f":orange[unconfirmed:] {plain(doubt['text'])}", doubt["link"])
    more = max(card.get("unconfirmed", 0) + card.get("suspected", 0), len(doubts)) - DOUBTS_SHOWN
    if more > 0:
        st.caption(f"… {more} more doubtful on the Regressions page")
    if card["regressed"] > len(card.get("worst") or []):
        st.caption(f"… {card['regressed'] - len(card.get('worst') or [])} more regressed on the Regressions page")
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
    if card.get("evidence") and not str(card.get("detects")).startswith("can see nothing"):  # said there already
        said.append((f"evidence: {card['evidence']}", ""))
    # one element: a compact card; wins green as losses red (the words are the summary's: escaped)
    st.markdown("  \n".join(_toned(x, t) for x, t in said))


# A page link's label is one line cut with "…" (Streamlit's own style): a case's change ("1.20× slower") sits at the
# end of its name and was cut off in a card. Wrapped like the text around it instead (our style, no user text).
WRAP_LINKS = "<style>[data-testid='stPageLink-NavLink'] span { white-space: normal; }</style>"


def case_link(label: str, link: str) -> None:
    """A card's case link ("trends?workload=…", "correctness?…": db.views.release.verdict_cards) as an in-app page link:
    the page opens in this tab and Back returns to the card (a Markdown link opened a new tab). `label`: Markdown,
    its user text escaped. A page run without the navigation (AppTest on one file) gets the Markdown link."""
    path, _, query = link.partition("?")
    try:
        st.page_link(f"{path}.py", label=label, icon=":material/chevron_right:", query_params=dict(parse_qsl(query)))
    except StreamlitAPIException:
        st.markdown(f"- {label} ([open]({link}))")


def _toned(text: str, tone: str) -> str:
    """A card line as Markdown: the summary's words escaped, green when better, red when worse."""
    return f":{TONE[tone]}[{plain(text)}]" if TONE.get(tone) else plain(text)


def _counts(card: dict) -> str:
    """The case counts (db.views.release.verdict_cards.counts_words) with the wins green and the losses red (Markdown: the
    words are ours, the numbers ints)."""
    text = plain(card["counts"])
    for word, colour in (("regressed", "red"), ("faster", "green"), ("slower", "red")):
        n = int(card.get(word) or 0)
        if n:
            text = text.replace(f"{n} {word}", f":{colour}[{n} {word}]", 1)
    return text
