"""Runs as the replicates: a case's uncertainty from between-run and within-run spread (pure numpy, seeded).

When a side holds several runs of a case (repeats, or machines of one chip), its per-call samples are not
independent: every call of one run shares that process's state, and run-to-run spread is often larger than
within-run spread. So for such cases:
- the CI is Kalibera & Jones's hierarchical bootstrap ("Quantifying performance changes with effect size
  confidence intervals", 2012): resample the runs with replacement, then the samples within each drawn run; the
  statistic is the mean over the drawn runs of each run's resampled median (their mean of means, with a median
  within runs as the rest of the tool uses). A run's resampled median depends only on which order statistics were
  drawn, so each drawn (run, resample) is two column positions of the case's run-sorted samples; the draws are
  seeded per run shape and shared by every case of that shape (each case still gets its own bootstrap), and a
  whole block of cases is R column takes per side.
- the p-value is a t-test on the run medians (log for ratios): Welch when both sides have >= 2 runs, pooled
  variance when one side has a single run. The bootstrap alone over-trusts few runs (with 2 runs it sees at most
  3 distinct run means); the t distribution with its few degrees of freedom does not. As for single runs
  (db.stats.significance), a case is significant when p < ALPHA AND the CI excludes "no change".
"""
from __future__ import annotations

import numpy as np
from scipy.special import stdtr

DRAWS = 400  # per case, as the single-run bootstrap (db.stats.significance.CASE_DRAWS)
SEED = 20261204


def run_median_draws(n: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For `count` resamples of a run of n sorted samples: the (low, high) order-statistic positions of each
    resample's median (equal for odd n)."""
    drawn = np.sort(rng.integers(0, n, size=(count, n)), axis=1)
    return drawn[:, (n - 1) // 2], drawn[:, n // 2]


def draw_positions(lengths: tuple[int, ...], draws: int = DRAWS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Column positions (draws, R) of each drawn run's resampled median, low and high, in a case's samples laid
    out run after run (each run sorted). Seeded by the run lengths: every case of one shape shares the draws."""
    r = len(lengths)
    rng = np.random.default_rng([seed, r, *lengths])
    chosen = rng.integers(0, r, size=(draws, r))  # which run fills each slot
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    low, high = np.empty((draws, r), dtype=np.int64), np.empty((draws, r), dtype=np.int64)
    for run, n in enumerate(lengths):
        lo, hi = run_median_draws(n, draws * r, rng)  # a fresh resample for every slot the run may fill
        mine = chosen == run
        low[mine], high[mine] = starts[run] + lo.reshape(draws, r)[mine], starts[run] + hi.reshape(draws, r)[mine]
    return low, high


class Draws:
    """One run shape's seeded draws, reduced: each draw's statistic is (sum of 2R sorted-sample positions) / 2R,
    so the distinct position sets are summed once per case and spread to the draws by one flat take (with 2 runs
    of 5 samples, 400 draws use ~55 distinct sets)."""

    def __init__(self, lengths: tuple[int, ...], seed: int) -> None:
        low, high = draw_positions(lengths, seed=seed)
        keys = np.sort(np.concatenate([low, high], axis=1), axis=1)
        self.sets, which = np.unique(keys, axis=0, return_inverse=True)
        self.which = which.ravel()
        self.medians = [(start + (n - 1) // 2, start + n // 2) for start, n in
                        zip(np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)]
        self._flat: dict[int, np.ndarray] = {}

    def statistic(self, x: np.ndarray) -> np.ndarray:
        """(cases, draws) bootstrap statistics for cases' run-sorted samples x (cases, total), float32."""
        x = x.astype(np.float32)
        sets = x.take(self.sets[:, 0], axis=1)
        for column in range(1, self.sets.shape[1]):
            sets += x.take(self.sets[:, column], axis=1)
        sets *= np.float32(1.0 / self.sets.shape[1])
        c, k = len(x), self.sets.shape[0]
        if c not in self._flat:
            self._flat[c] = (np.arange(c)[:, None] * k + self.which).ravel()
        return sets.ravel().take(self._flat[c]).reshape(c, len(self.which))

    def run_medians(self, x: np.ndarray) -> np.ndarray:
        """(cases, R) each run's median, from the run-sorted samples."""
        return np.stack([(x[:, lo] + x[:, hi]) * 0.5 for lo, hi in self.medians], axis=1)


def sorted_runs(values: np.ndarray, starts: np.ndarray, lengths: tuple[int, ...]) -> np.ndarray:
    """(cases, total) samples of cases starting at `starts`, runs of `lengths` laid out in turn, each run sorted."""
    total = sum(lengths)
    x = values[starts[:, None] + np.arange(total)]
    if len(set(lengths)) == 1:
        r, n = len(lengths), lengths[0]
        return np.sort(x.reshape(len(x), r, n), axis=2).reshape(len(x), total)
    at = 0
    for n in lengths:
        x[:, at:at + n] = np.sort(x[:, at:at + n], axis=1)
        at += n
    return x


def run_t_test(b_medians: np.ndarray, b_runs: np.ndarray, c_medians: np.ndarray, c_runs: np.ndarray,
               use_ratio: np.ndarray) -> np.ndarray:
    """Two-sided p per case from its run medians (flat, case after case; b_runs/c_runs runs per case): a t-test
    on log medians for ratio metrics, on the medians themselves for differences. NaN where both sides have one
    run (no between-run spread to use)."""
    def moments(medians: np.ndarray, runs: np.ndarray, ratio: np.ndarray):
        starts = np.concatenate([[0], np.cumsum(runs)[:-1]])
        with np.errstate(invalid="ignore", divide="ignore"):  # a 0 median (an exact max error) logs to -inf: p NaN
            y = np.where(np.repeat(ratio, runs), np.log(medians), medians)
            mean = np.add.reduceat(y, starts) / runs
            ss = np.add.reduceat((y - np.repeat(mean, runs)) ** 2, starts)
        return mean, ss

    mb, ssb = moments(b_medians, b_runs, use_ratio)
    mc, ssc = moments(c_medians, c_runs, use_ratio)
    nb, nc = b_runs.astype(float), c_runs.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        vb, vc = ssb / (nb - 1), ssc / (nc - 1)
        welch = (nb >= 2) & (nc >= 2)
        se_w = np.sqrt(vb / nb + vc / nc)
        df_w = (vb / nb + vc / nc) ** 2 / ((vb / nb) ** 2 / (nb - 1) + (vc / nc) ** 2 / (nc - 1))
        pooled_df = nb + nc - 2
        sp = np.sqrt((ssb + ssc) / pooled_df)
        se = np.where(welch, se_w, sp * np.sqrt(1 / nb + 1 / nc))
        df = np.where(welch, df_w, pooled_df)
        diff = mc - mb
        t = np.where(se > 0, diff / se, np.where(diff == 0, 0.0, np.inf))
        df = np.where(np.isfinite(df) & (df > 0), df, np.where(se > 0, np.nan, 1.0))  # zero spread: exact
        p = 2.0 * stdtr(df, -np.abs(t))
    return np.where(pooled_df >= 1, p, np.nan)


def no_empty_run(lists) -> np.ndarray:
    """Per case: no run of it is empty (a SampleLists, db.stats.significance)."""
    if lists.runs is None:
        return np.ones(len(lists.offsets) - 1, dtype=bool)
    empty = (np.diff(lists.run_offsets) == 0).astype(np.int64)
    return np.add.reduceat(np.append(empty, 0), lists.runs[:-1]) * (lists.run_counts > 0) == 0


def _shapes(lists) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per case: runs, the first run's length, and whether every run has that length."""
    runs = lists.run_counts
    if lists.runs is None:
        return runs, lists.counts, np.ones(len(runs), dtype=bool)
    lengths = np.append(np.diff(lists.run_offsets), 0)
    first = lengths[np.minimum(lists.runs[:-1], len(lengths) - 1)]
    low = np.minimum.reduceat(lengths, np.minimum(lists.runs[:-1], len(lengths) - 1))
    high = np.maximum.reduceat(lengths, np.minimum(lists.runs[:-1], len(lengths) - 1))
    return runs, first, (low == high) | (runs <= 1)


def _lengths(lists, row: int) -> tuple[int, ...]:
    if lists.runs is None:
        return (int(lists.counts[row]),)
    return tuple(int(n) for n in np.diff(lists.run_offsets[lists.runs[row]:lists.runs[row + 1] + 1]))


def run_groups(base, cand, use_ratio: np.ndarray, chosen: np.ndarray):
    """((base run lengths, candidate run lengths), ratio?, rows) per group of cases of one run shape: cases whose
    runs all have one length grouped in one sort; the rest (runs of mixed lengths: rare) one case at a time."""
    (rb, nb, ub), (rc, nc, uc) = _shapes(base), _shapes(cand)
    uniform = chosen & ub & uc
    rows = np.flatnonzero(uniform)
    code = np.stack([rb[rows], nb[rows], rc[rows], nc[rows], use_ratio[rows].astype(np.int64)])
    rows = rows[np.lexsort(code[::-1])]
    code = code[:, np.lexsort(code[::-1])]
    cuts = np.flatnonzero(np.any(code[:, 1:] != code[:, :-1], axis=0)) + 1
    for part in np.split(rows, cuts) if len(rows) else []:
        r = part[0]
        yield ((int(nb[r]),) * int(rb[r]), (int(nc[r]),) * int(rc[r])), bool(use_ratio[r]), part
    for r in np.flatnonzero(chosen & ~uniform):
        yield (_lengths(base, r), _lengths(cand, r)), bool(use_ratio[r]), np.array([r])
