"""What a comparison needs of each side, per case: its counts and detail columns, its pooled quartiles and its
replicate figures (db.stats.replicates) — one SideStats record, computed by one function
(db.stats.significance.side_stats) and read two ways. A machine- or chip-scope
Compare of two single builds reads them from the side summaries kept after each upload (db.store.derived.side_cases,
db.query.compare.side_reads): two rows per case, nothing grouped. Every other question (pooled builds, tag and run
selectors, a build whose summaries lag its runs) is answered by the pivot of the selected results (db.query.compare.pivot) and the statistics of its samples, computed
on workers while the caller builds its frames. The raw samples of one case, for its distribution chart, are read
when asked for (`case_samples`)."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from bundle.metrics import METRICS, RATIO_METRICS, Better
from db.query.compare.pairs import read_pairs
from db.query.compare.pivot import DETAIL, KEY, SIDES, WARNINGS, compare_sql, pivot_sql, scope_sql
from db.query.compare.side_reads import CONTENTION, FIGURES, read_sides, readable
from db.query.selectors import Selector
from db.stats.contention import clean_side
from db.stats.lists import QUARTILES
from db.stats.replicates import SideReplicates
from db.stats.significance import Quartiles, SampleLists, SideStats, side_stats

_LISTS = [p + name for _, p in SIDES for name in ("samples", "processes", "contention")]


@dataclass(frozen=True)
class MetricFacts:
    """Per case, what its metric says: the comparison (ratio or difference) and its direction. Looked up once
    per metric (the metric column factorized), not once per case."""

    codes: np.ndarray
    names: pd.Index
    use_ratio: np.ndarray
    lower: np.ndarray  # lower is better

    @classmethod
    def of(cls, metric: pa.ChunkedArray, rows: np.ndarray) -> "MetricFacts":
        """For the cases where `rows` (a mask) is true."""
        encoded = pc.dictionary_encode(metric).combine_chunks()
        codes, names = encoded.indices.to_numpy()[rows], pd.Index(encoded.dictionary.to_pylist())
        known = [METRICS[n] for n in names]
        use_ratio = np.array([m.name in RATIO_METRICS for m in known], dtype=bool)[codes]
        lower = np.array([m.better is Better.lower for m in known], dtype=bool)[codes]
        return cls(codes, names, use_ratio, lower)

    @cached_property
    def units(self) -> pa.Array:
        """Each case's canonical unit (made once: three columns read it)."""
        return pa.array([METRICS[n].unit for n in self.names], pa.string()).take(pa.array(self.codes))


@dataclass
class SideInputs:
    table: pa.Table  # KEY, then per side pooled, machines, passed, results, detail and warnings: in key order
    paired: np.ndarray  # both sides have ok samples
    facts: MetricFacts  # of the paired cases
    sides: tuple[Future, Future]  # each side's SideStats


def side_inputs(engine: Engine, query, baseline: Selector, candidate: Selector, pool: Executor) -> SideInputs:
    """`query`: the CompareQuery (scope, filters, pool)."""
    filters = {name: list(values) for name, values in query.filters}
    if all(readable(s, query.scope, query.pool) for s in (baseline, candidate)):
        table = read_sides(engine, baseline, candidate, query.scope, filters, pool)
        if table is not None:
            return _from_summaries(table)
    return _from_samples(read_pairs(engine, compare_sql(baseline, candidate, query.scope, filters), pool), pool)


def _from_samples(table: pa.Table, pool: Executor) -> SideInputs:
    # unsorted: the quartiles and each side's figures sort their own rows (a sort of every list up front cost more)
    lists = [SampleLists.from_arrow(table[p + "samples"]) for _, p in SIDES]
    paired = (lists[0].counts > 0) & (lists[1].counts > 0)  # a side keeps samples whatever its contention
    facts = MetricFacts.of(table["metric"], paired)
    rows = np.flatnonzero(paired)
    # numpy on workers (it releases the GIL) while the caller builds its frames
    stats = tuple(
        pool.submit(side_stats, side, table[p + "processes"], table[p + "contention"], facts.use_ratio, rows)
        for side, (_, p) in zip(lists, SIDES)
    )
    return SideInputs(table.drop_columns(_LISTS), paired, facts, stats)


def _from_summaries(table: pa.Table) -> SideInputs:
    counts = tuple(table[p + "n"].to_numpy() for _, p in SIDES)
    paired = (counts[0] > 0) & (counts[1] > 0)
    facts = MetricFacts.of(table["metric"], paired)
    both = table.select([p + name for _, p in SIDES for name in FIGURES]).filter(pa.array(paired))  # no nulls left
    stats = tuple(
        _done(
            SideStats(
                table[p + "n"].to_numpy(zero_copy_only=False),
                Quartiles(**{q: table[p + q].to_numpy(zero_copy_only=False) for q in QUARTILES}),
                SideReplicates(**{name: both[p + name].to_numpy(zero_copy_only=False) for name in FIGURES}),
                {name: _filled(table[p + name]) for name in CONTENTION},
                None,
            )
        )
        for _, p in SIDES
    )
    # the pivot's columns, in its order
    scalars = table.select(
        KEY
        + [p + name for _, p in SIDES for name in ("pooled", "machines", "passed", "tolerance", "rounding", "results")]
        + DETAIL
        + WARNINGS
    )
    return SideInputs(scalars, paired, facts, stats)


def _filled(column: pa.ChunkedArray) -> np.ndarray:
    """A contention column as numpy: a side without the case (null) not contended, no process, no share."""
    if pa.types.is_boolean(column.type):
        return pc.fill_null(column, False).to_numpy(zero_copy_only=False)
    if pa.types.is_integer(column.type):
        return pc.fill_null(column, 0).to_numpy(zero_copy_only=False)
    return column.to_numpy(zero_copy_only=False).astype(float)  # null: NaN


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def case_sample_reader(engine: Engine, query) -> Callable[[pd.Series], tuple[np.ndarray, np.ndarray]]:
    """Reads one case's pooled ok samples of each side (a cases row: its key columns), as Compare pooled them."""

    def read(case: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        baseline, candidate = query.selectors()
        where = f" AND {scope_sql(query.scope)} = ?" + "".join(
            f" AND {'ru.device_type' if name == 'device' else 'r.' + name} = ?" for name in KEY[1:]
        )
        sql = pivot_sql(
            [baseline.run_ids_sql(), candidate.run_ids_sql()],
            query.scope,
            scope_sql(query.scope),
            where,
            [str(case[name]) for name in KEY],
        )
        table = read_pairs(engine, sql)
        if not table.num_rows:
            return np.array([]), np.array([])
        return tuple(
            clean_side(
                SampleLists.from_arrow(table[p + "samples"]), table[p + "processes"], table[p + "contention"]
            ).lists.values
            for _, p in SIDES
        )

    return read
