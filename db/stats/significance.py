"""Per-case statistics from the raw samples, vectorised over many cases.

Medians and quartiles of each case's pooled samples (what the tables show), and each case's verdict: its change
tested on its replicates — worker processes within a run, runs above them, the store's A/A pairs for the
run-to-run part (db.stats.replicates) — with Holm's step over the cases a review tests, so the chance that a
review of unchanged software calls anything significant is at most REVIEW_ALPHA (docs/regressions.md). A case
with no replicates and no A/A data is UNCONFIRMED: its figures are shown, never called a change. Also the family
geomean's bootstrap over cases.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from db.stats import replicates
from db.stats.contention import CleanSide, clean_side
from db.stats.lists import QUARTILES, SampleLists, list_quantiles, sorted_quantiles

REVIEW_ALPHA = 0.05  # family-wise: at most 5 % of reviews of unchanged software call any case significant
BOOTSTRAP_DRAWS = 1000  # per family (over cases)
SEED = 20261202
UNCONFIRMED, SIGNIFICANT, NOT_SIGNIFICANT = "unconfirmed: no replicates", "significant", "not significant"
BY_RULE = "judged by its rule"  # single figures (memory, correctness): their metric's rule, not a test
# a side with too few clean worker processes (db.stats.contention): its figures timed the machine's load
CONTENDED = "unconfirmed: contended"
SIGNIFICANCE_WORDS = (UNCONFIRMED, SIGNIFICANT, NOT_SIGNIFICANT, BY_RULE, CONTENDED)  # Significance.codes index this
_SIGNIFICANCE_WORDS = np.array(SIGNIFICANCE_WORDS, dtype=object)
# what a case's variance rests on (Significance.replicates)
REPLICATE_WORDS = (
    "none: one process, one run a side, no A/A data",
    "worker processes",
    "runs and A/A pairs",
    "worker processes, runs and A/A pairs",
    "none: its replicates agree exactly (a spread of 0 is no evidence)",
)
ZERO_SPREAD = 4  # REPLICATE_WORDS' index of a case whose replicates' variance came out exactly 0


@dataclass
class Quartiles:
    median: np.ndarray
    p25: np.ndarray
    p75: np.ndarray


def summarize_lists(lists: SampleLists) -> Quartiles:
    """Median and quartiles (linear interpolation, as numpy's and DuckDB's quantile_cont) of every list; NaN if
    empty."""
    return Quartiles(**dict(zip(QUARTILES, list_quantiles(lists.values, lists.offsets, tuple(QUARTILES.values())))))


@dataclass
class Significance:
    p_value: np.ndarray  # per case, two-sided (db.stats.replicates); NaN where untestable
    ci_low: np.ndarray  # of candidate/baseline median ratio, or candidate - baseline median difference
    ci_high: np.ndarray
    verdict: np.ndarray  # SIGNIFICANCE_WORDS: after the review's family-wise step over the cases it tests
    codes: np.ndarray  # the verdict as its index in SIGNIFICANCE_WORDS
    se: np.ndarray  # standard error of the change (log ratio, or difference)
    df: np.ndarray  # its degrees of freedom
    replicates: np.ndarray  # what the variance rests on, as its index in REPLICATE_WORDS


def side_figures(side: CleanSide, use_ratio: np.ndarray) -> replicates.SideReplicates:
    """One side's replicate figures per case (db.stats.replicates.side_replicates) from its clean samples and
    their process sizes per run (db.stats.contention.clean_side). Pure numpy, which releases the GIL:
    db.review.comparison computes both sides on workers beside its frames."""
    lists = side.lists
    return replicates.side_replicates(lists.values, *_runs(lists), side.size_counts, side.sizes, use_ratio)


@dataclass(frozen=True)
class SideStats:
    """One side's figures per case, from its clean processes (db.stats.contention): what a Compare reads of a
    side, and what the side summaries store (db.store.derived.side_cases) — both from `side_stats`."""

    n: np.ndarray  # every case: the samples its figures are of
    quartiles: Quartiles  # every case
    figures: replicates.SideReplicates  # the cases at `rows` (all where none were named)
    contention: dict[str, np.ndarray]  # db.stats.contention.COLUMNS, every case
    samples: SampleLists | None  # the clean samples of the cases at `rows`, where they were read


def clean_quartiles(lists: SampleLists, processes, contention) -> tuple[CleanSide, Quartiles]:
    """A side's contended processes left out (db.stats.contention), then the quartiles of what is left: the one
    figure of a build on a case, whichever page shows it (Compare's sides, Trends' points)."""
    clean = clean_side(lists, processes, contention)
    return clean, summarize_lists(clean.lists)


def side_stats(
    lists: SampleLists, processes, contention, use_ratio: np.ndarray, rows: np.ndarray | None = None
) -> SideStats:
    """A side's clean_quartiles, the figures of the cases at `rows` (indices; every case if None) and its
    contention columns. `use_ratio`: of the cases at `rows`."""
    clean, quartiles = clean_quartiles(lists, processes, contention)
    part = clean if rows is None else clean.take(rows)
    return SideStats(clean.lists.counts, quartiles, side_figures(part, use_ratio), clean.columns(), part.lists)


def significance(
    sides: tuple[replicates.SideReplicates, replicates.SideReplicates],
    change: np.ndarray,
    use_ratio: np.ndarray,
    tested: np.ndarray,
    aa_pairs: np.ndarray | None = None,
    aa_sum_sq: np.ndarray | None = None,
    alpha: float = REVIEW_ALPHA,
    contended: np.ndarray | None = None,
    sampled: np.ndarray | None = None,
) -> Significance:
    """Per case: the change's test on its replicates (db.stats.replicates) and the verdict. `sides`: the baseline's
    and the candidate's side_figures; `change` is the shown change (ratio of pooled medians, or their
    difference); `tested` marks the cases whose metric a review judges by significance: those are the family whose
    family-wise error Holm's step holds at alpha (the others are judged by their own rule: BY_RULE). `contended`
    marks the cases a side of which had too few clean processes (db.stats.contention): never tested, CONTENDED.
    `sampled` marks single figures a sampler reads (bundle.metrics.SAMPLED): judged by their rule, and where runs
    or A/A pairs can test them, tested too, as a family of their own under Holm's step (untestable: BY_RULE)."""
    m = len(use_ratio)
    zeros = np.zeros(m)
    test = replicates.change_test(
        *sides, zeros if aa_pairs is None else aa_pairs, zeros if aa_sum_sq is None else aa_sum_sq
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        # the CI keeps its width and is moved onto the shown change (pooled medians), so the figure a table
        # shows is inside its own CI; the test is on the means of process figures (db.stats.replicates)
        shift = np.where(use_ratio, np.log(change), change) - test.d
    busy = np.zeros(m, dtype=bool) if contended is None else np.asarray(contended, dtype=bool)
    family = tested & test.testable & ~busy
    passed = replicates.holm(np.where(family, test.p_value, np.nan), alpha)
    codes = np.where(~tested, 3, np.where(busy, 4, np.where(~test.testable, 0, np.where(passed, 1, 2))))
    if sampled is not None and sampled.any():
        peaks = sampled & ~tested & test.testable
        passed = replicates.holm(np.where(peaks, test.p_value, np.nan), alpha)
        codes = np.where(peaks, np.where(passed, 1, 2), codes)
    with np.errstate(over="ignore"):
        low = np.where(use_ratio, np.exp(test.ci_low + shift), test.ci_low + shift)
        high = np.where(use_ratio, np.exp(test.ci_high + shift), test.ci_high + shift)
    words = np.where(
        test.zero_spread,
        ZERO_SPREAD,
        np.where(~test.testable, 0, np.where(test.processes, np.where(test.run_level, 3, 1), 2)),
    )
    untested = tested & busy  # a contended case's p and CI would be the machine's load: none is shown
    p_value, low, high = (np.where(untested, np.nan, a) for a in (test.p_value, low, high))
    return Significance(p_value, low, high, _SIGNIFICANCE_WORDS[codes], codes, test.se, test.df, words)


def _runs(lists: SampleLists) -> tuple[np.ndarray, np.ndarray]:
    """(per case: offsets into the runs, per run: offsets into the values); one run per case where none."""
    if lists.runs is None:
        return np.arange(len(lists.offsets), dtype=np.int64), lists.offsets
    return lists.runs, lists.run_offsets


def row_percentiles(x: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """np.percentile(x, qs, axis=1) (linear interpolation, NaN propagating) from one in-place sort of each row:
    numpy's vectorised sort of short rows beats its per-row partition (np.percentile's path) several times."""
    x.sort(axis=1)  # NaN sort last; a row with any NaN gets a NaN percentile, as np.percentile gives
    return [q.astype(float) for q in sorted_quantiles(x, tuple(q / 100.0 for q in qs))]


def geomean_ci(log_ratios: np.ndarray, seed: int = SEED) -> tuple[float, float, float]:
    """Geometric mean of ratios (given as logs) and a bootstrap 95 % CI over the cases (seeded)."""
    k = len(log_ratios)
    if k == 0:
        return float("nan"), float("nan"), float("nan")
    centre = float(geomeans(log_ratios, np.array([0]), np.array([k]))[0])
    if k < 2:
        return centre, float("nan"), float("nan")  # one case: no spread over cases to resample
    means = bootstrap_means(log_ratios[None, :], seed)
    low, high = np.exp(row_percentiles(means, (2.5, 97.5)))
    return centre, float(low[0]), float(high[0])


def geomeans(logs: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each group's geometric mean, its ratios' logs given group after group (`starts`, `sizes`): the one
    definition (a family's, a matrix cell's, a claim's)."""
    return np.exp(np.add.reduceat(logs, starts) / sizes)


def bootstrap_means(logs: np.ndarray, seed: int = SEED) -> np.ndarray:
    """Bootstrap means of each row of `logs` (families × k cases): (families, BOOTSTRAP_DRAWS).

    A resample's mean is (counts of each case drawn) · logs / k, so all families of one size share one seeded
    count matrix and the whole bootstrap is one matrix product."""
    k = logs.shape[1]
    draws = np.random.default_rng([seed, k]).integers(0, k, size=(BOOTSTRAP_DRAWS, k))
    flat = (np.arange(BOOTSTRAP_DRAWS)[:, None] * k + draws).ravel()
    counts = np.bincount(flat, minlength=BOOTSTRAP_DRAWS * k).reshape(BOOTSTRAP_DRAWS, k).astype(float)
    # BLAS on one thread: multi-threaded OpenBLAS waits 10–20 ms per call for a worker whenever the other cores
    # are busy (a loaded server) and its spinning threads take the cores from db.review.comparison's own threads
    # (unlimited here: the 10⁷-row Compare ~50 ms slower, ~130 ms more CPU); numpy's einsum loop, which needs no
    # limit, took ~10 ms for 1,350 families of 37 cases against ~2 ms
    with _blas().limit(limits=1, user_api="blas"):  # process-wide while it lasts: BLAS has one setting
        return (logs @ np.ascontiguousarray(counts.T)) / k


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries numpy loaded, found once (threadpoolctl scans the process's libraries)."""
    return ThreadpoolController()
