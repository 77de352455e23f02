"""Two-sided Mann–Whitney U p-values for many cases at once, each case's samples already sorted.

The same test scipy.stats.mannwhitneyu(candidate, baseline) runs per case, by its rules: the exact
distribution when one side has ≤ 8 samples and the case has no ties, otherwise the normal approximation
with tie and continuity corrections (scipy's formula). The method is chosen per case, as a per-case scipy
call would; scipy's batched call picks one method for the whole batch. U and the tie term are computed here
with whole-array numpy (pairwise comparisons of short sorted rows); the exact tail comes from scipy.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtr
from scipy.stats import mannwhitneyu

EXACT_MAX = 8  # scipy: exact only when a side has at most this many samples (and there are no ties)
PAIR_BLOCK = 1 << 22  # cases × nc × nb comparisons per block: a few MB of booleans at a time
PAIRWISE_MAX = 4096  # nc × nb above this: scipy's rank-based path costs less than all pairs


def mwu_p_values(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """(cases,) p-values for sorted (cases, nb) baseline and (cases, nc) candidate rows; NaN where a row has NaN."""
    nb, nc = base.shape[1], cand.shape[1]
    pairwise = nb * nc <= PAIRWISE_MAX
    u, shared = u_statistic(base, cand) if pairwise else (None, None)
    maybe_tied = None if shared is None else shared | _repeats(base) | _repeats(cand)
    ties = tie_terms(base, cand, maybe_tied)
    exact = (min(nb, nc) <= EXACT_MAX) & (ties == 0)
    p = np.full(len(base), np.nan)
    for rows, method in ((exact, "exact"), (~exact, "asymptotic")):
        if not rows.any():
            continue
        if method == "asymptotic" and pairwise:
            p[rows] = _asymptotic(u[rows], nb, nc, ties[rows])
        else:
            with np.errstate(all="ignore"):
                p[rows] = mannwhitneyu(cand[rows], base[rows], axis=1, method=method).pvalue
    p[np.isnan(base[:, -1]) | np.isnan(cand[:, -1])] = np.nan  # NaN sorts last: scipy propagates it
    return p


def _repeats(rows: np.ndarray) -> np.ndarray:
    """Per sorted row: does a value repeat?"""
    return (rows[:, 1:] == rows[:, :-1]).any(axis=1)


def tie_terms(base: np.ndarray, cand: np.ndarray, maybe_tied: np.ndarray | None = None) -> np.ndarray:
    """Per case, Σ (t³ − t) over the tied groups (sizes t) of both sides' samples together; 0 without ties.
    Only the rows `maybe_tied` marks (all when None) are looked at; the others are 0."""
    out = np.zeros(len(base))
    look = np.flatnonzero(maybe_tied) if maybe_tied is not None else np.arange(len(base))
    both = np.sort(np.concatenate([base[look], cand[look]], axis=1), axis=1)
    starts = np.ones(both.shape, dtype=bool)
    starts[:, 1:] = both[:, 1:] != both[:, :-1]  # a new value begins a group
    tied = ~starts.all(axis=1)
    if tied.any():
        flags = starts[tied]
        sizes = np.bincount(np.cumsum(flags.ravel()) - 1).astype(float)  # each group's size, row after row
        row_of_group = np.repeat(np.arange(len(flags)), flags.sum(axis=1))
        out[look[tied]] = np.bincount(row_of_group, weights=sizes ** 3 - sizes, minlength=len(flags))
    return out


def u_statistic(base: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidate's U per case (pairs with candidate > baseline, plus half the tied pairs), and whether the
    case has a value on both sides (a tied pair): counted from candidate > and ≥ baseline, pair by pair."""
    nb, nc = base.shape[1], cand.shape[1]
    u, shared = np.empty(len(base)), np.empty(len(base), dtype=bool)
    step = max(1, PAIR_BLOCK // (nb * nc))
    for s in range(0, len(base), step):
        b, c = base[s:s + step, None, :], cand[s:s + step, :, None]
        above = np.count_nonzero((c > b).reshape(len(b), -1), axis=1)
        at_least = np.count_nonzero((c >= b).reshape(len(b), -1), axis=1)
        u[s:s + step], shared[s:s + step] = 0.5 * (above + at_least), at_least > above
    return u, shared


def _asymptotic(u1: np.ndarray, nb: int, nc: int, ties: np.ndarray) -> np.ndarray:
    """scipy's normal approximation: z of max(U1, U2) with tie correction, minus ½ for continuity, two-sided."""
    n1, n2 = nc, nb
    u = np.maximum(u1, n1 * n2 - u1)
    n = n1 + n2
    s = np.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u - n1 * n2 / 2 - 0.5) / s
    return np.clip(2 * ndtr(-z), 0.0, 1.0)
