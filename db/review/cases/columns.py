"""The case table Compare answers, declared once: its columns (db.review.comparison builds it in this order; the
review, the views and the pages read them by these names), a release summary's group, and each case's
direction — the one place a tested case is called better or worse (Compare's chart and table, the summary's
faster / slower counts, the verdict cards).

A side's columns are named `<side>_<figure>` (baseline_median): the pivot's `b_` / `c_` prefixes
(db.query.compare.pivot.SIDES) are storage names, read only where the table is built from the pivot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bundle.metrics import METRICS
from db.query.compare.pivot import KEY, SIDES
from db.stats.significance import NOT_SIGNIFICANT, SIGNIFICANT

BASELINE, CANDIDATE = (side for side, _ in SIDES)


def side_column(side: str, figure: str) -> str:
    """The case table's column of one side's figure: side_column(BASELINE, "median") is baseline_median."""
    return f"{side}_{figure}"


SIDE_FIGURES = ("median", "iqr", "n", "pooled", "machines", "passed")  # each side's columns, in table order
BASELINE_MEDIAN, CANDIDATE_MEDIAN = side_column(BASELINE, "median"), side_column(CANDIDATE, "median")
# the change: candidate / baseline of medians (ratio metrics), oriented so > 1 is better, or their difference
COMPARISON, RATIO, ORIENTED_RATIO, DIFFERENCE, CHANGE_UNIT = (
    "comparison",
    "ratio",
    "oriented_ratio",
    "difference",
    "change_unit",
)
CHANGE_COLUMNS = (COMPARISON, RATIO, ORIENTED_RATIO, DIFFERENCE, CHANGE_UNIT)
BY_DIFFERENCE, BY_RATIO = "difference", "ratio"  # the comparison column's values (a case's metric decides)
CI_LOW, CI_HIGH, P_VALUE, SIGNIFICANCE = "ci_low", "ci_high", "p_value", "significance"
CASE_COLUMNS = KEY + [
    "unit",
    *(side_column(s, f) for s, _ in SIDES for f in SIDE_FIGURES),
    "rounding",
    "tolerance",
    *CHANGE_COLUMNS,
    CI_LOW,
    CI_HIGH,
    P_VALUE,
    SIGNIFICANCE,
    "change",
    "replicates",
    "contended",
    "contention",
    "caveats",
    "noise",
    "se",
    "se_unit",
    "df",
]

GROUP = ["scope", "device", "dtype", "compile"]  # a release summary's group: one verdict card

# a case's direction: the same words (and colours) on Compare's chart, its table, the cards' counts and the status
# changes. UNCLEAR: tested, but its CI reaches past the bound on a side (neither a change nor shown unchanged)
BETTER, WORSE, UNCLEAR, UNCHANGED = "better", "worse", "not decided", "unchanged"
DIRECTIONS = (BETTER, WORSE, UNCLEAR, UNCHANGED)  # the chart's colour domain, in this order on every view


def per_metric(metric: pd.Series, values: dict, dtype=float, missing=np.nan) -> np.ndarray:
    """values[metric] for each case, looked up once per distinct metric (a 50k-case map costs ~20 ms)."""
    codes, names = pd.factorize(metric)
    table = np.array([values.get(n, missing) for n in names] + [missing], dtype=dtype)
    return table[codes]  # code -1 (a missing metric) takes the last entry


def tested_directions(cases: pd.DataFrame, bound: np.ndarray | float) -> np.ndarray:
    """A tested case's direction against its regression bound (a fraction worse: db.review.rules.case_bounds):
    better / worse where the change is significant (oriented ratio or difference sign), or where its CI lies wholly
    beyond the bound on one side (> 1 + bound, < 1 / (1 + bound)); unchanged where it was tested, is not significant
    and its CI lies within the bound both ways; else UNCLEAR — never "unchanged" over a 1.82× change whose CI is
    1.53–2.16× only because the review's family-wise step did not pass it. Cases nothing tested are UNCLEAR."""
    oriented = cases[ORIENTED_RATIO].to_numpy(dtype=float, na_value=np.nan)
    is_ratio = (cases[COMPARISON] == BY_RATIO).to_numpy(dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(is_ratio, np.log(np.where(oriented > 0, oriented, np.nan)), cases[DIFFERENCE].astype(float))
    verdict = cases[SIGNIFICANCE].to_numpy()
    sig = verdict == SIGNIFICANT
    better, worse = better_worse(sig, _better_difference(cases, change))
    low, high = (cases[name].to_numpy(dtype=float, na_value=np.nan) for name in (CI_LOW, CI_HIGH))
    top = 1.0 + np.asarray(bound, dtype=float)
    tested = is_ratio & ((verdict == SIGNIFICANT) | (verdict == NOT_SIGNIFICANT))
    with np.errstate(invalid="ignore"):
        better |= tested & (low > top)
        worse |= tested & (high < 1.0 / top)
        within = tested & ~sig & (low >= 1.0 / top) & (high <= top)
    return np.where(better, BETTER, np.where(worse, WORSE, np.where(within, UNCHANGED, UNCLEAR)))


def better_worse(significant: np.ndarray, signed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The one rule for a direction: a significant change signed so that > 0 is better (an oriented ratio's log)
    is better above 0, worse below; the family counts (db.review.families) read it too."""
    return significant & (signed > 0), significant & (signed < 0)


def _better_difference(cases: pd.DataFrame, change: np.ndarray) -> np.ndarray:
    """The change signed so that > 0 is better (a difference metric where lower is better flips)."""
    better = per_metric(cases.metric, {n: m.better.value for n, m in METRICS.items()}, object, "")
    flip = (cases[COMPARISON] != BY_RATIO).to_numpy(dtype=bool) & (better == "lower")
    signed = np.where(flip, -change, change)
    return np.where(better == "neutral", 0.0, np.nan_to_num(signed, nan=0.0))
