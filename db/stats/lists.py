"""Quantiles of many variable-length lists at once (Arrow layout: list i is values[offsets[i]:offsets[i+1]]).

Lists of one length are taken together as one sorted 2-D array, one length at a time: a case's pooled samples
(db.stats.significance) and each worker process's samples (db.stats.replicates) both go through here.
SampleLists holds each case's samples in that layout, run by run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bundle.stats import QUARTILES  # the quartiles' one definition: numpy here, SQL from the helpers below

__all__ = [
    "QUARTILES",
    "exact_sum_sql",
    "SampleLists",
    "list_quantile_sql",
    "list_quantiles",
    "quantile_sql",
    "quartiles_sql",
    "sorted_quantiles",
]


def quantile_sql(expr: str, q: float) -> str:
    """DuckDB's q-quantile of `expr`: quantile_cont, the linear rule list_quantiles follows (same floats)."""
    return f"quantile_cont({expr}, {q!r})"


def list_quantile_sql(expr: str, q: float | list[float]) -> str:
    """DuckDB's q-quantile (or a list of them, in q's order) of the list `expr`: the same rule per list."""
    return f"list_aggregate({expr}, 'quantile_cont', {q!r})"


def exact_sum_sql(expr: str) -> str:
    """The sum of `expr` over a group, added in one fixed order (sorted): DuckDB's sum() adds in the order its
    threads met the rows, so two stores built from the same uploads differed in the last bits (A/A noise)."""
    return f"list_sum(list_sort(list({expr})))"


def quartiles_sql(expr: str) -> str:
    """QUARTILES of `expr` as SQL select items named median, p25, p75."""
    return ", ".join(f"{quantile_sql(expr, q)} AS {name}" for name, q in QUARTILES.items())


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


@dataclass
class SampleLists:
    """Variable-length sample lists in Arrow layout: case i's samples are values[offsets[i]:offsets[i+1]]. With
    `runs`, case i's samples come from runs runs[i]..runs[i+1]-1, run j's being values[run_offsets[j]:…[j+1]]
    (a case pooled over several runs: db.stats.replicates uses the runs as replicates)."""

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


def _offsets(lengths: pa.Array) -> np.ndarray:
    return offsets_of(lengths.to_numpy(zero_copy_only=False))


def offsets_of(lengths) -> np.ndarray:
    """Offsets of consecutive lists of these lengths: [0, l0, l0 + l1, …]."""
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


def run_lists(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """A list<list<…>> column (per case, per run: a list) as (per run: its list's length, the values flat).
    flatten() skips null entries as it would empty lists (filling nulls with [] first cost ~0.1 s per 50k cases);
    a null run's length is null: 0 values."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    inner = arr.flatten()
    counts = pc.fill_null(pc.list_value_length(inner), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return counts, inner.flatten()
