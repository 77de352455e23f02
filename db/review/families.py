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

from db.stats import codes
from db.stats.significance import SIGNIFICANT, bootstrap_means, row_percentiles
from db.review.wording import ci_words, ratio_words

GROUP = ["scope", "device", "workload", "metric", "dtype", "compile"]
FAMILY_INPUT = GROUP + ["comparison", "oriented_ratio"]  # what family_frame reads of the cases, given the verdicts
COLUMNS = GROUP + ["n_cases", "geomean", "ci_low", "ci_high", "unit", "n_better", "n_worse", "n_unchanged",
                   "baseline", "candidate", "summary"]


def family_frame(cases: pd.DataFrame, query, significant: Callable[[], np.ndarray] | None = None,
                 case_cis: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None) -> pd.DataFrame:
    """The families of `cases`. `significant()` gives each case's verdict (is it significant?) and `case_cis()`
    each case's oriented CI, asked for only after the geomeans and their CIs are done (db.review.comparison computes
    them meanwhile); by default both are read from the cases' columns."""
    ratio = cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan) if len(cases) else np.array([])
    with np.errstate(invalid="ignore"):
        keep = (cases.comparison == "ratio").to_numpy(dtype=bool) & np.isfinite(ratio) & (ratio > 0)
    if not keep.any():
        return pd.DataFrame(columns=COLUMNS)
    order, starts = _family_order(cases.loc[keep, GROUP])
    logs, ratio = np.log(ratio[keep])[order], ratio[keep][order]
    fam = cases.loc[keep, GROUP].iloc[order[starts]].reset_index(drop=True)
    sizes = np.diff(np.append(starts, len(order)))
    fam["n_cases"] = sizes
    fam["geomean"] = np.exp(np.add.reduceat(logs, starts) / sizes)
    fam["ci_low"], fam["ci_high"] = _cis(logs, starts, sizes)
    sig = np.asarray(significant() if significant else cases.significance == SIGNIFICANT, dtype=bool)[keep][order]
    if case_cis or "ci_low" in cases:
        low, high = case_cis() if case_cis else (cases.ci_low.to_numpy(dtype=float), cases.ci_high.to_numpy(dtype=float))
        replicated = np.isfinite(np.asarray(low, dtype=float)) & np.isfinite(np.asarray(high, dtype=float))
        _widen_for_runs(fam, ratio, *(np.asarray(a)[keep][order] for a in (low, high, replicated)), sizes)
    fam["n_better"] = np.add.reduceat(sig & (ratio > 1), starts)
    fam["n_worse"] = np.add.reduceat(sig & (ratio < 1), starts)
    fam["n_unchanged"] = fam.n_cases - fam.n_better - fam.n_worse
    fam["unit"], fam["baseline"], fam["candidate"] = "×", query.baseline, query.candidate
    fam["summary"] = _summaries(fam, query.baseline)
    return fam[COLUMNS]


def _widen_for_runs(fam: pd.DataFrame, ratio: np.ndarray, low: np.ndarray, high: np.ndarray,
                    replicated: np.ndarray, sizes: np.ndarray) -> None:
    """Families of >= 2 cases tested on their replicates: CI widened to their median case's log half-widths
    (arrays in family order)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        below, above = np.log(ratio / low), np.log(high / ratio)
    use = replicated & np.isfinite(below) & np.isfinite(above)
    if not use.any():
        return
    family = np.repeat(np.arange(len(sizes)), sizes)
    medians = pd.DataFrame({"family": family[use], "below": below[use], "above": above[use]}).groupby("family").median()
    rows = medians.index.to_numpy()
    wide = sizes[rows] >= 2  # one case: no CI, as ever
    rows, below, above = rows[wide], medians.below.to_numpy()[wide], medians.above.to_numpy()[wide]
    centre = fam.geomean.to_numpy()[rows]
    fam.loc[rows, "ci_low"] = np.fmin(fam.ci_low.to_numpy()[rows], centre * np.exp(-below))
    fam.loc[rows, "ci_high"] = np.fmax(fam.ci_high.to_numpy()[rows], centre * np.exp(above))


def _family_order(keys: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The order that sorts cases by family (GROUP, lexicographic: pandas' groupby order) and where each family
    starts in it. One integer code per case from each column's sorted factorization, then one stable sort."""
    factorized = (pd.factorize(keys[name], sort=True) for name in GROUP)
    code = codes.combine(((found, len(uniques)) for found, uniques in factorized), len(keys))
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
    cols = [fam[c].tolist() for c in ("scope", "workload", "metric", "dtype", "compile", "geomean", "ci_low",
                                      "ci_high", "n_cases")]
    words = np.empty(len(fam), dtype=object)
    for name in pd.unique(fam.metric):  # the words are the metric's: looked up once per metric
        rows = np.flatnonzero((fam.metric == name).to_numpy())
        words[rows] = ratio_words(name, fam.geomean.to_numpy()[rows]).to_pylist()
    return [_summary(*row, said, baseline) for *row, said in zip(*cols, words)]


def _summary(scope, workload, metric, dtype, compile_, geomean, low, high, n_cases, said, baseline: str) -> str:
    ci = f" (95 % CI {ci_words(low, high, geomean)})" if np.isfinite(low) else " (one case: no CI)"
    plural = "s" if n_cases != 1 else ""
    return (f"{scope} · {workload} {metric} {dtype} {compile_}: geomean {said}{ci} over {n_cases} case{plural}, "
            f"baseline {baseline}")
