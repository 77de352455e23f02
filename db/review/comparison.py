"""Compare two sides (baseline → candidate) case by case: medians in their units, spread, the comparison the
metric calls for, significance from the raw samples, per-family geometric means, and every case that could not
be compared listed with why. Every review (Compare, Regressions, the summary, the CLI gate, claims, Matrix) starts
from `compare`, cached per store data version."""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Engine

from bundle.metrics import METRICS, RULES, SAMPLED, RuleKind
from db.errors import Problem, StoreError
from db.query.compare.pivot import FILTERS, KEY, SCOPES
from db.query.compare.pivot import SIDES as _SIDES
from db.query.compare.unmatched import unmatched_frame
from db.query.libraries import differing_note, recorded_libraries
from db.query.noise import read_model
from db.query.selectors import Selector, check_builds, parse_pool, parse_selector, pooled_note, side_runs
from db.review.cache import Memo, clear_all
from db.review.case_figures import CaseChange, add_significance, case_change, case_frame, oriented_cis
from db.review.cases.columns import (
    ORIENTED_RATIO,
)
from db.review.families import FAMILY_INPUT, family_frame
from db.review.noise import case_noise
from db.review.rules import rule_kinds
from db.review.side_inputs import MetricFacts, case_sample_reader, side_inputs
from db.stats.lists import QUARTILES
from db.stats.significance import (
    SIGNIFICANT,
    SampleLists,
    SideStats,
    Significance,
    significance,
)

# what the case table reads of a paired case's pivot columns (its counts, quartiles and change come beside them)
_PAIRED = KEY + [
    p + name
    for _, p in _SIDES
    for name in ("pooled", "machines", "passed", "tolerance", "rounding", "other", "warnings")
]
_COMPARISONS = Memo()
# the detail read, the selector checks, each side's quartiles and replicate figures and the families of every
# comparison in this process. One core is left to the thread building the frames: on 2 cores one worker made the
# cold 10⁷-row Compare ~300 ms against 320–350 ms with two (GIL and DuckDB contention; benchmarks/dashboard.py)
WORKERS = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="compare")


@dataclass(frozen=True)
class CompareQuery:
    baseline: str
    candidate: str
    scope: str = "machine"
    filters: tuple[tuple[str, tuple[str, ...]], ...] = ()  # ((name, values), …) hashable for caches
    pool: bool = False  # a side may span several builds (version + git hash); the notes then name them
    # the selectors from_params parsed (the texts above are their canonical texts): not parsed a second time
    parsed: tuple[Selector, Selector] | None = field(default=None, compare=False, hash=False, repr=False)

    @classmethod
    def from_params(cls, params: Mapping[str, str | None]) -> "CompareQuery":
        """From query parameters; bad input is a 400 naming the parameter."""
        base, cand = (
            parse_selector(params.get("baseline"), "baseline"),
            parse_selector(params.get("candidate"), "candidate"),
        )
        scope = (params.get("scope") or "machine").strip()
        if scope not in SCOPES:
            raise StoreError(
                400,
                f"scope: must be machine or chip (got {scope[:40]!r})",
                [Problem("scope", "must be one of machine, chip")],
            )
        chosen = tuple((n, _values(params.get(n))) for n in FILTERS if _values(params.get(n)))
        unknown = [m for m in dict(chosen).get("metric", ()) if m not in METRICS]
        if unknown:
            raise StoreError(
                400,
                f"metric: unknown metric {unknown[0][:60]!r}",
                [Problem("metric", f"must be one of {', '.join(METRICS)}")],
            )
        return cls(base.text, cand.text, scope, chosen, parse_pool(params.get("pool")), (base, cand))

    def selectors(self) -> tuple[Selector, Selector]:
        if self.parsed is not None:
            return self.parsed
        return parse_selector(self.baseline, "baseline"), parse_selector(self.candidate, "candidate")


def _values(text: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (text or "").split(",") if v.strip())


SAME_RUNS, SAME_BUILD = "same runs", "same build"


@dataclass
class ComparisonResult:
    query: CompareQuery
    cases: pd.DataFrame  # one row per compared case
    families: pd.DataFrame  # geomean per (scope, device, workload, metric, dtype, compile)
    unmatched: pd.DataFrame  # cases on one side only or without ok figures on a side, with the reason
    notes: list[str] = field(default_factory=list)
    samples: tuple[SampleLists, SampleLists] | None = None  # pooled ok samples of each case row, both sides
    sample_reader: Callable[[pd.Series], tuple[np.ndarray, np.ndarray]] | None = None  # where samples were not read
    same: str = ""  # SAME_RUNS when both sides select the same runs, SAME_BUILD when runs of one build; else ""

    def case_samples(self, row: int) -> pd.DataFrame:
        """The raw samples of cases row `row`, both sides, for the sample-distribution chart."""
        case = self.cases.iloc[row]
        if self.samples:
            found = [lists.values[lists.offsets[row] : lists.offsets[row + 1]] for lists in self.samples]
        else:
            found = self.sample_reader(case) if self.sample_reader else []
        parts = [
            pd.DataFrame({"side": side, "sample": np.sort(values), "unit": case.unit})  # pooled order varies
            for side, values in zip(("baseline", "candidate"), found)
        ]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["side", "sample", "unit"])


def compare(engine: Engine, query: CompareQuery) -> ComparisonResult:
    """The comparison, cached per store data version (db.review.cache). Treat the result as read-only."""
    return _COMPARISONS.get(engine, query, lambda: compute_compare(engine, query))


def clear_cache() -> None:
    """Forget every cached comparison and judged review (benchmarks measure the uncached work with it)."""
    clear_all()


def compute_compare(engine: Engine, query: CompareQuery) -> ComparisonResult:
    """The comparison itself, uncached: selectors checked, each side's figures per case (the side summaries, or
    the pivot of the samples: db.review.side_inputs), the A/A lookup, the tests, geomeans, unmatched.

    Each case's change is tested on its replicates (worker processes, runs, the store's A/A pairs of the case or
    its group: db.stats.replicates), with Holm's step over the cases judged by significance (db.stats.significance).
    """
    base, cand = query.selectors()
    # the worker reads the A/A tables, then the candidate side (side_inputs): the A/A lookup waits for the pairing
    model = WORKERS.submit(read_model, engine, query.scope)
    inputs = side_inputs(engine, query, base, cand, WORKERS)
    paired, facts = inputs.paired, inputs.facts
    keep = pa.array(paired)
    # the A/A lookup (each case's pairs, Σ log ratio², and which) reads the key columns alone: a worker's job
    keys = inputs.table.select(KEY).filter(keep)
    noise = WORKERS.submit(lambda: case_noise(model.result(), keys))
    # the paired and the unpaired rows split in Arrow, each side's counts and quartiles added there (a pandas mask
    # over ~40 columns, strings among them, and column inserts cost more)
    both = inputs.table.select(_PAIRED).filter(keep)
    stats = [side.result() for side in inputs.sides]
    frame, rest = (
        _with_stats(part, rows, stats).to_pandas()
        for part, rows in ((both, paired), (inputs.table.filter(pc.invert(keep)), ~paired))
    )
    change = case_change(frame, facts)
    # the families' geomeans and bootstrap CIs on a worker as soon as the changes are known, beside the noise
    # lookup, the case table and the tests; they wait for the verdicts only at the end
    tests: Future = Future()
    families = WORKERS.submit(
        family_frame,
        _family_input(frame, change),
        query,
        lambda: tests.result().verdict == SIGNIFICANT,
        lambda: oriented_cis(tests.result(), facts),
    )
    try:
        cases, sig = _tested_cases(frame, facts, query, change, stats, noise)
    except BaseException as exc:
        tests.set_exception(exc)  # the worker waiting for the verdicts stops too
        raise
    tests.set_result(sig)
    unmatched = unmatched_frame(rest)
    add_significance(cases, sig, facts)
    # small reads made here, while the worker finishes the families: the worker is the longer path
    notes, same = _side_notes(engine, query, (base, cand), cases)
    samples = None if stats[0].samples is None else (stats[0].samples, stats[1].samples)
    return ComparisonResult(
        query, cases, families.result(), unmatched, notes, samples, case_sample_reader(engine, query), same
    )


def _family_input(frame: pd.DataFrame, change: CaseChange) -> pd.DataFrame:
    """What the families' geomeans read of the paired cases: their keys and figures, and their changes."""
    family_input = pd.DataFrame(
        {
            **{name: frame[name] for name in FAMILY_INPUT[:-2]},
            **{name: change.columns[name] for name in FAMILY_INPUT[-2:]},
        }
    )
    # a contended case's ratio is the machine's load: no family geomean takes it (family_frame skips a NaN ratio)
    family_input[ORIENTED_RATIO] = family_input[ORIENTED_RATIO].where(
        ~(frame.b_contended | frame.c_contended).to_numpy(dtype=bool)
    )
    return family_input


def _tested_cases(
    frame: pd.DataFrame,
    facts: MetricFacts,
    query: CompareQuery,
    change: CaseChange,
    stats: list[SideStats],
    noise: Future,
) -> tuple[pd.DataFrame, Significance]:
    """The case table and each case's test on its replicates (`noise`: the A/A lookup's future)."""
    cases = case_frame(frame, facts, query.scope == "chip", change)
    # a derived figure beside its timing is not tested again; the cases are in key order
    tested = rule_kinds(cases, RULES, key_ordered=True) == RuleKind.significant.value
    shown = np.where(facts.use_ratio, change.columns["ratio"], change.columns["difference"])
    noise = noise.result()
    cases["noise"] = noise.noise
    sig = significance(
        (stats[0].figures, stats[1].figures),
        shown,
        facts.use_ratio,
        tested,
        noise.pairs.to_numpy(),
        noise.sum_sq.to_numpy(),
        contended=cases.contended.to_numpy(),
        sampled=cases.metric.isin(SAMPLED).to_numpy(dtype=bool),
    )
    return cases, sig


def _side_notes(
    engine: Engine, query: CompareQuery, selectors: tuple[Selector, Selector], cases: pd.DataFrame
) -> tuple[list[str], str]:
    """The comparison's notes and whether its sides are the same runs or one build (SAME_RUNS, SAME_BUILD, "").
    A selector without runs is a 404 naming it; one spanning builds a 400, unless pooled on purpose."""
    found = side_runs(engine, list(selectors))
    pooled = [
        pooled_note(side, selector, check_builds(runs.builds, selector, side, query.pool))
        for selector, side, runs in zip(selectors, ("baseline", "candidate"), found)
    ]
    libraries = differing_note(*(recorded_libraries(runs.libraries) for runs in found))
    notes = _notes(query, cases, libraries) + [n for n in pooled if n]
    same = SAME_RUNS if found[0].same_runs(found[1]) else SAME_BUILD if found[0].same_build(found[1]) else ""
    if same == SAME_BUILD:
        notes.append(
            f"Both sides are runs of one build ({found[0].builds.label.iloc[0]}): an A/A review — whatever "
            "it finds is run-to-run noise, not a change of build."
        )
    return notes, same


def _with_stats(table: pa.Table, rows: np.ndarray, stats: list[SideStats]) -> pa.Table:
    """`table` (the rows where `rows` is true) with each side's n, median, p25, p75 and contention appended (n
    counts the samples the figures are of: its clean processes', db.stats.contention)."""
    for (_, prefix), side in zip(_SIDES, stats):
        table = table.append_column(prefix + "n", pa.array(side.n[rows]))
        for name in QUARTILES:
            table = table.append_column(prefix + name, pa.array(getattr(side.quartiles, name)[rows]))
        for name, values in side.contention.items():
            table = table.append_column(prefix + name, pa.array(values[rows], from_pandas=True))
    return table


def _notes(query: CompareQuery, cases: pd.DataFrame, libraries: str | None) -> list[str]:
    notes = [f"Ratios are candidate {query.candidate} against baseline {query.baseline}; only status-ok results count."]
    if query.scope == "chip":
        notes.append(
            "Chip scope: results of different machines with the same chip and GPU core count are pooled, explicitly."
        )
    if not cases.empty:
        notes.append(
            "Each change is tested on its replicates: worker processes within a run, runs above them, and "
            "the store's A/A pairs for the run-to-run part; Holm's step over the cases tested keeps the "
            "chance that a review of unchanged software shows any significant change at 5 %. A case with "
            "none of these is unconfirmed. Medians are of the pooled samples. A worker process that ran while "
            "other processes took the cores is left out where enough clean ones remain; a case without "
            "enough is unconfirmed (contended), never tested."
        )
    if libraries:
        notes.append(libraries)
    return notes
