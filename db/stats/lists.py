"""Quantiles of many variable-length lists at once (Arrow layout: list i is values[offsets[i]:offsets[i+1]]).

Lists of one length are taken together as one sorted 2-D array, one length at a time: a case's pooled samples
(db.stats.significance) and each worker process's samples (db.stats.replicates) both go through here.
"""
from __future__ import annotations

import numpy as np


def list_quantiles(values: np.ndarray, offsets: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """For each q, the q-quantile of every list (linear interpolation, as numpy's and DuckDB's quantile_cont);
    NaN for an empty list."""
    counts = np.diff(offsets)
    out = [np.full(len(counts), np.nan) for _ in qs]
    for n in np.unique(counts[counts > 0]):
        rows = np.flatnonzero(counts == n)
        found = sorted_quantiles(np.sort(values[offsets[rows][:, None] + np.arange(n)], axis=1), qs)
        for column, figure in zip(out, found):
            column[rows] = figure
    return out


def sorted_quantiles(x: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """np.quantile(x, q, axis=1) for rows already sorted: numpy's linear interpolation (its _lerp, so the same
    floats), without numpy's partition of every row again.

    The same rule (linear interpolation) is computed in two other places, on purpose: bundle.stats for one
    result's list (pure Python: the format package needs no numpy) and DuckDB's quantile_cont where the samples
    are (ingest's derived summaries, Trends' pooled points: no copy of the samples out of SQL). Tests check each
    against numpy's."""
    d, out, bad = x.shape[1], [], np.isnan(x[:, -1])  # NaN sorts last; numpy's answer is then NaN
    for q in qs:
        pos = q * (d - 1)
        lo, t = int(np.floor(pos)), pos - np.floor(pos)
        a, b = x[:, lo], x[:, min(lo + 1, d - 1)]
        diff = b - a
        out.append(np.where(bad, np.nan, np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)))
    return out
