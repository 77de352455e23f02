"""What Compare draws and lists: one row per case, its derived figures (achieved bandwidth, share of peak, tokens/s:
db.review.derived) folded into their timing's row, each row's direction (better / worse / not significant)
and whether it is a regression (the judged review's verdict, as the Regressions page reads it). The chart rows are the largest changes plus
every regression, whatever its rank: the chart and the table read the same frame, so they cannot disagree."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.case_names import case_names
from bundle.metrics import RuleKind

# DIRECTIONS and UNCLEAR read from here by the pages' colours and the tests
from db.review.case_table import (  # noqa: F401
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
    tested_directions,
)
from db.review.derived import derived_pairs, derived_text, folded_rows
from db.review.review import JudgedReview

CHART_DEFAULT = 20  # bars drawn by default: 60 grew the chart to ~4,000 px; the table lists every case
BY_RULE = (RuleKind.growth.value, RuleKind.drop.value, RuleKind.factor.value)  # single figures' rules


def fold_derived(cases: pd.DataFrame) -> pd.DataFrame:
    """`cases` without the derived-figure rows whose timing was compared too; the timing row carries them as
    text in `derived` ("achieved_bandwidth 80 → 100 GB/s; …"). A derived row without its timing row stays."""
    pairs = derived_pairs(cases)
    return cases.assign(derived=derived_text(cases, pairs))[~folded_rows(cases, pairs)]


def directions(
    cases: pd.DataFrame, verdicts: pd.DataFrame | None = None, tested: np.ndarray | None = None
) -> np.ndarray:
    """better / worse where the change is significant (oriented ratio or difference sign), else not significant;
    a single figure judged by its own rule (memory, PSNR, errors: `verdicts`' rule) is better / worse beyond that
    rule and unchanged within it — it has no samples to be significant with. `tested`: the cases' tested
    directions where already known (JudgedReview.directions)."""
    tested = tested_directions(cases) if tested is None else tested
    if verdicts is None:
        return tested
    by_rule = verdicts.rule.isin(BY_RULE).to_numpy(dtype=bool)
    ruled = np.where(
        verdicts.regressed.to_numpy(dtype=bool),
        WORSE,
        np.where(verdicts.improved.to_numpy(dtype=bool), BETTER, UNCHANGED),
    )
    return np.where(by_rule, ruled, tested)


def case_rows(judged: JudgedReview) -> pd.DataFrame:
    """Compare's rows: derived figures folded, with `direction`, `regression` (the review's verdict) and `row` (the
    compared case's index, for its samples). Made once per judged review (every render and the API share it):
    treat as read-only."""
    return judged.once("case_rows", lambda: _case_rows(judged))


def _case_rows(judged: JudgedReview) -> pd.DataFrame:
    folded = fold_derived(judged.cases)
    verdicts = judged.verdicts.loc[folded.index]
    tested = judged.directions[judged.cases.index.get_indexer(folded.index)] if len(folded) else None
    return folded.assign(
        direction=directions(folded, verdicts, tested) if len(folded) else [],
        regression=verdicts.regressed.to_numpy(dtype=bool),
        row=folded.index,
    )


def case_labels(rows: pd.DataFrame) -> pd.Series:
    """Each row's label where a case is named on its own (the chart's bars, the case menu): scope · case · metric."""
    return rows.scope + " · " + case_names(rows) + " · " + rows.metric


def chart_rows(rows: pd.DataFrame, limit: int = CHART_DEFAULT) -> pd.DataFrame:
    """The ratio rows to draw: the `limit` largest |log ratio|, then every regression not among them. Each gets
    its label (scope · case name · metric, unique), log2 of the ratio and of its CI ends."""
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
    return chosen.sort_values(ORIENTED_RATIO, kind="stable")


def chart_words(chart: pd.DataFrame, limit: int, compared: int) -> str:
    """The words above the ratio chart (`chart`: chart_rows(rows, limit); `compared`: every compared case): what is
    drawn, in the order it is drawn (worst at the top, chart_rows' order), and how many more the table lists."""
    extra = int((chart["rank"] > limit).sum())
    drawn = len(chart) - extra
    more = compared - len(chart)
    return (
        f"Per-case ratio: the {drawn} largest change{'s' * (drawn != 1)} of {compared} compared cases"
        + (f", and {extra} regression{'s' * (extra != 1)} ranked lower" if extra else "")
        + ", sorted worst (top) to best (bottom); bars from 1×, black whiskers the 95 % CI, ringed = regression."
        + (f" {more} more in the table below." if more > 0 else " The table below lists them too.")
    )
