"""Per workload family: the geometric mean of the oriented per-case ratios with a bootstrap 95 % CI over cases.

A family is (scope, device, workload, metric, dtype, compile): one baseline, one unit, one configuration;
a geomean never spans machines, dtypes, compile modes or different baselines. Difference metrics (dB, counts,
signed bytes) have no geomean.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from db.significance import SIGNIFICANT, bootstrap_means, row_percentiles
from db.wording import ratio_words

GROUP = ["scope", "device", "workload", "metric", "dtype", "compile"]
COLUMNS = GROUP + ["n_cases", "geomean", "ci_low", "ci_high", "unit", "n_better", "n_worse", "n_unchanged",
                   "baseline", "candidate", "summary"]


def family_frame(cases: pd.DataFrame, query) -> pd.DataFrame:
    usable = cases[(cases.comparison == "ratio") & np.isfinite(cases.oriented_ratio.astype(float))
                   & (cases.oriented_ratio.astype(float) > 0)].copy()
    if usable.empty:
        return pd.DataFrame(columns=COLUMNS)
    usable["log"] = np.log(usable.oriented_ratio.astype(float))
    sig = usable.significance == SIGNIFICANT
    usable["better"], usable["worse"] = sig & (usable.oriented_ratio > 1), sig & (usable.oriented_ratio < 1)
    fam = usable.groupby(GROUP, sort=True).agg(n_cases=("log", "size"), mean_log=("log", "mean"),
                                               n_better=("better", "sum"), n_worse=("worse", "sum")).reset_index()
    fam["geomean"] = np.exp(fam.mean_log)
    fam["ci_low"], fam["ci_high"] = _cis(usable, fam)
    fam["n_unchanged"] = fam.n_cases - fam.n_better - fam.n_worse
    fam["unit"], fam["baseline"], fam["candidate"] = "×", query.baseline, query.candidate
    fam["summary"] = [_summary(r, query.baseline) for r in fam.itertuples()]
    return fam[COLUMNS]


def _cis(usable: pd.DataFrame, fam: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap CIs of each family's geomean, families of one size at a time (one draw matrix per size)."""
    low, high = np.full(len(fam), np.nan), np.full(len(fam), np.nan)
    ordered = usable.sort_values(GROUP, kind="stable")  # the same order as fam's rows (groupby sort=True)
    logs, starts = ordered["log"].to_numpy(), np.concatenate([[0], np.cumsum(fam.n_cases.to_numpy())[:-1]])
    sizes = fam.n_cases.to_numpy()
    for k in np.unique(sizes[sizes >= 2]):
        rows = np.flatnonzero(sizes == k)
        matrix = logs[starts[rows][:, None] + np.arange(k)]
        low[rows], high[rows] = np.exp(row_percentiles(bootstrap_means(matrix), (2.5, 97.5)))
    return low, high


def _ci_words(low: float, high: float, centre: float) -> str:
    """The CI in the headline's direction: "1.05–1.31×" beside "1.20× faster", "1.02–1.44×" beside
    "1.10× slower"."""
    if centre >= 1 or not (low > 0 and high > 0):
        return f"{low:.2f}–{high:.2f}×"
    return f"{1 / high:.2f}–{1 / low:.2f}×"


def _summary(r, baseline: str) -> str:
    ci = f" (95 % CI {_ci_words(r.ci_low, r.ci_high, r.geomean)})" if np.isfinite(r.ci_low) else " (one case: no CI)"
    plural = "s" if r.n_cases != 1 else ""
    family = f"{r.scope} · {r.workload} {r.metric} {r.dtype} {r.compile}"
    return (f"{family}: geomean {ratio_words(r.metric, r.geomean)}{ci} over {r.n_cases} case{plural}, "
            f"baseline {baseline}")
