"""Run → process → call: a case's change tested on its replicates, vectorised over cases (pure numpy/scipy).

Where timing noise lives decides what a replicate is. Calls inside one process share its state (allocator,
address-space layout, CPU placement, clocks), so their spread understates what a re-run shows: on an H200 the
launch-bound ops moved ±50 % between processes while each run's own CI said ±2 %. So the collector times each
case in several worker processes (bundle `processes`), and this module reduces each process to one figure — the
log of its median for ratio metrics, its median for difference metrics — and tests on those:

- within a run the processes are replicates, taken robustly: a run's figure is the trimmed mean of its process
  figures (one cut from each end of a run of 5–19 processes, ⌊P/10⌋ from a larger one: trimmed), its spread their
  winsorized sum of squares, as Yuen's test takes them — so one wild process (a run's one process at 12,658 µs
  beside nine at 50–70 µs) cannot move a case's figure or make its change significant; the pooled within-run
  variance s²_p has df_p = Σ (h_r − 1), h_r the processes a run's trimmed mean keeps (a run of fewer than five
  is not trimmed). Why one and not Yuen's usual 20 %: this box's bf16 cases time in two modes per process
  (~56 and ~88 µs, 2–4 of 10 processes in the slow one), where a 20 % trim's variance is 3× the mean's and lost
  6 of 108 planted 2× slowdowns that a 10 % trim finds (benchmarks/false_alarms/);
- above them, runs: a run's figure (the mean of its processes) varies by τ² more than its processes explain,
  estimated from the review's own runs (between-run spread, df Σ (R − 1)) and from the store's A/A pairs of the
  case or its group (each pair's log ratio x has E[x²] = 2·(run variance): df = pairs), minus the process part;
- the change d is the difference of the two sides' means (each side: the mean over its runs of each run's
  trimmed mean: Kalibera & Jones's mean of means) and
  Var(d) = s²_p·(Σ_b 1/h_r / R_b² + Σ_c 1/h_r / R_c²) + τ²·(1/R_b + 1/R_c), with Satterthwaite's degrees of
  freedom; t = d / √Var(d), two-sided p from Student's t; the 95 % CI is d ± t_0.975·√Var(d). (The tables show
  the ratio of pooled medians; testing that instead, with this variance, raised simulated A/A false alarms from
  5 % to 17 %: a median of clustered samples varies more than the mean of the clusters.)
A case with neither processes, several runs nor A/A data has nothing to test on: `testable` is False and a review
calls it unconfirmed (never a regression). Nor does a case whose variance comes out exactly 0 (identical process
figures, identical A/A figures of a one-figure metric): a spread of nothing is an estimate from too little, not a
certainty, so it gives no p = 0 and no zero-width CI (`zero_spread`). docs/regressions.md states the model and
what it assumes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from scipy.special import stdtr, stdtrit

from db.stats.lists import list_quantiles, offsets_of, run_lists
from db.stats.noise import run_sum_sq

MIN_TRIMMED = 5  # a run of fewer processes is not trimmed


def trimmed_count(processes: np.ndarray) -> np.ndarray:
    """How many process figures a run's trimmed mean cuts from each end (see the module note)."""
    return np.where(processes >= MIN_TRIMMED, np.maximum(1, processes // 10), 0).astype(np.int64)


@dataclass
class SideReplicates:
    """Per case, one side: runs, Σ 1/h_r, Σ h_r (the processes each run's trimmed mean keeps), and the sums of
    squares (within runs, winsorized; between runs)."""

    runs: np.ndarray
    inv_processes: np.ndarray
    processes: np.ndarray
    ss_within: np.ndarray
    df_within: np.ndarray
    ss_between: np.ndarray
    valid: np.ndarray  # every process figure finite (a log of a 0 median is not)
    mean: np.ndarray  # mean over runs of each run's mean process figure


def process_sizes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A list<list<int>> column (per case, per run: process sizes) as (per run: its sizes count, flat sizes)."""
    counts, sizes = run_lists(column)
    return counts, sizes.to_numpy(zero_copy_only=False).astype(np.int64)


def process_offsets(
    run_offsets: np.ndarray, size_counts: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(per run: offsets into the processes, per process: offsets into the values). A run without sizes (schema
    1, a single figure) or whose sizes do not add up to its samples is one process."""
    run_len = np.diff(run_offsets)
    starts = offsets_of(size_counts)
    sums = np.add.reduceat(np.append(sizes, 0), np.minimum(starts[:-1], len(sizes))) * (size_counts > 0)
    use = (size_counts > 0) & (sums == run_len)
    per_run = np.where(use, size_counts, 1)
    owner = np.repeat(np.arange(len(run_len)), per_run)
    flat = np.empty(len(owner), dtype=np.int64)
    mine = use[owner]
    keep = np.repeat(use, size_counts)  # the sizes of runs whose sizes are used, in order
    flat[mine] = sizes[keep]
    flat[~mine] = run_len[owner[~mine]]
    return offsets_of(per_run), run_offsets[0] + offsets_of(flat)


def _segment_sum(x: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of each segment x[offsets[i]:offsets[i+1]] (0 for an empty one), each added up on its own: a
    difference of running sums carries the rounding of everything before the segment, so identical samples
    on two sides gave a change of 1e-12 with no spread — p = 0, a "significant" change of nothing."""
    starts, ends = offsets[:-1], offsets[1:]
    out = np.zeros(len(starts))
    full = ends > starts
    if full.any():  # the segments are contiguous: each non-empty one ends where the next non-empty one starts
        out[full] = np.add.reduceat(np.asarray(x, dtype=float)[: ends[-1]], starts[full])
    return out


def side_replicates(
    values: np.ndarray,
    case_runs: np.ndarray,
    run_offsets: np.ndarray,
    size_counts: np.ndarray,
    sizes: np.ndarray,
    use_log: np.ndarray,
) -> SideReplicates:
    """Per case from its runs' samples (case i's runs are case_runs[i]..case_runs[i+1]-1, run j's samples
    values[run_offsets[j]:run_offsets[j+1]]) and each run's process sizes."""
    run_proc, proc_offsets = process_offsets(run_offsets, size_counts, sizes)
    (medians,) = list_quantiles(values, proc_offsets, (0.5,))
    runs_of_case = np.diff(case_runs)
    procs_per_run = np.diff(run_proc)
    log_proc = np.repeat(np.repeat(use_log, runs_of_case), procs_per_run)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(log_proc, np.log(np.where(medians > 0, medians, np.nan)), medians)
    bad = ~np.isfinite(y)
    y = np.where(bad, 0.0, y)
    mean_r, ss_r, h_r = trimmed(y, run_proc)
    p_r = h_r.astype(float)
    r = runs_of_case.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_case = _segment_sum(mean_r, case_runs) / r
    ss_between = _segment_sum((mean_r - np.repeat(mean_case, runs_of_case)) ** 2, case_runs)
    valid = _segment_sum(_segment_sum(bad.astype(float), run_proc), case_runs) == 0
    return SideReplicates(
        runs_of_case,
        _segment_sum(1.0 / np.maximum(p_r, 1), case_runs),
        _segment_sum(p_r, case_runs),
        _segment_sum(ss_r, case_runs),
        _segment_sum(p_r - 1, case_runs),
        ss_between,
        valid,
        mean_case,
    )


def trimmed(y: np.ndarray, run_proc: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per run (its figures y[run_proc[j]:run_proc[j+1]]): the trimmed mean (trimmed_count), the winsorized sum of squares
    about the winsorized mean, and h, the figures the trimmed mean keeps (Yuen: Var = SS_w / (h (h − 1))). A run
    of fewer than five figures trims nothing: its plain mean and sum of squares."""
    per_run = np.diff(run_proc)
    g = trimmed_count(per_run)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = _segment_sum(y, run_proc) / per_run
    ss = _segment_sum((y - np.repeat(mean, per_run)) ** 2, run_proc)
    for n in np.unique(per_run[g > 0]):  # runs of one size at once, as one sorted 2-D array
        rows = np.flatnonzero(per_run == n)
        cut = int(trimmed_count(np.array([n]))[0])
        x = np.sort(y[run_proc[rows][:, None] + np.arange(n)], axis=1)
        mean[rows] = x[:, cut : n - cut].mean(axis=1)
        w = np.clip(x, x[:, cut : cut + 1], x[:, n - 1 - cut : n - cut])
        ss[rows] = ((w - w.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return mean, ss, per_run - 2 * g


@dataclass
class ChangeTest:
    """Per case: the change d (log ratio, or difference), its standard error and degrees of freedom, the
    two-sided p, the 95 % CI of d, whether it could be tested at all, and where its variance came from."""

    d: np.ndarray
    se: np.ndarray
    df: np.ndarray
    p_value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    testable: np.ndarray
    processes: np.ndarray  # the process level had replicates (df_p > 0)
    run_level: np.ndarray  # runs or A/A pairs informed the run-level variance
    zero_spread: np.ndarray  # it had replicates, but their variance came out exactly 0: untestable


def change_test(b: SideReplicates, c: SideReplicates, aa_pairs: np.ndarray, aa_sum_sq: np.ndarray) -> ChangeTest:
    """The test of each case's change d = c.mean − b.mean from both sides' replicates and its A/A figures (pairs,
    Σ log ratio²; 0 where the store has none)."""
    d = c.mean - b.mean
    aa_pairs = np.nan_to_num(np.asarray(aa_pairs, float))
    aa_ss = run_sum_sq(np.nan_to_num(np.asarray(aa_sum_sq, float)))  # E[x²] = 2·(run variance)
    df_p = b.df_within + c.df_within
    df_t = (b.runs - 1) + (c.runs - 1) + aa_pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        s2_p = np.where(df_p > 0, (b.ss_within + c.ss_within) / df_p, 0.0)
        mean_p = (b.processes + c.processes) / (b.runs + c.runs)
        v_run = np.where(df_t > 0, (b.ss_between + c.ss_between + aa_ss) / df_t, 0.0)
        tau2 = np.maximum(0.0, v_run - s2_p / mean_p)
        v_p = s2_p * (b.inv_processes / b.runs**2 + c.inv_processes / c.runs**2)
        v_t = tau2 * (1.0 / b.runs + 1.0 / c.runs)
        v = v_p + v_t
        parts = np.where(v_p > 0, v_p**2 / df_p, 0.0) + np.where(v_t > 0, v_t**2 / df_t, 0.0)
        df = np.where(parts > 0, v**2 / parts, np.maximum(df_p, df_t))
        se = np.sqrt(v)
        t = np.where(se > 0, d / se, np.where(d == 0, 0.0, np.inf))
        p = np.where(se > 0, 2.0 * stdtr(df, -np.abs(t)), np.where(d == 0, 1.0, 0.0))
        half = np.where(se > 0, t_quantile(df, 0.975) * se, 0.0)
    replicated = ((df_p > 0) | (df_t > 0)) & b.valid & c.valid & np.isfinite(d)
    zero = replicated & ~(v > 0)
    testable = replicated & ~zero
    nan = np.full(len(d), np.nan)
    return ChangeTest(
        d,
        np.where(testable, se, nan),
        np.where(testable, df, nan),
        np.where(testable, p, nan),
        np.where(testable, d - half, nan),
        np.where(testable, d + half, nan),
        testable,
        df_p > 0,
        df_t > 0,
        zero,
    )


_FEW = 8  # t_quantile: distinct df values found by comparison before it sorts the rest


def t_quantile(df: np.ndarray, q: float) -> np.ndarray:
    """Student's t q-quantile for each df, inverted once per distinct df: the same floats as stdtrit(df, q), whose
    iterative inversion is most of a 50k-case test's time, while cases share few df values (one process per
    run gives integer df: runs − 1 plus A/A pairs)."""
    shape, df = np.shape(df), np.asarray(df, dtype=float).ravel()
    out, left = np.full(len(df), np.nan), ~np.isnan(df)  # NaN df (untestable) stays NaN
    for _ in range(_FEW):  # a few distinct values: one comparison each, not a sort of every df
        if not left.any():
            return out.reshape(shape)
        same = df == df[np.argmax(left)]
        out[same] = stdtrit(df[np.argmax(left)], q)
        left &= ~same
    distinct, where = np.unique(df[left], return_inverse=True)  # many (fractional Satterthwaite df): one sort
    out[left] = stdtrit(distinct, q)[where.ravel()]
    return out.reshape(shape)


def holm(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down over the finite p-values: which are rejected with family-wise error ≤ alpha (the i-th
    smallest is compared with alpha / (m − i + 1), stopping at the first that fails)."""
    p = np.asarray(p_values, float)
    finite = np.isfinite(p)
    m = int(finite.sum())
    out = np.zeros(len(p), dtype=bool)
    if not m:
        return out
    # only a p ≤ alpha can pass (every bound alpha / (m − i) is at most alpha), and the first p above alpha fails
    # if nothing before it did; a p ≤ alpha / m passes wherever it ranks (every bound is at least that), and
    # those rank first: the step is the sort of the p between the two (the stable sort keeps ties in case order)
    low = np.flatnonzero(finite & (p <= alpha))
    sure = p[low] <= alpha / m
    out[low[sure]] = True
    rest = low[~sure]
    order = rest[np.argsort(p[rest], kind="stable")]
    passes = p[order] <= alpha / (m - int(sure.sum()) - np.arange(len(order)))
    first_fail = np.argmin(passes) if not passes.all() else len(order)
    out[order[:first_fail]] = True
    return out


def detectable(se: np.ndarray, df: np.ndarray, alpha: float, power: float = 0.8) -> np.ndarray:
    """The smallest |d| a test with this standard error detects with the given power at two-sided level alpha:
    (t_{1−alpha/2} + t_power)·se (the usual normal-approximation bound, with t quantiles)."""
    with np.errstate(invalid="ignore"):
        return (t_quantile(df, 1.0 - alpha / 2.0) + t_quantile(df, power)) * se
