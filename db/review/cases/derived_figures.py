"""Derived figures among compared cases: a figure computed from a timing of the same case (bundle.metrics.DERIVED:
achieved bandwidth and share of peak from op_time, decode tokens/s from decode_time, prefill tokens/s from
time_to_first_token) is one measurement with that timing, so it is one row: the timing's, which carries the
figure as text. A derived figure compared without its timing (a metric filter, a bundle carrying only the rate)
has no row to join and stands for the measurement itself (db.review.rules judges it by its timing's rule).
Works on any frame keyed by db.query.compare.pivot.KEY: the compared cases and the unmatched ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bundle.metrics import DERIVED, METRICS
from db.query import key_codes
from db.query.compare.pivot import KEY

_CASE = [k for k in KEY if k != "metric"]


def derived_pairs(cases: pd.DataFrame, key_ordered: bool = False) -> pd.DataFrame:
    """One row per derived figure whose timing is in `cases` too (same case): `row`, the figure's index label,
    and `timing_row`, its timing's. Matched on integer codes (one per case, one per metric), not by a merge of
    six string columns: a 50k-case review is ~5 ms instead of ~15. `key_ordered`: the rows are in key order
    (the Compare's cases, or a subset of them in their order), so a case's rows are adjacent and its code is
    found by comparing each row with the one before it (~3 ms less than coding each column)."""
    is_derived = cases.metric.isin(list(DERIVED)).to_numpy(dtype=bool) if len(cases) else np.array([], dtype=bool)
    if not is_derived.any():
        return pd.DataFrame({"row": [], "timing_row": []})
    metric, names = pd.factorize(cases.metric)
    timing_of = np.array([_index(names, DERIVED.get(n)) for n in names] + [-1])[metric]  # code of its timing
    if key_ordered:
        case = np.cumsum(new_case(cases)) - 1
    else:
        case = pd.factorize(key_codes.combine((_coded(cases[name]) for name in _CASE), len(cases)))[0]  # dense: < rows
    key = case * (len(names) + 1) + metric  # one per (case, metric)
    wanted = case * (len(names) + 1) + timing_of
    timing = np.flatnonzero(~is_derived)
    order = timing[np.argsort(key[timing], kind="stable")]
    figures = np.flatnonzero(is_derived & (timing_of >= 0))
    if not len(order) or not len(figures):
        return pd.DataFrame({"row": [], "timing_row": []})
    at = np.minimum(np.searchsorted(key[order], wanted[figures]), len(order) - 1)
    hit = key[order][at] == wanted[figures]
    return pd.DataFrame({"row": cases.index[figures[hit]], "timing_row": cases.index[order[at][hit]]})


def _index(names: pd.Index, name: str | None) -> int:
    return int(names.get_loc(name)) if name is not None and name in names else -1


def new_case(cases: pd.DataFrame) -> np.ndarray:
    """Per row: does its case differ from the row before's (the first row: yes)?"""
    new = np.zeros(len(cases), dtype=bool)
    new[:1] = True
    for name in _CASE:
        column = pa.array(cases[name])
        new[1:] |= pc.fill_null(pc.not_equal(column[1:], column[:-1]), True).to_numpy(zero_copy_only=False)
    return new


def _coded(column: pd.Series) -> tuple[np.ndarray, int]:
    found, uniques = pd.factorize(column, use_na_sentinel=False)
    return found, len(uniques)


def folded_rows(cases: pd.DataFrame, pairs: pd.DataFrame | None = None, key_ordered: bool = False) -> np.ndarray:
    """Per case: is it a derived figure carried by its timing's row (never a row, a count or a verdict itself)?"""
    pairs = derived_pairs(cases, key_ordered) if pairs is None else pairs
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
    for timing, m, b, c in zip(
        pairs.timing_row, figures.metric, figures.baseline_median.astype(float), figures.candidate_median.astype(float)
    ):
        figure = f"{m} {_figure(b)} → {_figure(c)} {METRICS[m].unit}"
        said[timing] = f"{said[timing]}; {figure}" if timing in said else figure
    text.loc[list(said)] = list(said.values())
    return text
