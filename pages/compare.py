"""Compare: baseline → candidate, case by case, with per-family geomeans and the cases that could not be paired."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from db.views.compare import CompareQuery, ComparisonResult, compare, named_cases
from db.query.selectors import available_selectors
from pages.charts import absolute_chart, charted, largest_first, ratio_chart, samples_chart
from db.views.params import int_param, one_of
from pages.widgets import engine, guarded, load, picker, text_param

# the case's name and the numbers with their units first; the identifying keys pinned at the end
CASE_VIEW = ["case", "trend", "scope", "metric", "change", "baseline_median", "candidate_median", "unit",
             "change_unit", "ci_low", "ci_high", "significance", "p_value", "baseline_iqr", "baseline_n",
             "candidate_iqr", "candidate_n", "ratio", "oriented_ratio", "difference", "caveats", "device", "workload",
             "dtype", "compile", "case_key"]
SUMMARIES = 12  # family summaries printed as text; the table below lists every family
CHART_DEFAULT, CHART_MAX = 60, 500  # cases drawn: the largest changes (a 50k-point chart helps no one)
TABLE_ROWS = 2000  # case rows sent by default; 50k rows are ~18 MB for the browser to parse (all on request)


def _controls() -> dict[str, str]:
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    if not options:
        st.info("No runs stored yet.")
        st.stop()
    left, right, scope_col = st.columns([3, 3, 1])
    with left:
        baseline = picker("Baseline (build, tag:key=value or runs:id,id)", "baseline", options, options[0], page="cmp")
    with right:
        candidate = picker("Candidate", "candidate", options, options[-1], page="cmp")
    with scope_col:
        scope = picker("Scope", "scope", ["machine", "chip"], "machine", page="cmp")
    cols = st.columns(4)
    filters = {}
    for col, name in zip(cols, ("workload", "dtype", "compile", "metric")):
        with col:
            filters[name] = text_param(name.capitalize() + " (comma list)", name, page="cmp")
    pool = st.query_params.get("pool", "")  # pool=1 in the link: sides may span builds (the notes name them)
    return {"baseline": baseline, "candidate": candidate, "scope": scope, "pool": pool, **filters}


def _ratio_section(result: ComparisonResult) -> pd.DataFrame:
    start = int_param("chart_cases", st.query_params.get("chart_cases"), CHART_DEFAULT, 5, CHART_MAX)
    limit = st.slider("Cases in the charts (largest changes first)", 5, CHART_MAX, start, key="cmp_chart_cases")
    st.query_params["chart_cases"] = str(limit)
    data = charted(result.cases, limit)
    if not data.empty:
        st.text(f"Per-case ratio: the {len(data)} largest changes of {len(result.cases)} compared cases "
                f"(ratio metrics); the table below lists every case.")
        st.altair_chart(ratio_chart(data), width="stretch")
    return data


def _detail_charts(result: ComparisonResult, data: pd.DataFrame) -> None:
    if data.empty:
        return
    metric = st.selectbox("Absolute values for metric", sorted(data.metric.unique()), key="cmp_abs")
    shown = data[data.metric == metric]
    st.altair_chart(absolute_chart(shown, shown.unit.iloc[0]), width="stretch")
    pick = st.selectbox("Sample distribution of case", shown.row.tolist(), key="cmp_dist",
                        format_func=lambda r: str(shown.case[r]))
    st.altair_chart(samples_chart(result.case_samples(int(pick)), shown.unit[pick]), width="stretch")


def _case_table(cases: pd.DataFrame) -> None:
    asked = _all_cases() == "1"  # checked even when every case fits: a bad link is named
    every = len(cases) <= TABLE_ROWS or st.toggle(f"Show all {len(cases)} cases (slow in the browser)",
                                                 value=asked, key="cmp_all")
    if len(cases) > TABLE_ROWS:
        st.query_params["all_cases"] = "1" if every else "0"
    shown = cases if every else largest_first(cases, TABLE_ROWS)
    if not every:
        st.text(f"The {len(shown)} largest changes of {len(cases)} cases, largest first (difference metrics "
                "after); GET /api/v1/compare with the same parameters returns every case.")
    st.dataframe(named_cases(shown)[CASE_VIEW], hide_index=True,
                 column_config={"trend": st.column_config.LinkColumn("trend", display_text="trend ↗"),
                                "ci_low": st.column_config.NumberColumn("95 % CI low (change unit)"),
                                "ci_high": st.column_config.NumberColumn("95 % CI high (change unit)")})


def _all_cases() -> str:
    return one_of("all_cases", st.query_params.get("all_cases") or "0", ("0", "1"))


def _render() -> None:
    st.title("Compare")
    query = CompareQuery.from_params(_controls())
    result = compare(engine(), query)  # cached per data version inside db.views.compare (no copy per rerun)
    for note in result.notes:
        st.text(note)  # notes carry selector text, which can carry tag values from bundles: text, not Markdown
    st.subheader("Per family geomean")
    for summary in result.families.summary[:SUMMARIES]:
        st.text(summary)
    if len(result.families) > SUMMARIES:
        st.text(f"… {len(result.families) - SUMMARIES} more families in the table below")
    # the summary and the ratio chart come first: they answer "is it a win?" before 10⁴ table rows arrive
    data = _ratio_section(result) if not result.cases.empty else pd.DataFrame()
    st.dataframe(result.families, hide_index=True)
    st.subheader("Per case")
    _case_table(result.cases)
    _detail_charts(result, data)
    st.subheader("Not compared (one side only, or no ok figure on a side)")
    st.dataframe(result.unmatched, hide_index=True)


guarded(_render)
