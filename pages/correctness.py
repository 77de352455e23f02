"""Correctness: PSNR (dB) and max error per case against tolerances: baseline → candidate slopes in the metric's
unit (each known tolerance a dashed rule; a case without one is drawn all the same) with improved/worsened counts,
the two builds' records, and "faster but wrong" flags."""

from __future__ import annotations

from functools import partial
from urllib.parse import urlencode

import streamlit as st
from streamlit.errors import StreamlitAPIException

from db.views.browse.correctness import CASE_PARAMS, RULE_WORDS, WITHIN, correctness_view
from db.views.inputs import CORRECTNESS_METRICS, as_build, one_of, tag_keys
from pages.parts.browse_charts import correctness_chart, correctness_slope_chart
from pages.parts.cache import load
from pages.parts.charts import axis_unit
from pages.parts.guard import guarded, stop_if_empty
from pages.parts.plain import plain
from pages.parts.table import table
from pages.parts.url_state import picker


def _slopes(view, split: str, metric: str, case: dict[str, str]):
    left, right = st.columns(2)
    with left:
        baseline = picker(
            "Baseline build", "baseline", view.builds, view.baseline, page="cor", clean=partial(as_build, view.builds)
        )
    with right:
        candidate = picker(
            "Candidate build",
            "candidate",
            view.builds,
            view.candidate,
            page="cor",
            clean=partial(as_build, view.builds),
        )
    if (baseline, candidate) != (view.baseline, view.candidate):
        view = load(
            correctness_view,
            {"split_tag": split, "metric": metric, "baseline": baseline, "candidate": candidate, **case},
        )
    st.subheader(plain(f"{view.metric}: baseline {view.baseline} → candidate {view.candidate}"))  # URL text
    if view.case:  # a card's link opened one case: say so, and the way back to every case (Back works too)
        st.info(plain(f"One case: {view.case}, on every machine ({view.cases} cases compared in all)."))
        back = {"baseline": baseline, "candidate": candidate, "metric": view.metric, "split_tag": split}
        _all_cases_link({k: v for k, v in back.items() if v})
    c = view.counts
    if view.empty:
        st.info(plain(view.empty))
        return view
    st.text(
        f"{c['improved']} improved, {c['worsened']} worsened, {c[WITHIN]} {WITHIN} of {len(view.slopes)} "
        f"case(s), by the rule Regressions uses ({RULE_WORDS})"
    )
    untold = int(view.slopes["tolerance"].isna().sum())
    figure = axis_unit(view.metric, view.slopes["unit"].iloc[0])  # "psnr_vs_cpu (dB)"
    st.caption(
        f"Each case's {figure} on both builds; a dashed rule marks each "
        "tolerance the records carry"
        + (f" ({untold} case(s) carry none: drawn without a rule, their verdict is 'no tolerance')" if untold else "")
        + "."
    )
    st.altair_chart(correctness_slope_chart(view.slopes, view.baseline, view.candidate), width="stretch")
    table(view.slopes)
    return view


def _all_cases_link(params: dict[str, str]) -> None:
    """In-app, so Back returns here: this page without the case (a page run alone, AppTest, has no navigation)."""
    try:
        st.page_link("correctness.py", label="Show every case", icon="↩", query_params=params)
    except StreamlitAPIException:
        st.markdown(f"[Show every case](correctness?{urlencode(params)})")


def body() -> None:
    st.title("Correctness")
    split = picker("Split builds by tag (A/B runs of one build)", "split_tag", load(tag_keys))
    if st.query_params.get("metric"):  # a link's metric is checked, not silently replaced by (any)
        one_of("metric", st.query_params["metric"], CORRECTNESS_METRICS)
    metric = picker("metric", "metric", CORRECTNESS_METRICS)  # (any) = psnr_vs_cpu, as in the JSON twin
    asked = {k: st.query_params.get(k, "") for k in ("baseline", "candidate")}
    case = {k: st.query_params[k] for k in CASE_PARAMS if st.query_params.get(k)}  # a card's link: one case
    view = load(correctness_view, {"split_tag": split, "metric": metric, **asked, **case})
    wrong = view.faster_but_wrong
    if not view.stored:
        stop_if_empty(view.records, "correctness records")
    if not wrong.empty:
        st.error(
            f"faster but wrong: {len(wrong)} case(s) got faster than the previous build while failing "
            "their correctness tolerance"
        )
        table(wrong)
    if view.builds:
        view = _slopes(view, split, metric, case)
    compared = dict.fromkeys(b for b in (view.baseline, view.candidate) if b)  # the records are theirs only
    st.subheader(plain("The records of " + " and ".join(compared)) if compared else "Records")
    table(view.records)
    measured = view.records.dropna(subset=["median"])
    if not measured.empty:
        st.altair_chart(correctness_chart(measured, view.metric))


guarded(body)
