"""Contended worker processes out of a side's figures, vectorised over cases (pure numpy/pyarrow).

A process that ran while other processes took more than bundle.contention.THRESHOLD of the cores timed the
machine's load, not the build (a grouped_mm case: 47 µs in the quiet processes of a run, 14,644–44,104 µs in
its contended ones). So a side's figures — its pooled quartiles and the replicate figures its test adds up —
come from its clean processes while at least MIN_CLEAN_PROCESSES remain (bundle.contention.enough_clean, over
the side's processes of every run of the case); a run left without a clean process leaves the side. A side
without enough clean processes keeps every sample (there is nothing else to show) and is *contended*: its case
is unconfirmed (contended), never tested (db.stats.significance). Processes whose share is unknown count as
clean: the absence of a measurement is not evidence of contention.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bundle.contention import THRESHOLD, enough_clean
from db.stats.lists import SampleLists, offsets_of, run_lists
from db.stats.replicates import process_offsets, process_sizes

# a side's contention per case, as the side summaries keep it and a comparison reads it (CleanSide.columns)
COLUMNS = ("contended", "contended_processes", "timed_processes", "contention_low", "contention_high")


@dataclass
class CleanSide:
    """One side's samples with its contended processes left out where enough clean ones remain (`lists`, every
    case with its runs), each run's process sizes (`size_counts`, `sizes`: db.stats.replicates.process_sizes'
    layout) and per case what contention it met."""

    lists: SampleLists
    size_counts: np.ndarray
    sizes: np.ndarray
    contended: np.ndarray  # per case: too few clean processes (its figures are every process's)
    hot: np.ndarray  # per case: processes that ran contended
    timed: np.ndarray  # per case: processes in all
    low: np.ndarray  # per case: the smallest and largest share among its contended processes (NaN: none)
    high: np.ndarray

    def columns(self) -> dict[str, np.ndarray]:
        """Per case, COLUMNS."""
        return dict(zip(COLUMNS, (self.contended, self.hot, self.timed, self.low, self.high)))

    def take(self, rows: np.ndarray) -> "CleanSide":
        """The cases at `rows` (indices, in order), as a compact CleanSide."""
        lists = self.lists
        case_runs = np.diff(lists.runs)[rows]
        run_index = _gather(lists.runs[:-1][rows], case_runs)
        run_len = np.diff(lists.run_offsets)[run_index]
        values = lists.values[_gather(lists.run_offsets[:-1][run_index], run_len)]
        size_starts = offsets_of(self.size_counts)
        sizes = self.sizes[_gather(size_starts[:-1][run_index], self.size_counts[run_index])]
        runs, run_offsets = offsets_of(case_runs), offsets_of(run_len)
        return CleanSide(
            SampleLists(values, run_offsets[runs], runs, run_offsets),
            self.size_counts[run_index],
            sizes,
            *(a[rows] for a in (self.contended, self.hot, self.timed, self.low, self.high)),
        )


def _gather(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Indices starts[i] .. starts[i] + lengths[i] − 1, for each i in turn."""
    total = int(lengths.sum())
    return np.repeat(starts - offsets_of(lengths)[:-1], lengths) + np.arange(total, dtype=np.int64)


def clean_side(lists: SampleLists, processes, contention) -> CleanSide:
    """Per case of `lists` (read from a list<list<double>> column: each case's runs), from each run's process
    sizes and contention shares (list<list<int>> and list<list<double>> columns aligned with the cases)."""
    values, runs, run_offsets = lists.values, lists.runs, lists.run_offsets
    if runs is None:  # every case one run
        runs, run_offsets = np.arange(len(lists.offsets), dtype=np.int64), lists.offsets
    size_counts, sizes = process_sizes(processes)
    run_proc, proc_offsets = process_offsets(run_offsets, size_counts, sizes)
    per_run = np.diff(run_proc)
    share_counts, flat = run_lists(contention)
    shares = pc.fill_null(flat.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False)  # null: not measured
    n_cases, n_proc = len(runs) - 1, int(run_proc[-1])
    share = np.full(n_proc, np.nan)
    aligned = share_counts == per_run  # a run whose shares do not match its processes: not measured
    if aligned.any():
        share[np.repeat(aligned, per_run)] = shares[np.repeat(aligned, share_counts)]
    with np.errstate(invalid="ignore"):
        hot_proc = share > THRESHOLD
    case_of_run = np.repeat(np.arange(n_cases), np.diff(runs))
    timed = np.bincount(case_of_run, weights=per_run, minlength=n_cases).astype(np.int64)
    run_of_proc = np.repeat(np.arange(len(per_run)), per_run)
    case_of_proc = case_of_run[run_of_proc]
    hot = np.bincount(case_of_proc, weights=hot_proc, minlength=n_cases).astype(np.int64)
    contended = ~enough_clean(timed - hot, timed)
    low, high = np.full(n_cases, np.nan), np.full(n_cases, np.nan)
    if hot_proc.any():
        where = case_of_proc[hot_proc]
        np.fmin.at(low, where, share[hot_proc])
        np.fmax.at(high, where, share[hot_proc])
    drop = hot_proc & ~contended[case_of_proc]
    if not drop.any():
        return CleanSide(
            SampleLists(values, run_offsets[runs], runs, run_offsets),
            *_sizes_of(per_run, proc_offsets),
            contended,
            hot,
            timed,
            low,
            high,
        )
    keep = ~drop
    proc_len = np.diff(proc_offsets)
    kept_values = values[np.repeat(keep, proc_len)] if len(values) else values
    kept_per_run = np.bincount(run_of_proc, weights=keep, minlength=len(per_run)).astype(np.int64)
    live = kept_per_run > 0
    run_len = np.bincount(run_of_proc, weights=proc_len * keep, minlength=len(per_run)).astype(np.int64)[live]
    new_runs = offsets_of(np.bincount(case_of_run[live], minlength=n_cases))
    new_run_offsets = offsets_of(run_len)
    return CleanSide(
        SampleLists(kept_values, new_run_offsets[new_runs], new_runs, new_run_offsets),
        kept_per_run[live],
        proc_len[keep],
        contended,
        hot,
        timed,
        low,
        high,
    )


def _sizes_of(per_run: np.ndarray, proc_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's process sizes as process_offsets resolved them (a run without sizes is one process)."""
    return per_run.astype(np.int64), np.diff(proc_offsets).astype(np.int64)
