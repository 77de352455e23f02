"""Compare: baseline → candidate, case by case, with per-family geomeans and the cases that could not be paired."""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from db.query.params import int_param, one_of
from db.query.selectors import available_selectors
from db.review.comparison import CompareQuery, ComparisonResult
from db.review.release.status_changes import status_changes, status_words
from db.review.review import Review, cached_review
from db.views.case_detail import case_provenance, case_trend_url
from db.views.compare import CASE_VIEW, case_order, named_unmatched, shown_cases
from db.views.compare_chart import CHART_DEFAULT, case_labels, case_rows, chart_rows, chart_words
from db.views.defaults import default_sides, side_labels
from db.views.empty_reason import empty_reason
from db.views.verdict_cards import verdict_cards
from db.views.what_ran import case_what_ran
from pages.charts import ratio_chart, ratio_chart_px, samples_chart
from pages.verdict import show_summary
from pages.what_ran import what_ran_panel
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

CHART_MAX = 500  # cases drawn: the largest changes and every regression (a 50k-point chart helps no one)
CHART_PX = 900  # the ratio chart's box when it would be taller (it scrolls inside)
TABLE_ROWS = 2000  # case rows sent by default; 50k rows are ~18 MB for the browser to parse (all on request)


def _controls() -> dict[str, str]:
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    if not options:
        st.info("No runs stored yet.")
        stop()
    say_if_default_review()
    left, right, scope_col = st.columns([3, 3, 1])
    first, last = default_sides(selectors)  # the latest stable build vs the newest rc or nightly after it
    shown = side_labels(selectors)
    with left:
        baseline = picker(
            "Baseline (build, tag:key=value or runs:id,id)",
            "baseline",
            options,
            first or options[0],
            page="cmp",
            format_func=shown,
        )
    with right:
        candidate = picker("Candidate", "candidate", options, last or options[-1], page="cmp", format_func=shown)
    with scope_col:
        # chip scope first: one verdict per chip (machines of one chip pooled, explicitly); machine on request
        scope = picker("Scope", "scope", ["chip", "machine"], "chip", page="cmp")
    cols = st.columns(4)
    filters = {}
    for col, name in zip(cols, ("workload", "dtype", "compile", "metric")):
        with col:
            filters[name] = text_param(name.capitalize() + " (comma list)", name, page="cmp")
    shown_review(baseline=baseline, candidate=candidate, scope=scope)
    pool = st.query_params.get("pool", "")  # pool=1 in the link: sides may span builds (the notes name them)
    return {"baseline": baseline, "candidate": candidate, "scope": scope, "pool": pool, **filters}


def _ratio_section(rows: pd.DataFrame, baseline: str) -> pd.DataFrame:
    start = int_param("chart_cases", st.query_params.get("chart_cases"), CHART_DEFAULT, 5, CHART_MAX)
    limit = st.slider(
        "Cases in the chart (the largest changes, drawn worst to best; regressions always)",
        5,
        CHART_MAX,
        key=follow_url("cmp", "chart_cases", start),
    )
    set_param("chart_cases", str(limit), str(CHART_DEFAULT))
    data = chart_rows(rows, limit)
    if not data.empty:
        st.text(chart_words(data, limit, len(rows)))
        # a chart taller than CHART_PX scrolls inside a box that high: the page never grows to thousands of px
        with st.container(height=CHART_PX if ratio_chart_px(data) > CHART_PX else "content", border=False):
            st.altair_chart(ratio_chart(data, baseline), width="stretch")
    return data


def _case_detail(result: ComparisonResult, rows: pd.DataFrame, chart: pd.DataFrame, picked: int | None) -> None:
    """The case picked in the table (else the worst regression, else the largest change): its samples on both
    sides, its trend link, both sides' runs with their provenance and what ran on each (pages/what_ran.py). The menu holds the chart's cases and the
    one picked: what the screen shows, not every case (50k options are megabytes for the browser)."""
    st.subheader("Case detail")
    order = chart.row.tolist() or rows.row.tolist()[:CHART_MAX]
    if picked is not None and picked in rows.index and picked not in order:
        order = [picked] + order
    labels = dict(zip(order, case_labels(rows.loc[order])))
    first = picked if picked in labels else order[0]
    # keyed by the review too: a row number names another case in another review, and a kept key kept the menu's
    # old label (the browser's) over the new review's numbers for that row
    review = hashlib.sha1(repr(result.query).encode()).hexdigest()[:12]
    row = st.selectbox(
        "Case (or select a row in the table above)",
        order,
        index=order.index(first),
        key=f"cmp_case_{review}_{first}",
        format_func=lambda r: labels[r],
    )
    case = rows.loc[row]
    st.link_button("Trend of this case over builds ↗", case_trend_url(case))
    left, right = st.columns(2)
    with left:
        st.altair_chart(samples_chart(result.case_samples(int(row)), case.unit), width="stretch")
    with right:
        st.text(
            f"{case.change}; baseline median {case.baseline_median:.4g} {case.unit} (n={case.baseline_n}), "
            f"candidate {case.candidate_median:.4g} {case.unit} (n={case.candidate_n}); {case.significance}"
        )
        if case.derived:
            st.text(case.derived)
    table(case_provenance(engine(), result.query, case))
    what_ran_panel(case_what_ran(engine(), result.query, case))


def _status_panel(changes: pd.DataFrame) -> None:
    st.subheader("Status changes")
    if changes.empty:
        st.text(
            "No case changed status (unsupported, error, OOM, unavailable, fallback, passed/failed) between the sides."
        )
        return
    st.text(status_words(changes))
    table(changes.drop(columns=["case_key"]))


def _case_table(cases: pd.DataFrame) -> int | None:
    """The case table; returns the row id of the case selected in it, if any."""
    asked = _all_cases() == "1"  # checked even when every case fits: a bad link is named
    every = len(cases) <= TABLE_ROWS or st.toggle(
        f"Show all {len(cases)} cases (slow in the browser)", key=follow_url("cmp", "all_cases", asked)
    )
    if len(cases) > TABLE_ROWS:
        set_param("all_cases", "1" if every else "0", "0")
    ordered = case_order(cases)  # regressions first, then the largest changes
    shown = ordered if every else ordered.head(TABLE_ROWS)
    if not every:
        st.text(
            f"The regressions and the largest changes, {len(shown)} of {len(cases)} cases; GET /api/v1/compare "
            "with the same parameters returns every case."
        )
    event = table(
        shown_cases(shown)[CASE_VIEW],
        key="cmp_table",
        on_select="rerun",
        selection_mode="single-row",
        column_config={
            # the name held in view while the table scrolls sideways; 360 px leaves the figures, the change and the
            # verdict in view at 1440 px (a name as wide as its text took 500 px)
            "case": st.column_config.TextColumn("case", width=360, pinned=True),
            "baseline_value": st.column_config.TextColumn("baseline"),  # the side's median with its unit
            "candidate_value": st.column_config.TextColumn("candidate"),
            "trend": st.column_config.LinkColumn("trend", display_text="trend ↗"),
            "ci_low": st.column_config.NumberColumn("95 % CI low (change unit)"),
            "ci_high": st.column_config.NumberColumn("95 % CI high (change unit)"),
        },
    )
    chosen = getattr(getattr(event, "selection", None), "rows", None) or []
    return int(shown.row.iloc[chosen[0]]) if chosen else None


def _all_cases() -> str:
    return one_of("all_cases", st.query_params.get("all_cases") or "0", ("0", "1"))


def _render() -> None:
    st.title("Compare")
    query = CompareQuery.from_params(_controls())
    judged = cached_review(engine(), Review(query))  # judged once per data version (db.review): rows, chart, cards
    result = judged.comparison
    top = st.container()  # the verdict goes first on the page, but is computed after the chart is sent
    why = empty_reason(result)
    if why:
        st.warning(plain(why))  # names the selectors from the URL: text
    if query.baseline == query.candidate:  # one build against itself: no verdict, no chart of ratios of 1
        stop()
    # the summary and the ratio chart come first: they answer "is it a win?" before 10⁴ table rows arrive
    rows = case_rows(judged)
    chart = _ratio_section(rows, query.baseline) if not rows.empty else rows
    with top:  # the verdict first; its notes are the comparison's
        show_summary(verdict_cards(engine(), judged))
    _status_panel(status_changes(result.cases, result.unmatched))
    if len(result.families):
        st.subheader("Per family geomean")
        table(result.families)
    if not rows.empty:
        st.subheader("Per case")
        picked = _case_table(rows)
        _case_detail(result, rows, chart, picked)
    st.subheader("Not compared (one side only, or no ok figure on a side)")
    table(named_unmatched(result.unmatched))


guarded(_render)
