"""Compare: baseline → candidate, case by case, with per-family geomeans and the cases that could not be paired."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from db.views.compare import CompareQuery, ComparisonResult, compare
from db.query.selectors import available_selectors
from pages.render import engine, guarded, load, tooltips

CASE_VIEW = ["scope", "device", "workload", "case_key", "dtype", "compile", "metric", "unit", "baseline_median",
             "baseline_iqr", "baseline_n", "candidate_median", "candidate_iqr", "candidate_n", "change", "ratio",
             "oriented_ratio", "difference", "change_unit", "ci_low", "ci_high", "p_value", "significance", "caveats"]
SUMMARIES = 12  # family summaries printed as text; the table below lists every family
CHART_DEFAULT, CHART_MAX = 60, 500  # cases drawn: the largest changes (a 50k-point chart helps no one)
TABLE_ROWS = 2000  # case rows sent by default; 50k rows are ~18 MB for the browser to parse (all on request)


def _pick(label: str, key: str, options: list[str], default: str) -> str:
    current = st.query_params.get(key, default)
    choices = options if current in options else [current] + options
    chosen = st.selectbox(label, choices, index=choices.index(current), key=f"cmp_{key}")
    st.query_params[key] = chosen
    return chosen


def _text(label: str, key: str) -> str:
    value = st.text_input(label, st.query_params.get(key, ""), key=f"cmp_{key}")
    if value:
        st.query_params[key] = value
    elif key in st.query_params:
        del st.query_params[key]
    return value


def _controls() -> dict[str, str]:
    selectors = load(available_selectors)
    options = selectors.selector.tolist()
    if not options:
        st.info("No runs stored yet.")
        st.stop()
    left, right, scope_col = st.columns([3, 3, 1])
    with left:
        baseline = _pick("Baseline (build, tag:key=value or runs:id,id)", "baseline", options, options[0])
    with right:
        candidate = _pick("Candidate", "candidate", options, options[-1])
    with scope_col:
        scope = _pick("Scope", "scope", ["machine", "chip"], "machine")
    cols = st.columns(4)
    filters = {}
    for col, name in zip(cols, ("workload", "dtype", "compile", "metric")):
        with col:
            filters[name] = _text(name.capitalize() + " (comma list)", name)
    return {"baseline": baseline, "candidate": candidate, "scope": scope, **filters}


def _labels(cases: pd.DataFrame) -> pd.Series:
    return cases.scope + " · " + cases.workload + " " + cases.case_key + " " + cases.dtype + " " + cases["compile"]


def charted(cases: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The ratio cases with the largest changes (|log oriented ratio|), at most `limit`, keeping their row ids."""
    ratios = cases[cases.comparison == "ratio"].dropna(subset=["oriented_ratio"])
    ratios = ratios[np.isfinite(ratios.oriented_ratio.astype(float)) & (ratios.oriented_ratio > 0)]
    size = np.abs(np.log(ratios.oriented_ratio.astype(float)))
    chosen = ratios.loc[size.sort_values(ascending=False, kind="stable").index[:limit]].copy()
    chosen["row"], chosen["case"] = chosen.index, _labels(chosen) + " " + chosen.metric
    return chosen


class _Layer(alt.LayerChart):
    """A layer chart whose spec is not checked against the Vega-Lite JSON schema when Streamlit converts it:
    Altair's check costs ~150 ms a chart here, spent before the chart is sent. The specs are fixed by this
    module; tests/test_compare_page_charts.py checks each against the schema (the unchecked spec is the same)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


class _Chart(alt.Chart):
    """alt.Chart, its spec unchecked when Streamlit converts it (see _Layer)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


def _ratio_chart(data: pd.DataFrame) -> alt.Chart:
    base = alt.Chart(data).mark_point(filled=True, size=60).encode(
        x=alt.X("oriented_ratio:Q", scale=alt.Scale(type="log"), title="candidate vs baseline (× better, log axis)"),
        y=alt.Y("case:N", title=None, sort=alt.EncodingSortField("oriented_ratio", order="ascending")),
        color=alt.Color("significance:N"), shape=alt.Shape("metric:N"),
        tooltip=tooltips(data, "scope", "workload", "case_key", "dtype", "compile", "metric", "unit") + [
            alt.Tooltip("baseline_median:Q", title="baseline median (unit)"),
            alt.Tooltip("candidate_median:Q", title="candidate median (unit)"), alt.Tooltip("change:N"),
            alt.Tooltip("ci_low:Q", title="95 % CI low (×)"), alt.Tooltip("ci_high:Q", title="95 % CI high (×)"),
            alt.Tooltip("p_value:Q"), alt.Tooltip("significance:N")])
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x=alt.X("x:Q"))
    return _Layer(layer=[base, rule])


def _absolute_chart(data: pd.DataFrame, unit: str) -> alt.Chart:
    long = data.melt(id_vars=["case", "scope", "workload", "case_key", "metric", "unit"],
                     value_vars=["baseline_median", "candidate_median"], var_name="side", value_name="median")
    return _Chart(long).mark_bar().encode(
        x=alt.X("median:Q", title=f"median ({unit})"), y=alt.Y("case:N", title=None), color=alt.Color("side:N"),
        yOffset=alt.YOffset("side:N"), tooltip=tooltips(long, "scope", "workload", "case_key", "metric", "side") + [
            alt.Tooltip("median:Q", title=f"median ({unit})"), alt.Tooltip("unit:N")])


def _samples_chart(samples: pd.DataFrame, unit: str) -> alt.Chart:
    points = alt.Chart(samples).mark_tick(thickness=2, size=24).encode(
        x=alt.X("sample:Q", title=f"sample ({unit})", scale=alt.Scale(zero=False)), y=alt.Y("side:N", title=None),
        color=alt.Color("side:N"), tooltip=[alt.Tooltip("side:N"), alt.Tooltip("sample:Q", title=f"sample ({unit})"),
                                            alt.Tooltip("unit:N")])
    box = alt.Chart(samples).mark_boxplot(opacity=0.3, size=30).encode(
        x=alt.X("sample:Q", scale=alt.Scale(zero=False)), y=alt.Y("side:N"), color=alt.Color("side:N"))
    return _Layer(layer=[box, points])


def _ratio_section(result: ComparisonResult) -> pd.DataFrame:
    limit = st.slider("Cases in the charts (largest changes first)", 5, CHART_MAX,
                      int(st.query_params.get("chart_cases", CHART_DEFAULT)), key="cmp_chart_cases")
    st.query_params["chart_cases"] = str(limit)
    data = charted(result.cases, limit)
    if not data.empty:
        st.text(f"Per-case ratio: the {len(data)} largest changes of {len(result.cases)} compared cases "
                f"(ratio metrics); the table below lists every case.")
        st.altair_chart(_ratio_chart(data), width="stretch")
    return data


def _detail_charts(result: ComparisonResult, data: pd.DataFrame) -> None:
    if data.empty:
        return
    metric = st.selectbox("Absolute values for metric", sorted(data.metric.unique()), key="cmp_abs")
    shown = data[data.metric == metric]
    st.altair_chart(_absolute_chart(shown, shown.unit.iloc[0]), width="stretch")
    pick = st.selectbox("Sample distribution of case", shown.row.tolist(), key="cmp_dist",
                        format_func=lambda r: str(shown.case[r]))
    st.altair_chart(_samples_chart(result.case_samples(int(pick)), shown.unit[pick]), width="stretch")


def _case_table(cases: pd.DataFrame) -> None:
    every = len(cases) <= TABLE_ROWS or st.toggle(f"Show all {len(cases)} cases (slow in the browser)",
                                                 value=st.query_params.get("all_cases") == "1", key="cmp_all")
    if len(cases) > TABLE_ROWS:
        st.query_params["all_cases"] = "1" if every else "0"
    shown = cases if every else charted_rows(cases, TABLE_ROWS)
    if not every:
        st.text(f"The {len(shown)} largest changes of {len(cases)} cases, largest first (difference metrics "
                "after); GET /api/v1/compare with the same parameters returns every case.")
    st.dataframe(shown[CASE_VIEW], hide_index=True)


def charted_rows(cases: pd.DataFrame, limit: int) -> pd.DataFrame:
    """At most `limit` cases: ratio cases by |log oriented ratio|, largest first, then the others."""
    size = np.abs(np.log(cases.oriented_ratio.astype(float).where(cases.oriented_ratio > 0)))
    order = size.fillna(-1.0).sort_values(ascending=False, kind="stable").index[:limit]
    return cases.loc[order]


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
