"""Per workload family: the geometric mean of the oriented per-case ratios with a bootstrap 95 % CI over cases.

A family is (scope, device, workload, metric, dtype, compile): one baseline, one unit, one configuration;
a geomean never spans machines, dtypes, compile modes or different baselines. Difference metrics (dB, counts,
signed bytes) have no geomean.

Runs move every case of a family together (a slow run is slow for every op), so run-to-run spread does not
average out over the cases: a bootstrap over cases sees none of it when every case moved by one run factor (on
test data whose candidate runs all ran 6 % high, it said 1.06× slower, CI 1.06–1.06×). Where cases were tested
on their replicates, the family's CI is made at least as wide as its median case's own CI (which holds the
process- and run-level spread), i.e. it treats run effects as shared by all cases: the conservative side.
Hence `case_cis`, each case's oriented CI (asked for with the verdicts, once the significance is done).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from db.query import key_codes
from db.query.key_codes import ranks
from db.review.cases.columns import BETTER, COMPARISON, ORIENTED_RATIO, UNCHANGED, WORSE, better_worse
from db.review.cases.wording import ci_words, ratio_words
from db.stats.lists import QUARTILES, list_quantiles, offsets_of
from db.stats.significance import SIGNIFICANT, bootstrap_means, geomeans, row_percentiles

FAMILY_KEY = ["scope", "device", "workload", "metric", "dtype", "compile"]  # a family, in the order its table sorts
FAMILY_INPUT = FAMILY_KEY + [COMPARISON, ORIENTED_RATIO]  # what family_frame reads of the cases, given the verdicts
COLUMNS = FAMILY_KEY + [
    "n_cases",
    "geomean",
    "ci_low",
    "ci_high",
    "unit",
    "n_better",
    "n_worse",
    "n_unchanged",
    "baseline",
    "candidate",
    "summary",
]


def family_frame(
    cases: pd.DataFrame,
    query,
    significant: Callable[[], np.ndarray] | None = None,
    case_cis: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """The families of `cases`. `significant()` gives each case's verdict (is it significant?) and `case_cis()`
    each case's oriented CI, asked for only after the geomeans and their CIs are done (db.review.comparison computes
    them meanwhile); by default both are read from the cases' columns."""
    ratio = cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan) if len(cases) else np.array([])
    with np.errstate(invalid="ignore"):
        keep = (cases.comparison == "ratio").to_numpy(dtype=bool) & np.isfinite(ratio) & (ratio > 0)
    if not keep.any():
        return pd.DataFrame(columns=COLUMNS)
    rows = np.flatnonzero(keep)
    order, starts = _family_order(
        [pa.chunked_array([pa.array(cases[name]).take(pa.array(rows))]) for name in FAMILY_KEY]
    )
    in_order = rows[order]  # the kept cases, family by family
    logs, ratio = np.log(ratio[in_order]), ratio[in_order]
    sizes = np.diff(np.append(starts, len(order)))
    fam = {name: cases[name].iloc[in_order[starts]].reset_index(drop=True) for name in FAMILY_KEY}
    fam["n_cases"] = sizes
    fam["geomean"] = geomean = geomeans(logs, starts, sizes)
    low, high = _cis(logs, starts, sizes)
    sig = np.asarray(significant() if significant else cases.significance == SIGNIFICANT, dtype=bool)[in_order]
    if case_cis or "ci_low" in cases:
        case_low, case_high = (
            np.asarray(a, dtype=float)
            for a in (
                case_cis() if case_cis else (cases.ci_low.to_numpy(dtype=float), cases.ci_high.to_numpy(dtype=float))
            )
        )
        low, high = _widen_for_runs(geomean, low, high, ratio, case_low[in_order], case_high[in_order], sizes)
    fam["ci_low"], fam["ci_high"] = low, high
    better, worse = better_worse(sig, logs)
    fam["n_better"], fam["n_worse"] = np.add.reduceat(better, starts), np.add.reduceat(worse, starts)
    fam["n_unchanged"] = sizes - fam["n_better"] - fam["n_worse"]
    fam["unit"], fam["baseline"], fam["candidate"] = "×", query.baseline, query.candidate
    frame = pd.DataFrame(fam)  # one frame built from its columns: column inserts cost more
    frame["summary"] = _summaries(frame, query.baseline)
    return frame[COLUMNS]


def _widen_for_runs(
    geomean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    ratio: np.ndarray,
    case_low: np.ndarray,
    case_high: np.ndarray,
    sizes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Families tested on their replicates: CI widened to their median case's log half-widths (case arrays in
    family order; a case with a finite CI was tested on its replicates) — a family of one case has its case's CI,
    never "no CI" beside a case that has one."""
    with np.errstate(divide="ignore", invalid="ignore"):
        below, above = np.log(ratio / case_low), np.log(case_high / ratio)
    use = np.isfinite(case_low) & np.isfinite(case_high) & np.isfinite(below) & np.isfinite(above)
    if not use.any():
        return low, high
    family = np.repeat(np.arange(len(sizes)), sizes)[use]
    rows = np.flatnonzero(np.bincount(family, minlength=len(sizes)))
    below, above = (_family_medians(family, values[use], len(sizes)) for values in (below, above))
    low, high = low.copy(), high.copy()  # a one-case family (no bootstrap CI) takes its case's own CI whole
    low[rows] = np.fmin(low[rows], geomean[rows] * np.exp(-below))
    high[rows] = np.fmax(high[rows], geomean[rows] * np.exp(above))
    return low, high


def _family_medians(family: np.ndarray, values: np.ndarray, families: int) -> np.ndarray:
    """The median of `values` per family that has any (`family`: non-decreasing ids < families), by the one quantile
    rule (db.stats.lists.list_quantiles: linear interpolation)."""
    counts = np.bincount(family, minlength=families)
    present = np.flatnonzero(counts)
    (median,) = list_quantiles(values, offsets_of(counts[present]), (QUARTILES["median"],))
    return median


def _family_order(keys: list[pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts cases by family (FAMILY_KEY columns, lexicographic: pandas' groupby order) and where each
    family starts in it. One integer code per case from each column's rank, then one stable sort."""
    code = key_codes.combine((ranks(column) for column in keys), len(keys[0]))
    order = np.argsort(code, kind="stable")
    ordered = code[order]
    return order, np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])


def _cis(logs: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap CIs of each family's geomean, families of one size at a time (one draw matrix per size)."""
    low, high = np.full(len(sizes), np.nan), np.full(len(sizes), np.nan)
    for k in np.unique(sizes[sizes >= 2]):
        rows = np.flatnonzero(sizes == k)
        matrix = logs[starts[rows][:, None] + np.arange(k)]
        low[rows], high[rows] = np.exp(row_percentiles(bootstrap_means(matrix), (2.5, 97.5)))
    return low, high


def _summaries(fam: pd.DataFrame, baseline: str) -> list[str]:
    """Each family's one-line summary; plain lists (pandas' row iteration costs more than the formatting)."""
    cols = [
        fam[c].tolist()
        for c in ("scope", "workload", "metric", "dtype", "compile", "geomean", "ci_low", "ci_high", "n_cases")
    ]
    words = np.empty(len(fam), dtype=object)
    for name in pd.unique(fam.metric):  # the words are the metric's: looked up once per metric
        rows = np.flatnonzero((fam.metric == name).to_numpy())
        words[rows] = ratio_words(name, fam.geomean.to_numpy()[rows]).to_pylist()
    return [_summary(*row, said, baseline) for *row, said in zip(*cols, words)]


def _summary(scope, workload, metric, dtype, compile_, geomean, low, high, n_cases, said, baseline: str) -> str:
    ci = f" (95 % CI {ci_words(low, high, geomean)})" if np.isfinite(low) else " (no CI)"
    plural = "s" if n_cases != 1 else ""
    return (
        f"{scope} · {workload} {metric} {dtype} {compile_}: geomean {said}{ci} over {n_cases} case{plural}, "
        f"baseline {baseline}"
    )


def judged_counts(families: pd.DataFrame, cases: pd.DataFrame, direction: np.ndarray) -> pd.DataFrame:
    """`families` (family_frame's) with n_better, n_worse and n_unchanged counted from the judged review's
    directions (db.review.rules.directions: against each case's bound), so a family's counts and the summary's
    are one count."""
    if families.empty:
        return families
    ratio = cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        keep = (cases.comparison == "ratio").to_numpy(dtype=bool) & np.isfinite(ratio) & (ratio > 0)
    mine = cases.loc[keep, FAMILY_KEY].assign(
        n_better=direction[keep] == BETTER, n_worse=direction[keep] == WORSE, n_unchanged=direction[keep] == UNCHANGED
    )
    counts = mine.groupby(FAMILY_KEY, sort=False, observed=True).sum().reset_index()
    out = families.drop(columns=["n_better", "n_worse", "n_unchanged"]).merge(counts, on=FAMILY_KEY, how="left")
    for name in ("n_better", "n_worse", "n_unchanged"):
        out[name] = out[name].fillna(0).astype(int)
    return out[COLUMNS]
