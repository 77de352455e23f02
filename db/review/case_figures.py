"""The case table's rows from the paired cases (db.review.comparison): each case's change (the ratio of its medians
or their difference, as its metric compares), its sides' figures, its words and caveats, and, once tested, its
test's columns (oriented CI, p-value, verdict, what the test rests on)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from db.query.compare.pivot import KEY
from db.query.compare.pivot import SIDES as _SIDES
from db.review.cases.columns import (
    BY_DIFFERENCE,
    BY_RATIO,
    CASE_COLUMNS,
    CHANGE_UNIT,
    COMPARISON,
    DIFFERENCE,
    ORIENTED_RATIO,
    RATIO,
    side_column,
)
from db.review.cases.text_columns import caveats, change_words, contention_words, with_contention, with_warnings
from db.review.cases.wording import pick, str_column
from db.review.side_inputs import MetricFacts
from db.stats.ratios import orient, oriented_interval
from db.stats.significance import REPLICATE_WORDS, SIGNIFICANCE_WORDS, Significance


def case_frame(frame: pd.DataFrame, facts: MetricFacts, chip_scope: bool, change: "CaseChange") -> pd.DataFrame:
    """The case table without its significance columns (NaN until add_significance fills them); `change`: the
    frame's case_change; chip_scope: the Compare pools machines of a chip."""
    if frame.empty:
        return _empty_cases()
    out = {k: frame[k] for k in KEY}
    out["unit"] = str_column(facts.units)
    for side, p in _SIDES:  # SIDE_FIGURES, in order
        out[side_column(side, "median")] = frame[p + "median"]
        out[side_column(side, "iqr")] = frame[p + "p75"] - frame[p + "p25"]
        for name in ("n", "pooled", "machines"):
            out[side_column(side, name)] = frame[p + name].astype(int)
        out[side_column(side, "passed")] = frame[p + "passed"]
    # a correctness figure's scale (db.review.rules: a move within a few roundings is the dtype's jitter): the
    # candidate's rounding level (the baseline's where the candidate states none), the larger stated tolerance
    b_level, c_level = (frame[p + "rounding"].to_numpy(dtype=float, na_value=np.nan) for _, p in _SIDES)
    out["rounding"] = np.where(np.isnan(c_level), b_level, c_level)
    out["tolerance"] = np.fmax(*(frame[p + "tolerance"].to_numpy(dtype=float, na_value=np.nan) for _, p in _SIDES))
    out.update(change.columns)
    for name in ("ci_low", "ci_high", "p_value", "significance"):  # in place, in column order, until known
        out[name] = np.full(len(frame), np.nan)
    out["change"] = change_words((facts.codes, facts.names), change.oriented, change.difference, facts.use_ratio)
    out["replicates"] = ""  # what its test rests on: add_significance
    # a side with too few clean processes (db.stats.contention): a memory peak read there is unconfirmed too
    out["contended"] = (frame.b_contended | frame.c_contended).to_numpy(dtype=bool)
    out["contention"] = contention_words(frame)
    out["caveats"] = with_contention(with_warnings(caveats(frame, chip_scope), frame), out["contention"])
    return pd.DataFrame(out)  # one frame built from its columns: ~30 column inserts cost more


@dataclass(frozen=True)
class CaseChange:
    columns: dict[str, object]  # the case table's comparison, ratio, oriented_ratio, difference, change_unit
    oriented: np.ndarray  # every case's oriented ratio and difference, whatever its comparison (for the words)
    difference: np.ndarray


def case_change(frame: pd.DataFrame, facts: MetricFacts) -> CaseChange:
    """Each case's change: ratio of medians or their difference, as its metric compares."""
    use_ratio, lower = facts.use_ratio, facts.lower
    b_median, c_median = frame.b_median.to_numpy(dtype=float), frame.c_median.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = c_median / b_median
        oriented = orient(ratio, lower)
    diff = c_median - b_median
    return CaseChange(
        {
            COMPARISON: pick([BY_DIFFERENCE, BY_RATIO], use_ratio.astype(np.int64)),
            RATIO: np.where(use_ratio, ratio, np.nan),  # candidate / baseline of medians
            ORIENTED_RATIO: np.where(use_ratio, oriented, np.nan),  # > 1: candidate better
            DIFFERENCE: np.where(use_ratio, np.nan, diff),  # candidate - baseline, in `unit`
            CHANGE_UNIT: str_column(pc.if_else(pa.array(use_ratio), "×", facts.units)),
        },
        oriented,
        diff,
    )


def oriented_cis(sig: Significance, facts: MetricFacts) -> tuple[np.ndarray, np.ndarray]:
    """Each case's CI oriented like its ratio (> 1 is better); differences as they are."""
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = oriented_interval(sig.ci_low, sig.ci_high, facts.lower)
    return np.where(facts.use_ratio, low, sig.ci_low), np.where(facts.use_ratio, high, sig.ci_high)


def add_significance(cases: pd.DataFrame, sig: Significance, facts: MetricFacts) -> None:
    """The oriented CI, the p-value and the verdict, into the case table."""
    if cases.empty:
        return
    cases["ci_low"], cases["ci_high"] = oriented_cis(sig, facts)
    cases["p_value"], cases["significance"] = sig.p_value, pick(list(SIGNIFICANCE_WORDS), sig.codes)
    cases["se"], cases["df"] = sig.se, sig.df
    # the standard error is of ln(candidate / baseline) for ratios, of the difference (its unit) otherwise
    cases["se_unit"] = str_column(pc.if_else(pa.array(facts.use_ratio), "ln(ratio)", facts.units))
    cases["replicates"] = pick(list(REPLICATE_WORDS), sig.replicates)


def _empty_cases() -> pd.DataFrame:
    return pd.DataFrame(columns=CASE_COLUMNS)
