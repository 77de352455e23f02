"""Derived figures among compared cases: a figure computed from a timing of the same case (bundle.metrics.DERIVED:
achieved bandwidth and share of peak from op_time, decode tokens/s from decode_time, prefill tokens/s from
time_to_first_token) is one measurement with that timing, so it is one row: the timing's, which carries the
figure as text. A derived figure compared without its timing (a metric filter, a bundle carrying only the rate)
has no row to join and stands for the measurement itself (db.review.rules judges it by its timing's rule).
Works on any frame keyed by db.query.case_pairs.KEY: the compared cases and the unmatched ones."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.metrics import DERIVED, METRICS
from db.query.case_pairs import KEY

_CASE = [k for k in KEY if k != "metric"]


def derived_pairs(cases: pd.DataFrame) -> pd.DataFrame:
    """One row per derived figure whose timing is in `cases` too (same case): `row`, the figure's index label,
    and `timing_row`, its timing's."""
    is_derived = cases.metric.isin(list(DERIVED)).to_numpy(dtype=bool) if len(cases) else np.array([], dtype=bool)
    if not is_derived.any():
        return pd.DataFrame({"row": [], "timing_row": []})
    figures = cases.loc[is_derived, _CASE].assign(timing=cases.metric[is_derived].map(DERIVED),
                                                  row=cases.index[is_derived])
    timings = cases.loc[~is_derived, _CASE + ["metric"]].assign(timing_row=cases.index[~is_derived])
    joined = figures.merge(timings, left_on=_CASE + ["timing"], right_on=_CASE + ["metric"], how="inner")
    return joined[["row", "timing_row"]]


def folded_rows(cases: pd.DataFrame, pairs: pd.DataFrame | None = None) -> np.ndarray:
    """Per case: is it a derived figure carried by its timing's row (never a row, a count or a verdict itself)?"""
    pairs = derived_pairs(cases) if pairs is None else pairs
    return cases.index.isin(pairs.row.to_numpy())


def _figure(value: float) -> str:
    if not np.isfinite(value):
        return "unavailable"
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"  # prefill's 10240 tokens/s, not 1.024e+04


def derived_text(cases: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.Series:
    """Per case (same index): the derived figures its row carries, "decode_throughput 32 → 24.62 tokens/s"
    ("; "-joined), "" where none."""
    pairs = derived_pairs(cases) if pairs is None else pairs
    text = pd.Series("", index=cases.index, dtype=object)
    if pairs.empty:
        return text
    figures = cases.loc[pairs.row.to_numpy()]
    said: dict = {}  # a dict, not groupby().agg(join), which alone took ~0.5 s on a 50k-case review
    for timing, m, b, c in zip(pairs.timing_row, figures.metric, figures.baseline_median.astype(float),
                               figures.candidate_median.astype(float)):
        figure = f"{m} {_figure(b)} → {_figure(c)} {METRICS[m].unit}"
        said[timing] = f"{said[timing]}; {figure}" if timing in said else figure
    text.loc[list(said)] = list(said.values())
    return text
