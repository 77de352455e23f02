"""Per-case statistics from the raw samples, vectorised over many cases.

Medians and quartiles, Mann–Whitney U (two-sided, scipy's method choice and formulas) on the two sides'
samples, and a bootstrap 95 % CI of the candidate/baseline median ratio (or median difference). Cases with the
same sample counts are handled together as 2-D arrays of sorted rows (SampleLists.matrix), in blocks that may
run on worker threads, and in cache-sized chunks within a block.
The bootstrap resamples sorted samples: a resample's median only depends on which order statistics were drawn,
so one seeded set of draws per sample size serves every case of that size (each case still gets an ordinary
bootstrap). n < 3 on either side is "insufficient samples" and never significant.
"""
from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from db.stats import hierarchical
from db.stats.ranktest import mwu_p_values

ALPHA = 0.01  # p below this AND a CI excluding "no change" is significant (many cases: stricter than 0.05)
MIN_SAMPLES = 3
BOOTSTRAP_DRAWS = 1000  # per family (over cases)
CASE_DRAWS = 400  # per case: enough for a 95 % CI flag
CHUNK = 512  # cases per bootstrap step: its (cases × draws) arrays stay in cache
BLOCK = 8192  # cases per task on the worker threads (db.views.compare)
SEED = 20261202
INSUFFICIENT, SIGNIFICANT, NOT_SIGNIFICANT = "insufficient samples", "significant", "not significant"
VERDICTS = (INSUFFICIENT, SIGNIFICANT, NOT_SIGNIFICANT)  # Significance.codes index this
_VERDICTS = np.array(VERDICTS, dtype=object)


@dataclass
class SampleLists:
    """Variable-length sample lists in Arrow layout: case i's samples are values[offsets[i]:offsets[i+1]]. With
    `runs`, case i's samples come from runs runs[i]..runs[i+1]-1, run j's being values[run_offsets[j]:…[j+1]]
    (a case pooled over several runs: db.stats.hierarchical uses the runs as replicates)."""
    values: np.ndarray  # each list in the order it was read (run after run)
    offsets: np.ndarray
    runs: np.ndarray | None = None  # per case, offsets into the runs (None: every case is one run)
    run_offsets: np.ndarray | None = None  # per run, offsets into values

    @classmethod
    def from_arrow(cls, column: pa.ChunkedArray | pa.Array) -> "SampleLists":
        """From a list<double> column (one run per case), or a list<list<double>> column (each case's runs); a
        null list (no ok sample) is an empty one."""
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        arr = pc.fill_null(arr, pa.scalar([], arr.type)) if arr.null_count else arr
        if not pa.types.is_list(arr.type.value_type):
            values = arr.flatten().to_numpy(zero_copy_only=False).astype(float, copy=False)
            return cls(values, _offsets(pc.list_value_length(arr)))
        inner = arr.flatten()
        inner = pc.fill_null(inner, pa.scalar([], inner.type)) if inner.null_count else inner
        runs, run_offsets = _offsets(pc.list_value_length(arr)), _offsets(pc.list_value_length(inner))
        values = inner.flatten().to_numpy(zero_copy_only=False).astype(float, copy=False)
        return cls(values, run_offsets[runs], runs, run_offsets)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def run_counts(self) -> np.ndarray:
        """Runs per case (1 where the lists carry no runs)."""
        return np.ones(len(self.offsets) - 1, dtype=np.int64) if self.runs is None else np.diff(self.runs)

    def take(self, mask: np.ndarray) -> "SampleLists":
        """The lists where mask is true, in order, as a new compact SampleLists (runs kept)."""
        rows = np.flatnonzero(mask)
        counts = self.counts[rows]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        index = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - self.offsets[rows], counts)
        if self.runs is None:
            return SampleLists(self.values[index], offsets)
        per_case = self.run_counts[rows]
        runs = np.concatenate([[0], np.cumsum(per_case)]).astype(np.int64)
        kept = np.arange(runs[-1]) - np.repeat(runs[:-1] - self.runs[rows], per_case)
        run_offsets = np.concatenate([[0], np.cumsum(np.diff(self.run_offsets)[kept])]).astype(np.int64)
        return SampleLists(self.values[index], offsets, runs, run_offsets)

    def matrix(self, rows: np.ndarray, n: int) -> np.ndarray:
        """Rows (all of length n) as a sorted (len(rows), n) array (NaN last)."""
        return np.sort(self.values[self.offsets[rows][:, None] + np.arange(n)], axis=1)

    def run_lists(self) -> "SampleLists":
        """One list per run (per case where there are no runs)."""
        return self if self.runs is None else SampleLists(self.values, self.run_offsets)


def _offsets(lengths: pa.Array) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths.to_numpy(zero_copy_only=False))]).astype(np.int64)


@dataclass
class Quartiles:
    median: np.ndarray
    p25: np.ndarray
    p75: np.ndarray


def summarize_lists(lists: SampleLists) -> Quartiles:
    """Median and quartiles (linear interpolation, as numpy's and DuckDB's quantile_cont) of every list; NaN if
    empty."""
    m = len(lists.offsets) - 1
    out = Quartiles(*(np.full(m, np.nan) for _ in range(3)))
    counts = lists.counts
    for n in np.unique(counts[counts > 0]):
        rows = np.flatnonzero(counts == n)
        out.median[rows], out.p25[rows], out.p75[rows] = sorted_quantiles(lists.matrix(rows, int(n)), (0.5, 0.25, 0.75))
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


@dataclass
class Significance:
    p_value: np.ndarray
    ci_low: np.ndarray  # of candidate/baseline median ratio, or candidate - baseline median difference
    ci_high: np.ndarray
    verdict: np.ndarray  # INSUFFICIENT | SIGNIFICANT | NOT_SIGNIFICANT
    codes: np.ndarray  # the verdict as its index in VERDICTS
    by_runs: np.ndarray  # runs were the replicates (db.stats.hierarchical); else one run a side, per-call samples


def _median_draws(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For resamples of size n (sorted), the order-statistic positions of each resample's median, as the distinct
    (low, high) position pairs and, for a block of CHUNK cases, the flat index of each (case, draw)'s pair in
    the block's (cases, pairs) medians (n = 10: ≤ 55 pairs for 400 draws)."""
    drawn = np.sort(rng.integers(0, n, size=(CASE_DRAWS, n)), axis=1)
    pairs, which = np.unique(np.stack([drawn[:, (n - 1) // 2], drawn[:, n // 2]]), axis=1, return_inverse=True)
    flat = (np.arange(CHUNK)[:, None] * pairs.shape[1] + which.ravel()).ravel()
    return pairs[0], pairs[1], flat


def _boot_medians(sorted_rows: np.ndarray, draws: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """(cases, draws) resample medians, in float32: the CI needs ~3 digits and half the bytes halve the time.
    Each distinct median pair is averaged once, then spread to the draws by one flat take (C order: a row sort
    of medians[:, which]'s F-order result runs ~4× slower)."""
    rows = sorted_rows.astype(np.float32)
    lo, hi, flat = draws
    medians = rows[:, lo] if np.array_equal(lo, hi) else (rows[:, lo] + rows[:, hi]) * np.float32(0.5)
    return medians.ravel().take(flat[:len(rows) * CASE_DRAWS]).reshape(len(rows), CASE_DRAWS)


def row_percentiles(x: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """np.percentile(x, qs, axis=1) (linear interpolation, NaN propagating) from one in-place sort of each row:
    numpy's vectorised sort of short rows beats its per-row partition (np.percentile's path) several times."""
    x.sort(axis=1)  # NaN sort last; a row with any NaN gets a NaN percentile, as np.percentile gives
    return [q.astype(float) for q in sorted_quantiles(x, tuple(q / 100.0 for q in qs))]


def _boot_ci(base: np.ndarray, cand: np.ndarray, use_ratio: bool, draws: tuple) -> list[np.ndarray]:
    bb, change = _boot_medians(base, draws[0]), _boot_medians(cand, draws[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        (np.divide if use_ratio else np.subtract)(change, bb, out=change)  # in place: one (cases × draws) array
    return row_percentiles(change, (2.5, 97.5))


def _draws_for(n: int, rngs: dict, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    key = (side, n)
    if key not in rngs:
        rngs[key] = _median_draws(n, np.random.default_rng([SEED, n, 0 if side == "b" else 1]))
    return rngs[key]


def _groups(nb: np.ndarray, nc: np.ndarray, use_ratio: np.ndarray, enough: np.ndarray):
    """(nb, nc, ratio?, rows) for each group of cases with equal sample counts and comparison, in one sort."""
    rows = np.flatnonzero(enough)
    code = np.stack([nb[rows], nc[rows], use_ratio[rows].astype(np.int64)])
    rows = rows[np.lexsort(code[::-1])]
    code = np.stack([nb[rows], nc[rows], use_ratio[rows].astype(np.int64)])
    cuts = np.flatnonzero(np.any(code[:, 1:] != code[:, :-1], axis=0)) + 1
    for part in np.split(rows, cuts) if len(rows) else []:
        yield int(nb[part[0]]), int(nc[part[0]]), bool(use_ratio[part[0]]), part


def significance(base: SampleLists, cand: SampleLists, use_ratio: np.ndarray,
                 pool: Executor | None = None) -> Significance:
    """Per case: Mann–Whitney p, bootstrap 95 % CI of the median change, and the verdict."""
    return start_significance(base, cand, use_ratio, pool).result()


def start_significance(base: SampleLists, cand: SampleLists, use_ratio: np.ndarray,
                       pool: Executor | None = None) -> "PendingSignificance":
    """The significance of every case, started: blocks of BLOCK cases run on `pool` (inline without one);
    the blocks write disjoint rows of the result arrays. Collect it with .result(). A case with several runs on
    a side is judged with the runs as replicates (db.stats.hierarchical); one run a side, by its per-call samples."""
    out = PendingSignificance(len(base.offsets) - 1, base.counts, cand.counts, use_ratio)
    out.by_runs = out.enough & ((base.run_counts > 1) | (cand.run_counts > 1)) & hierarchical.no_empty_run(base) \
        & hierarchical.no_empty_run(cand)
    rngs = {}
    for sb, sc, ratio, rows in _groups(base.counts, cand.counts, use_ratio, out.enough & ~out.by_runs):
        draws = (_draws_for(sb, rngs, "b"), _draws_for(sc, rngs, "c"))  # seeded per size, shared by the blocks
        for start in range(0, len(rows), BLOCK):
            task = (out, base, cand, (sb, sc), ratio, rows[start:start + BLOCK], draws)
            out.futures.append(pool.submit(_block, *task)) if pool else _block(*task)
    if out.by_runs.any():
        tasks = []
        for shapes, ratio, rows in hierarchical.run_groups(base, cand, use_ratio, out.by_runs):
            tasks += [(_runs_block, (out, base, cand, shapes, ratio, rows[i:i + BLOCK]))
                      for i in range(0, len(rows), BLOCK)]
        for fn, args in tasks:
            out.futures.append(pool.submit(fn, *args)) if pool else fn(*args)
    return out


_RUN_DRAWS: dict[tuple, hierarchical.Draws] = {}  # per (run shape, side): seeded, reused by every comparison


def _run_draws(lengths: tuple[int, ...], side: int) -> hierarchical.Draws:
    key = (lengths, side)
    if key not in _RUN_DRAWS:  # a racing worker may build the same draws twice: same seed, same draws
        _RUN_DRAWS[key] = hierarchical.Draws(lengths, hierarchical.SEED + side)
    return _RUN_DRAWS[key]


def _runs_block(out: "PendingSignificance", base: SampleLists, cand: SampleLists,
                shapes: tuple[tuple[int, ...], tuple[int, ...]], ratio: bool, rows: np.ndarray) -> None:
    """One block of cases of one run shape: the t-test on its run medians and the hierarchical bootstrap CI."""
    xb, xc = (hierarchical.sorted_runs(lists.values, lists.offsets[rows], shape)
              for lists, shape in ((base, shapes[0]), (cand, shapes[1])))
    db_, dc = _run_draws(shapes[0], 0), _run_draws(shapes[1], 1)
    mb, mc = db_.run_medians(xb), dc.run_medians(xc)
    runs = np.ones(len(rows), dtype=np.int64)
    out.p[rows] = hierarchical.run_t_test(mb.ravel(), runs * mb.shape[1], mc.ravel(), runs * mc.shape[1],
                                          np.full(len(rows), ratio))
    change = np.divide if ratio else np.subtract
    with np.errstate(divide="ignore", invalid="ignore"):
        # The bootstrap's statistic is the mean of run medians; the case shows its pooled medians. With one
        # outlying run the two part, and the CI could miss the figure shown beside it: it keeps its width and is
        # moved onto the shown change (× for ratios, + for differences).
        shown = change(np.median(xc, axis=1), np.median(xb, axis=1))
        shift = change(shown, change(mc.mean(axis=1), mb.mean(axis=1)))
    for start in range(0, len(rows), CHUNK):
        part = slice(start, start + CHUNK)
        b, c = db_.statistic(xb[part]), dc.statistic(xc[part])
        with np.errstate(divide="ignore", invalid="ignore"):
            change(c, b, out=c)
            low, high = row_percentiles(c, (2.5, 97.5))
            move = np.multiply if ratio else np.add
            out.low[rows[part]], out.high[rows[part]] = move(low, shift[part]), move(high, shift[part])


class PendingSignificance:
    """Significance being computed: result arrays the blocks fill, and the blocks' futures."""

    def __init__(self, m: int, nb: np.ndarray, nc: np.ndarray, use_ratio: np.ndarray):
        self.p, self.low, self.high = (np.full(m, np.nan) for _ in range(3))
        self.enough = (nb >= MIN_SAMPLES) & (nc >= MIN_SAMPLES)
        self.by_runs = np.zeros(m, dtype=bool)
        self.use_ratio = use_ratio
        self.futures: list[Future] = []
        self._done: Significance | None = None

    def result(self) -> Significance:
        if self._done is None:
            self._done = self._collect()
        return self._done

    def _collect(self) -> Significance:
        for future in self.futures:
            future.result()  # a block's exception is raised here
        no_change = np.where(self.use_ratio, 1.0, 0.0)
        excludes = (self.low > no_change) | (self.high < no_change)
        codes = np.where(~self.enough, 0, np.where((self.p < ALPHA) & excludes, 1, 2))
        return Significance(self.p, self.low, self.high, _VERDICTS[codes], codes, self.by_runs)


def _block(out: PendingSignificance, base: SampleLists, cand: SampleLists, sizes: tuple[int, int], ratio: bool,
           rows: np.ndarray, draws: tuple) -> None:
    b, c = base.matrix(rows, sizes[0]), cand.matrix(rows, sizes[1])
    out.p[rows] = mwu_p_values(b, c)
    for start in range(0, len(rows), CHUNK):  # the bootstrap's (cases × draws) arrays, cache-sized
        part = slice(start, start + CHUNK)
        out.low[rows[part]], out.high[rows[part]] = _boot_ci(b[part], c[part], ratio, draws)


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
    # numpy's own single-threaded loop, not BLAS: multi-threaded OpenBLAS waits 10–20 ms per call for a worker
    # whenever the other cores are busy (a loaded server), and its spinning threads then take the cores from
    # db.views.compare's significance workers (matmul here: the 10⁷-row Compare query ~50 ms slower, ~130 ms more CPU)
    return np.einsum("fk,kd->fd", logs, np.ascontiguousarray(counts.T)) / k
