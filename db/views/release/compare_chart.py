"""What Compare draws and lists: one row per case, its derived figures (achieved bandwidth, share of peak, tokens/s:
db.review.cases.derived_figures) folded into their timing's row, each row's direction (better / worse / not significant)
and whether it is a regression (the judged review's verdict, as the Regressions page reads it). The chart rows are the largest changes plus
every regression, whatever its rank: the chart and the table read the same frame, so they cannot disagree."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.case_names import case_names

# DIRECTIONS and UNCLEAR read from here by the pages' colours and the tests
from db.review.cases.columns import (  # noqa: F401
    BETTER,
    BY_RATIO,
    CI_HIGH,
    CI_LOW,
    COMPARISON,
    DIRECTIONS,
    ORIENTED_RATIO,
    UNCHANGED,
    UNCLEAR,
    WORSE,
)
from db.review.cases.derived_figures import derived_pairs, derived_text, folded_rows
from db.review.review import JudgedReview

CHART_DEFAULT = 20  # bars drawn by default: 60 grew the chart to ~4,000 px; the table lists every case
# The ratio axis spans at most 1/CLIP×–CLIP×, symmetric around 1× (a win and a loss of one size look alike). Sized
# to the largest change drawn, one 8× win or a 33× smaller memory peak stretched it to 0.03–30×, and a 1.17×
# regression was ~10 px long at 1280 px (a plot ~480 px wide). At 3× it is ~35 px there (~45 px at 1440 px), and
# the usual moves of an upgrade (0.5–2×) keep their true length; a bar past 3× ends at the edge, marked "beyond"
# with its true value written on it (and in its tooltip): past 3× a bar's length says nothing its value does not.
CLIP = 3.0
MARGIN = 1.15  # room past the largest change drawn (its whisker's cap) when nothing reaches CLIP


def fold_derived(cases: pd.DataFrame) -> pd.DataFrame:
    """`cases` without the derived-figure rows whose timing was compared too; the timing row carries them as
    text in `derived` ("achieved_bandwidth 80 → 100 GB/s; …"). A derived row without its timing row stays."""
    pairs = derived_pairs(cases)
    return cases.assign(derived=derived_text(cases, pairs))[~folded_rows(cases, pairs)]


def case_rows(judged: JudgedReview) -> pd.DataFrame:
    """Compare's rows: derived figures folded, with `direction`, `regression` (the review's verdict) and `row` (the
    compared case's index, for its samples). Made once per judged review (every render and the API share it):
    treat as read-only."""
    return judged.once("case_rows", lambda: _case_rows(judged))


def _case_rows(judged: JudgedReview) -> pd.DataFrame:
    folded = fold_derived(judged.cases)
    verdicts = judged.verdicts.loc[folded.index]
    return folded.assign(
        direction=verdicts.direction.to_numpy(),
        regression=verdicts.regressed.to_numpy(dtype=bool),
        row=folded.index,
    )


def case_labels(rows: pd.DataFrame) -> pd.Series:
    """Each row's label where a case is named on its own (the chart's bars, the case menu): scope · case · metric."""
    return rows.scope + " · " + case_names(rows) + " · " + rows.metric


def chart_rows(rows: pd.DataFrame, limit: int = CHART_DEFAULT) -> pd.DataFrame:
    """The ratio rows to draw: the `limit` largest |log ratio|, then every regression not among them. Each gets
    its label (scope · case name · metric, unique), log2 of the ratio and of its CI ends, and what is drawn: the
    ratio and CI ends held within the axis (ratio_reach: `drawn`, `drawn_ci_low`, `drawn_ci_high`), `beyond` where
    the ratio lies past it and `beyond_text`, its true value in words."""
    ratio = rows[ORIENTED_RATIO].astype(float)
    keep = (rows[COMPARISON] == BY_RATIO) & np.isfinite(ratio) & (ratio > 0)
    ratios = rows[keep]
    size = np.abs(np.log(ratios[ORIENTED_RATIO].astype(float)))
    top = size.sort_values(ascending=False, kind="stable").index[:limit]
    chosen = ratios.loc[top.union(ratios.index[ratios.regression.to_numpy(dtype=bool)], sort=False)].copy()
    label = case_labels(chosen)
    dup = label.groupby(label).cumcount()
    chosen["label"] = np.where(dup > 0, label + " (" + (dup + 1).astype(str) + ")", label)
    chosen["rank"] = size.rank(ascending=False, method="first")[chosen.index].astype(int)
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in (ORIENTED_RATIO, CI_LOW, CI_HIGH):
            value = chosen[name].astype(float)
            chosen[f"log2_{name}"] = np.log2(value.where(value > 0))
    reach = ratio_reach(chosen)
    for name, drawn in ((ORIENTED_RATIO, "drawn"), (CI_LOW, "drawn_ci_low"), (CI_HIGH, "drawn_ci_high")):
        chosen[drawn] = chosen[name].astype(float).clip(1 / reach, reach)
    ratio = chosen[ORIENTED_RATIO].astype(float)
    chosen["beyond"] = (ratio > reach) | (ratio < 1 / reach)
    chosen["beyond_text"] = np.where(chosen.beyond, [f"beyond: {r:.3g}×" for r in ratio], "")
    return chosen.sort_values(ORIENTED_RATIO, kind="stable")


def ratio_reach(rows: pd.DataFrame) -> float:
    """The ratio chart's axis, 1/reach×–reach×: the largest change drawn, its CI included, with MARGIN, at most
    CLIP (what lies beyond is drawn to the edge and marked: chart_rows' `drawn`, `beyond`)."""
    ends = rows[[ORIENTED_RATIO, CI_LOW, CI_HIGH]].astype(float).to_numpy()
    ends = ends[np.isfinite(ends) & (ends > 0)]
    if not ends.size:
        return 2.0
    return float(min(np.exp(np.abs(np.log(ends)).max()) * MARGIN, CLIP))


def chart_words(chart: pd.DataFrame, limit: int, compared: int) -> str:
    """The words above the ratio chart (`chart`: chart_rows(rows, limit); `compared`: every compared case): what is
    drawn, in the order it is drawn (worst at the top, chart_rows' order), and how many more the table lists."""
    extra = int((chart["rank"] > limit).sum())
    drawn = len(chart) - extra
    more = compared - len(chart)
    return (
        f"Per-case ratio: the {drawn} largest change{'s' * (drawn != 1)} of {compared} compared cases"
        + (f", and {extra} regression{'s' * (extra != 1)} ranked lower" if extra else "")
        + ", sorted worst (top) to best (bottom); bars from 1×, black whiskers the 95 % CI, ringed = regression"
        + (f"; a bar past {CLIP:g}× ends at the edge, its value written on it." if chart.beyond.any() else ".")
        + (f" {more} more in the table below." if more > 0 else " The table below lists them too.")
    )
