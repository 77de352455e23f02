"""Per-case statistics from the raw samples, vectorised over many cases.

Medians and quartiles, Mann–Whitney U (scipy, two-sided) on the two sides' samples, and a bootstrap 95 % CI
of the candidate/baseline median ratio (or median difference). Cases with the same sample counts are handled
together as 2-D arrays, in cache-sized chunks.
The bootstrap resamples sorted samples: a resample's median only depends on which order statistics were drawn,
so one seeded set of draws per sample size serves every case of that size (each case still gets an ordinary
bootstrap). n < 3 on either side is "insufficient samples" and never significant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.stats import mannwhitneyu

ALPHA = 0.01  # p below this AND a CI excluding "no change" is significant (many cases: stricter than 0.05)
MIN_SAMPLES = 3
BOOTSTRAP_DRAWS = 1000  # per family (over cases)
CASE_DRAWS = 400  # per case: enough for a 95 % CI flag
CHUNK = 512  # cases per block: a block's (cases × draws) arrays stay in cache
SEED = 20261202
INSUFFICIENT, SIGNIFICANT, NOT_SIGNIFICANT = "insufficient samples", "significant", "not significant"


@dataclass
class SampleLists:
    """Variable-length sample lists in Arrow layout: case i's samples are values[offsets[i]:offsets[i+1]]."""
    values: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_arrow(cls, column: pa.ChunkedArray | pa.Array) -> "SampleLists":
        """From a list<double> column; a null list (no ok sample) is an empty one."""
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        arr = pc.fill_null(arr, pa.scalar([], arr.type)) if arr.null_count else arr
        values = arr.flatten().to_numpy(zero_copy_only=False).astype(float, copy=False)
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
        return cls(values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, mask: np.ndarray) -> "SampleLists":
        """The lists where mask is true, in order, as a new compact SampleLists."""
        rows = np.flatnonzero(mask)
        counts = self.counts[rows]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        index = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - self.offsets[rows], counts)
        return SampleLists(self.values[index], offsets)

    def matrix(self, rows: np.ndarray, n: int) -> np.ndarray:
        """Rows (all of length n) as a sorted (len(rows), n) array."""
        return np.sort(self.values[self.offsets[rows][:, None] + np.arange(n)], axis=1)


@dataclass
class Summary:
    median: np.ndarray
    p25: np.ndarray
    p75: np.ndarray


def summarize_lists(lists: SampleLists) -> Summary:
    """Median and quartiles (linear interpolation, as numpy's and DuckDB's quantile_cont) of every list; NaN if
    empty."""
    m = len(lists.offsets) - 1
    out = Summary(*(np.full(m, np.nan) for _ in range(3)))
    counts = lists.counts
    for n in np.unique(counts[counts > 0]):
        rows = np.flatnonzero(counts == n)
        q = np.quantile(lists.matrix(rows, int(n)), [0.5, 0.25, 0.75], axis=1)
        out.median[rows], out.p25[rows], out.p75[rows] = q
    return out


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
    """(cases, draws) resample medians, in float32: the CI needs ~3 digits and half the bytes halve the time."""
    rows = sorted_rows.astype(np.float32)
    lo, hi = draws
    if np.array_equal(lo, hi):  # odd n: the median is one order statistic
        return rows[:, lo]
    return (rows[:, lo] + rows[:, hi]) * np.float32(0.5)


def row_percentiles(x: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """np.percentile(x, qs, axis=1) (linear interpolation, NaN propagating) from one in-place sort of each row:
    numpy's vectorised sort of short rows beats its per-row partition (np.percentile's path) several times."""
    d = x.shape[1]
    pos = [q / 100.0 * (d - 1) for q in qs]
    x.sort(axis=1)  # NaN sort last; a row with any NaN gets a NaN percentile below, as np.percentile gives
    bad = np.isnan(x[:, -1])
    part = x
    out = []
    for p in pos:
        lo, hi, frac = int(np.floor(p)), int(np.ceil(p)), p - np.floor(p)
        value = (part[:, lo] + (part[:, hi] - part[:, lo]) * frac).astype(float)
        value[bad] = np.nan
        out.append(value)
    return out


def _mwu(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(mannwhitneyu(cand, base, axis=1, alternative="two-sided").pvalue, dtype=float)


def _boot_ci(base: np.ndarray, cand: np.ndarray, use_ratio: bool, rngs: dict) -> list[np.ndarray]:
    bb = _boot_medians(base, _draws_for(base.shape[1], rngs, "b"))
    cb = _boot_medians(cand, _draws_for(cand.shape[1], rngs, "c"))
    with np.errstate(divide="ignore", invalid="ignore"):
        change = cb / bb if use_ratio else cb - bb
    return row_percentiles(change, (2.5, 97.5))


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
    groups = np.stack([nb, nc, use_ratio.astype(np.int64)], axis=1)[enough]
    for sb, sc, ratio in np.unique(groups, axis=0) if len(groups) else []:
        rows = np.flatnonzero(enough & (nb == sb) & (nc == sc) & (use_ratio == bool(ratio)))
        b, c = base.matrix(rows, int(sb)), cand.matrix(rows, int(sc))
        p[rows] = _mwu(b, c)  # one call per group: scipy's per-call overhead is larger than the chunk's work
        for start in range(0, len(rows), CHUNK):  # the bootstrap's (cases × draws) arrays, cache-sized
            part = slice(start, start + CHUNK)
            low[rows[part]], high[rows[part]] = _boot_ci(b[part], c[part], bool(ratio), rngs)
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
    means = bootstrap_means(log_ratios[None, :], seed)
    low, high = np.exp(row_percentiles(means, (2.5, 97.5)))
    return centre, float(low[0]), float(high[0])


def bootstrap_means(logs: np.ndarray, seed: int = SEED) -> np.ndarray:
    """Bootstrap means of each row of `logs` (families × k cases): (families, BOOTSTRAP_DRAWS).

    A resample's mean is (counts of each case drawn) · logs / k, so all families of one size share one seeded
    count matrix and the whole bootstrap is one matrix product."""
    k = logs.shape[1]
    draws = np.random.default_rng([seed, k]).integers(0, k, size=(BOOTSTRAP_DRAWS, k))
    flat = (np.arange(BOOTSTRAP_DRAWS)[:, None] * k + draws).ravel()
    counts = np.bincount(flat, minlength=BOOTSTRAP_DRAWS * k).reshape(BOOTSTRAP_DRAWS, k).astype(float)
    return logs @ counts.T / k
