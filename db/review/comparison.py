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
from db.query.compare.pivot import FILTERS, KEY
from db.query.compare.pivot import SIDES as _SIDES
from db.query.compare.unmatched import unmatched_frame
from db.query.libraries import differing_note, recorded_libraries
from db.query.noise import read_model
from db.query.selectors import Selector, check_builds, parse_pool, parse_selector, pooled_note, side_runs
from db.review.cache import Memo, clear_all
from db.review.cases.columns import (
    BY_DIFFERENCE,
    BY_RATIO,
    CASE_COLUMNS,
    CHANGE_UNIT,
    COMPARISON,
    DIFFERENCE,
    ORIENTED_RATIO,
    RATIO,
    side_column,
)
from db.review.cases.text_columns import caveats, change_words, contention_words, with_contention, with_warnings
from db.review.cases.wording import pick, str_column
from db.review.families import FAMILY_INPUT, family_frame
from db.review.noise import case_noise
from db.review.rules import rule_kinds
from db.review.side_inputs import MetricFacts, case_sample_reader, side_inputs
from db.stats.lists import QUARTILES
from db.stats.ratios import orient, oriented_interval
from db.stats.significance import (
    REPLICATE_WORDS,
    SIGNIFICANCE_WORDS,
    SIGNIFICANT,
    SampleLists,
    SideStats,
    Significance,
    significance,
)

SCOPES = ("machine", "chip")
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
    sides = ((base, "baseline"), (cand, "candidate"))
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
    families = WORKERS.submit(
        family_frame,
        family_input,
        query,
        lambda: tests.result().verdict == SIGNIFICANT,
        lambda: oriented_cis(tests.result(), facts),
    )
    try:
        cases = case_frame(frame, facts, query, change)
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
    except BaseException as exc:
        tests.set_exception(exc)  # the worker waiting for the verdicts stops too
        raise
    tests.set_result(sig)
    unmatched = unmatched_frame(rest)
    add_significance(cases, sig, facts)
    # a selector without runs is a 404 naming it; one spanning builds a 400, unless pooled on purpose. Small reads
    # made here, while the worker finishes the families: the worker is the longer path
    found = side_runs(engine, [base, cand])
    pooled = [
        pooled_note(side, selector, check_builds(runs.builds, selector, side, query.pool))
        for (selector, side), runs in zip(sides, found)
    ]
    libraries = differing_note(*(recorded_libraries(runs.libraries) for runs in found))
    families = families.result()
    notes = _notes(query, cases, libraries) + [n for n in pooled if n]
    samples = None if stats[0].samples is None else (stats[0].samples, stats[1].samples)
    same = SAME_RUNS if found[0].same_runs(found[1]) else SAME_BUILD if found[0].same_build(found[1]) else ""
    if same == SAME_BUILD:
        notes.append(
            f"Both sides are runs of one build ({found[0].builds.label.iloc[0]}): an A/A review — whatever "
            "it finds is run-to-run noise, not a change of build."
        )
    return ComparisonResult(query, cases, families, unmatched, notes, samples, case_sample_reader(engine, query), same)


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


def case_frame(frame: pd.DataFrame, facts: MetricFacts, query: CompareQuery, change: "CaseChange") -> pd.DataFrame:
    """The case table without its significance columns (NaN until add_significance fills them); `change`: the
    frame's case_change."""
    if frame.empty:
        return _empty_cases()
    out = {k: frame[k] for k in KEY}
    out["unit"] = str_column(facts.units)
    for side, p in _SIDES:  # SIDE_FIGURES, in order
        out[side_column(side, "median")] = frame[p + "median"]
        out[side_column(side, "iqr")] = frame[p + "p75"] - frame[p + "p25"]
        for name in ("n", "pooled", "machines"):
            out[side_column(side, name)] = frame[p + name].astype(int)
        out[side_column(side, "passed")] = frame[p + "passed"]
    # a correctness figure's scale (db.review.rules: a move within a few roundings is the dtype's jitter): the
    # candidate's rounding level (the baseline's where the candidate states none), the larger stated tolerance
    b_level, c_level = (frame[p + "rounding"].to_numpy(dtype=float, na_value=np.nan) for _, p in _SIDES)
    out["rounding"] = np.where(np.isnan(c_level), b_level, c_level)
    out["tolerance"] = np.fmax(*(frame[p + "tolerance"].to_numpy(dtype=float, na_value=np.nan) for _, p in _SIDES))
    out.update(change.columns)
    for name in ("ci_low", "ci_high", "p_value", "significance"):  # in place, in column order, until known
        out[name] = np.full(len(frame), np.nan)
    out["change"] = change_words((facts.codes, facts.names), change.oriented, change.difference, facts.use_ratio)
    out["replicates"] = ""  # what its test rests on: add_significance
    # a side with too few clean processes (db.stats.contention): a memory peak read there is unconfirmed too
    out["contended"] = (frame.b_contended | frame.c_contended).to_numpy(dtype=bool)
    out["contention"] = contention_words(frame)
    out["caveats"] = with_contention(with_warnings(caveats(frame, query.scope == "chip"), frame), out["contention"])
    return pd.DataFrame(out)  # one frame built from its columns: ~30 column inserts cost more


@dataclass(frozen=True)
class CaseChange:
    columns: dict[str, object]  # the case table's comparison, ratio, oriented_ratio, difference, change_unit
    oriented: np.ndarray  # every case's oriented ratio and difference, whatever its comparison (for the words)
    difference: np.ndarray


def case_change(frame: pd.DataFrame, facts: MetricFacts) -> CaseChange:
    """Each case's change: ratio of medians or their difference, as its metric compares."""
    use_ratio, lower = facts.use_ratio, facts.lower
    b_median, c_median = frame.b_median.to_numpy(dtype=float), frame.c_median.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = c_median / b_median
        oriented = orient(ratio, lower)
    diff = c_median - b_median
    return CaseChange(
        {
            COMPARISON: pick([BY_DIFFERENCE, BY_RATIO], use_ratio.astype(np.int64)),
            RATIO: np.where(use_ratio, ratio, np.nan),  # candidate / baseline of medians
            ORIENTED_RATIO: np.where(use_ratio, oriented, np.nan),  # > 1: candidate better
            DIFFERENCE: np.where(use_ratio, np.nan, diff),  # candidate - baseline, in `unit`
            CHANGE_UNIT: str_column(pc.if_else(pa.array(use_ratio), "×", facts.units)),
        },
        oriented,
        diff,
    )


def oriented_cis(sig: Significance, facts: MetricFacts) -> tuple[np.ndarray, np.ndarray]:
    """Each case's CI oriented like its ratio (> 1 is better); differences as they are."""
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = oriented_interval(sig.ci_low, sig.ci_high, facts.lower)
    return np.where(facts.use_ratio, low, sig.ci_low), np.where(facts.use_ratio, high, sig.ci_high)


def add_significance(cases: pd.DataFrame, sig: Significance, facts: MetricFacts) -> None:
    """The oriented CI, the p-value and the verdict, into the case table."""
    if cases.empty:
        return
    cases["ci_low"], cases["ci_high"] = oriented_cis(sig, facts)
    cases["p_value"], cases["significance"] = sig.p_value, pick(list(SIGNIFICANCE_WORDS), sig.codes)
    cases["se"], cases["df"] = sig.se, sig.df
    # the standard error is of ln(candidate / baseline) for ratios, of the difference (its unit) otherwise
    cases["se_unit"] = str_column(pc.if_else(pa.array(facts.use_ratio), "ln(ratio)", facts.units))
    cases["replicates"] = pick(list(REPLICATE_WORDS), sig.replicates)


def _empty_cases() -> pd.DataFrame:
    return pd.DataFrame(columns=CASE_COLUMNS)
