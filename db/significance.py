"""Significance of a per-case change from the raw samples, vectorised over many cases.

Mann–Whitney U (scipy, two-sided) on the two sides' samples, plus a bootstrap 95 % CI of the candidate/baseline
median ratio (or median difference). Cases with the same sample counts are processed together as 2-D arrays.
The bootstrap resamples sorted samples: a resample's median only depends on which order statistics were drawn,
so one seeded set of draws per sample size serves every case of that size (each case still gets an ordinary
bootstrap). n < 3 on either side is "insufficient samples" and never significant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

ALPHA = 0.01  # p below this AND a CI excluding "no change" is significant (many cases: stricter than 0.05)
MIN_SAMPLES = 3
BOOTSTRAP_DRAWS = 1000  # per family (over cases)
CASE_DRAWS = 400  # per case: enough for a 95 % CI flag; 50k-case comparisons stay seconds, not tens
SEED = 20261202
INSUFFICIENT, SIGNIFICANT, NOT_SIGNIFICANT = "insufficient samples", "significant", "not significant"


@dataclass
class SampleLists:
    """Variable-length sample lists in Arrow layout: case i's samples are values[offsets[i]:offsets[i+1]]."""
    values: np.ndarray
    offsets: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def matrix(self, rows: np.ndarray, n: int) -> np.ndarray:
        """Rows (all of length n) as a sorted (len(rows), n) array."""
        return np.sort(self.values[self.offsets[rows][:, None] + np.arange(n)], axis=1)


@dataclass
class Significance:
    p_value: np.ndarray
    ci_low: np.ndarray  # of candidate/baseline median ratio, or candidate - baseline median difference
    ci_high: np.ndarray
    verdict: np.ndarray  # INSUFFICIENT | SIGNIFICANT | NOT_SIGNIFICANT


def _median_draws(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For resamples of size n (sorted), the order-statistic positions of each resample's median."""
    drawn = np.sort(rng.integers(0, n, size=(CASE_DRAWS, n)), axis=1)
    return drawn[:, (n - 1) // 2], drawn[:, n // 2]


def _boot_medians(sorted_rows: np.ndarray, draws: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    lo, hi = draws
    return (sorted_rows[:, lo] + sorted_rows[:, hi]) / 2.0  # (cases, draws)


def _group(base: np.ndarray, cand: np.ndarray, use_ratio: bool, rngs: dict) -> tuple[np.ndarray, ...]:
    nb, nc = base.shape[1], cand.shape[1]
    with np.errstate(all="ignore"):
        p = mannwhitneyu(cand, base, axis=1, alternative="two-sided").pvalue
    bb = _boot_medians(base, _draws_for(nb, rngs, "b"))
    cb = _boot_medians(cand, _draws_for(nc, rngs, "c"))
    with np.errstate(divide="ignore", invalid="ignore"):
        change = cb / bb if use_ratio else cb - bb
    low, high = np.percentile(change, [2.5, 97.5], axis=1)  # vectorised; nanpercentile loops per row
    return np.asarray(p, dtype=float), low, high


def _draws_for(n: int, rngs: dict, side: str) -> tuple[np.ndarray, np.ndarray]:
    key = (side, n)
    if key not in rngs:
        rngs[key] = _median_draws(n, np.random.default_rng([SEED, n, 0 if side == "b" else 1]))
    return rngs[key]


def significance(base: SampleLists, cand: SampleLists, use_ratio: np.ndarray) -> Significance:
    """Per case: Mann–Whitney p, bootstrap 95 % CI of the median change, and the verdict."""
    m = len(base.offsets) - 1
    p, low, high = (np.full(m, np.nan) for _ in range(3))
    nb, nc = base.counts, cand.counts
    enough = (nb >= MIN_SAMPLES) & (nc >= MIN_SAMPLES)
    rngs: dict = {}
    for (sb, sc, ratio) in {(int(b), int(c), bool(r)) for b, c, r in zip(nb[enough], nc[enough], use_ratio[enough])}:
        rows = np.flatnonzero(enough & (nb == sb) & (nc == sc) & (use_ratio == ratio))
        for chunk in np.array_split(rows, max(1, len(rows) // 4000 + 1)):
            if len(chunk):
                p[chunk], low[chunk], high[chunk] = _group(base.matrix(chunk, sb), cand.matrix(chunk, sc), ratio, rngs)
    no_change = np.where(use_ratio, 1.0, 0.0)
    excludes = (low > no_change) | (high < no_change)
    verdict = np.where(~enough, INSUFFICIENT, np.where((p < ALPHA) & excludes, SIGNIFICANT, NOT_SIGNIFICANT))
    return Significance(p, low, high, verdict)


def geomean_ci(log_ratios: np.ndarray, seed: int = SEED) -> tuple[float, float, float]:
    """Geometric mean of ratios (given as logs) and a bootstrap 95 % CI over the cases (seeded)."""
    k = len(log_ratios)
    centre = float(np.exp(log_ratios.mean()))
    if k < 2:
        return centre, float("nan"), float("nan")  # one case: no spread over cases to resample
    rng = np.random.default_rng([seed, k])
    means = log_ratios[rng.integers(0, k, size=(BOOTSTRAP_DRAWS, k))].mean(axis=1)
    low, high = np.exp(np.percentile(means, [2.5, 97.5]))
    return centre, float(low), float(high)
