"""Trends: one metric of one case over builds (version order) per chip, with its IQR band and change points.
The case is picked from menus (workload → case → dtype → compile → metric); every menu lives in the URL, so the
Compare page's rows link here."""

from __future__ import annotations

import streamlit as st

from db.views.browse.trends import FIELDS, build_annotations, resolve_case, trend, trend_choices
from pages.parts.browse_charts import annotated_trend_chart
from pages.parts.cache import load
from pages.parts.guard import guarded, stop_if_empty
from pages.parts.table import table
from pages.parts.url_state import picker, set_param, url_moved

# two rows: the workload and its (long) case name, then dtype, compile mode and metric a third each: one row of
# five left dtype and compile 56 px wide at 1280 px ("fl", "e")
MENUS = {
    "workload": ("Workload", 1),
    "case_key": ("Case", 3),
    "dtype": ("dtype", 1),
    "compile": ("Compile", 1),
    "metric": ("Metric", 1),
}


def _menus() -> dict[str, str]:
    """The URL's choice per menu (a bad link is named by resolve_case); a menu the user has touched this session
    may have been left stale by a change before it: it falls back to its default instead."""
    choices = load(trend_choices)
    stop_if_empty(choices)
    if url_moved():  # Back, Forward or a link: the URL's case, not the menus' last state
        for k in FIELDS:
            st.session_state.pop(f"tr_{k}", None)
    asked = {k: st.session_state.get(f"tr_{k}", st.query_params.get(k, "")) for k in FIELDS}
    lenient = [k for k in FIELDS if f"tr_{k}" in st.session_state]
    case, menus = resolve_case(choices, asked, lenient)
    names = dict(zip(choices.case_key, choices.case))
    chosen = {}
    widths = [w for _, w in MENUS.values()]
    columns = [*st.columns(widths[:2]), *st.columns(widths[2:])]
    for i, (column, key) in enumerate(zip(columns, FIELDS)):
        if st.session_state.get(f"tr_{key}", case[key]) != case[key]:
            del st.session_state[f"tr_{key}"]  # stale after an earlier menu changed: show the default
        # the URL names what differs from what an absent parameter means (the first option the earlier menus leave)
        set_param(key, case[key], resolve_case(choices, {k: case[k] for k in FIELDS[:i]})[0][key])
        with column:
            chosen[key] = picker(
                MENUS[key][0],
                key,
                menus[key],
                case[key],
                page="tr",
                format_func=(lambda k: names.get(k, k)) if key == "case_key" else None,
            )
    return chosen


def _render() -> None:
    st.title("Trends")
    chosen = _menus()
    points = load(trend, *(chosen[k] for k in FIELDS))
    st.caption(
        "Median per build and chip with its interquartile band; builds in version order (nightlies by "
        "date). Change points (red): L1 Potts model on log medians, penalty 4·ln(n)·σ, segments ≥ 2 builds, "
        "steps ≥ 5 % (db/stats/changepoints.py). A dotted grey rule marks each build that first appeared "
        "in the store (any case, any machine) within this series' time range, labelled with that first run."
    )
    st.altair_chart(annotated_trend_chart(points, load(build_annotations, points)), width="stretch")
    table(points.drop(columns=["build_rank", "position"]))


guarded(_render)
