"""Each compared case judged by its metric's regression rule (bundle.metrics.RULES, overridable per review).

A derived figure (db.review.cases.derived_figures: bandwidth, tokens/s) compared beside its timing is that timing's measurement:
never a verdict of its own. Compared alone it stands for the measurement and takes its timing's rule (`ruled_by`).
`case_bounds` is the one place a case's regression bound is computed: the review threshold, or the metric's own
percent. The noise is the test's business (db.stats.replicates: processes, runs and A/A pairs make its variance),
so the bound is what matters to a user, not a noise floor. Every verdict (Regressions, the release summary, the
CLI gate) reads it. A case judged by significance that is worse beyond its bound is a regression when its test
passed the review's family-wise step, `suspected` when only its own test did (p < REVIEW_ALPHA:
`mpsbench confirm` reruns it), and `unconfirmed` when it has nothing to test on (no replicates, no A/A data).
A case whose side had too few clean worker processes (db.stats.contention) is `unconfirmed` whichever way it
moved: its figures timed the machine's load, so it is neither a change nor unchanged (`doubt` says why).
`worse_by` is one scale for every rule, so regressions of different metrics sort together: the fraction the
candidate is worse by (1/oriented ratio − 1 for a ratio, relative growth for memory and errors, and for a PSNR
drop of d dB the growth of the mean squared error it means, 10^(d/10) − 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from bundle.metrics import (
    CORRECTNESS,
    DERIVED,
    ROUNDING_MOVE,
    ROUNDING_UNITS,
    SAMPLED,
    TOLERANCE_MARGIN,
    Rule,
    RuleKind,
)
from db.review.cases.columns import BETTER, UNCHANGED, UNCLEAR, WORSE, per_metric, tested_directions
from db.review.cases.derived_figures import folded_rows
from db.stats.ratios import as_fraction, as_percent, worse_fraction
from db.stats.significance import (
    CONTENDED,
    NOT_SIGNIFICANT,
    REPLICATE_WORDS,
    REVIEW_ALPHA,
    SIGNIFICANT,
    UNCONFIRMED,
    ZERO_SPREAD,
)

SLOWDOWN, PASSED_FAILED = "significant slowdown", "passed → failed"
REGRESSION, SUSPECTED, UNCONFIRMED_STATE = "regression", "suspected", "unconfirmed"  # case_verdicts()'s `verdict`
# case_verdicts()'s `doubt`: why a doubtful case is one
BUSY = "contended: other processes took the cores while it was timed (its figures are not evidence)"
UNTESTED = "nothing to test on: one process, one run a side, no A/A data"
NO_SPREAD = "nothing to test on: its replicates agree exactly (a spread of 0 is no evidence)"
OWN_TEST = "its own test passed (p < 5 %), the review's family-wise step did not"


def case_bounds(
    cases: pd.DataFrame, threshold: float, rules: dict[str, Rule], ruled: pd.Series | None = None
) -> np.ndarray:
    """Per case, the fraction worse a replicated change must exceed to regress: the metric's rule percent, or the
    review threshold (a fraction) where the rule has none. `ruled`: ruled_by(cases), when the caller has it."""
    percent = _per_case(ruled_by(cases) if ruled is None else ruled, rules, "percent")
    return np.where(np.isnan(percent), threshold, as_fraction(percent))


def ruled_by(cases: pd.DataFrame, key_ordered: bool = False) -> pd.Series:
    """Per case, the metric whose rule judges it: its own, or for a derived figure compared without its timing
    (nothing carries it) that timing's, so a rate filtered apart from its time still gates like the time.
    `key_ordered`: the cases are in key order (db.review.cases.derived_figures.derived_pairs)."""
    codes, names = pd.factorize(cases.metric)  # mapped once per distinct metric, not once per case
    own = np.append(names.to_numpy(dtype=object), None)[codes]
    alone = cases.metric.isin(list(DERIVED)).to_numpy(dtype=bool)
    if alone.any():
        alone = alone & ~folded_rows(cases, key_ordered=key_ordered)
        timing = np.array([DERIVED.get(n, n) for n in names] + [None], dtype=object)[codes]
        own = np.where(alone, timing, own)
    return pd.Series(own, index=cases.index, dtype=object)


def rule_kinds(cases: pd.DataFrame, rules: dict[str, Rule], key_ordered: bool = False) -> np.ndarray:
    """Per case, the kind of the rule that judges it (significant, growth, …, derived where its timing's row
    carries it): what the verdicts and the release summary's timing counts read."""
    return _kinds(ruled_by(cases, key_ordered), rules)


def _kinds(ruled: pd.Series, rules: dict[str, Rule]) -> np.ndarray:
    return per_metric(ruled, {n: r.kind.value for n, r in rules.items()}, object, "")


def _per_case(ruled: pd.Series, rules: dict[str, Rule], field: str) -> np.ndarray:
    return per_metric(
        ruled, {n: (np.nan if getattr(r, field) is None else getattr(r, field)) for n, r in rules.items()}
    )


def case_verdicts(cases: pd.DataFrame, threshold: float, rules: dict[str, Rule]) -> pd.DataFrame:
    """Per case (same index as `cases`): regressed, why, worse_by, bound (fraction), rule (its kind), verdict:
    REGRESSION, SUSPECTED, UNCONFIRMED_STATE or "" (see the module's note), doubt (BUSY, UNTESTED, OWN_TEST or
    "": why a case is doubtful), and improved: a single figure judged
    by its own rule (growth, drop, factor) that got better beyond that rule read the other way (memory smaller by
    the rule's percent and floor, PSNR up by more than its drop, an error divided by its factor)."""
    ruled = ruled_by(cases)
    kind = _kinds(ruled, rules)
    b = cases.baseline_median.to_numpy(dtype=float, na_value=np.nan)
    c = cases.candidate_median.to_numpy(dtype=float, na_value=np.nan)
    bound = case_bounds(cases, threshold, rules, ruled)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        moved = _moves(cases, ruled, rules, kind, bound, b, c)
    broke = (cases.baseline_passed == True).to_numpy(dtype=bool)  # noqa: E712 - elementwise; a missing verdict is neither
    broke = broke & (cases.candidate_passed == False).to_numpy(dtype=bool)  # noqa: E712 - elementwise, as above
    broke &= kind != RuleKind.derived.value
    why = np.select(
        [broke, moved.slower, moved.grew, moved.dropped, moved.multiplied],
        [
            PASSED_FAILED,
            SLOWDOWN,
            "memory grew beyond its rule",
            "PSNR dropped beyond its rule",
            "error grew beyond its rule",
        ],
        "",
    )
    worse_by = np.where(broke, np.inf, moved.worse_by)
    improved = (moved.shrank | moved.better_single) & ~broke
    direction = directions(cases, kind, bound, why != "", improved, moved.busy)
    bound = np.where(kind == RuleKind.significant.value, bound, np.nan)  # the other rules carry their own figures
    verdict = np.select([why != "", moved.suspected, moved.unconfirmed], [REGRESSION, SUSPECTED, UNCONFIRMED_STATE], "")
    zero = cases.replicates.astype(str).to_numpy() == REPLICATE_WORDS[ZERO_SPREAD] if "replicates" in cases else False
    doubt = np.select(
        [why != "", moved.busy, moved.suspected, moved.unconfirmed & zero, moved.unconfirmed],
        ["", BUSY, OWN_TEST, NO_SPREAD, UNTESTED],
        "",
    )
    return pd.DataFrame(
        {
            "regressed": why != "",
            "why": why,
            "worse_by": worse_by,
            "bound": bound,
            "rule": kind,
            "verdict": verdict,
            "doubt": doubt,
            "improved": improved,
            "direction": direction,
        },
        index=cases.index,
    )


class _Moves(NamedTuple):
    """Each case's moves against its rule (case_verdicts reads them)."""

    worse_by: np.ndarray  # one scale for every rule: the fraction the candidate is worse by
    slower: np.ndarray  # worse beyond the bound, and its test passed the family-wise step
    suspected: np.ndarray  # worse beyond the bound, only its own test passed
    unconfirmed: np.ndarray  # worse beyond the bound with nothing to test on, or busy
    busy: np.ndarray  # its figures timed the machine's load (contended)
    grew: np.ndarray  # a growth rule's figure grew beyond it
    shrank: np.ndarray  # ... shrank beyond it (the rule read the other way)
    dropped: np.ndarray  # a drop rule's figure (PSNR) dropped beyond it
    multiplied: np.ndarray  # a factor rule's figure (an error) grew by more than its factor
    better_single: np.ndarray  # a drop or factor rule's figure better beyond its rule


def _moves(
    cases: pd.DataFrame,
    ruled: pd.Series,
    rules: dict[str, Rule],
    kind: np.ndarray,
    bound: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
) -> _Moves:
    """Each case's moves (b, c: its sides' medians); called under case_verdicts' np.errstate."""
    oriented = cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan)
    growth = relative_growth(b, c)
    worse_ratio = worse_fraction(oriented)
    drop_db = b - c  # PSNR: higher is better
    worse_by = np.select(
        [kind == RuleKind.significant.value, kind == RuleKind.drop.value],
        [worse_ratio, 10.0 ** (drop_db / 10.0) - 1.0],
        growth,
    )
    worse = (kind == RuleKind.significant.value) & (worse_ratio > bound)
    verdict_of = cases.significance.to_numpy()
    slower = worse & (verdict_of == SIGNIFICANT)
    p = cases.p_value.to_numpy(dtype=float, na_value=np.nan)
    suspected = worse & (verdict_of == NOT_SIGNIFICANT) & (p < REVIEW_ALPHA)
    busy = verdict_of == CONTENDED
    grew, shrank, dropped, multiplied, better_single = _single_moves(cases, ruled, rules, kind, b, c, growth)
    # a sampled peak read in a contended process (bundle.metrics.SAMPLED): moved beyond its rule either way,
    # it is unconfirmed (contended), neither a regression nor a win
    sampled = cases.metric.isin(SAMPLED).to_numpy(dtype=bool)
    peak_busy = (grew | shrank) & _contended(cases) & sampled
    # a sampled peak that runs or A/A pairs could test moved within its noise: not beyond its rule either way
    peak_noise = sampled & (verdict_of == NOT_SIGNIFICANT)
    grew, shrank, busy = grew & ~peak_busy & ~peak_noise, shrank & ~peak_busy & ~peak_noise, busy | peak_busy
    unconfirmed = (worse & (verdict_of == UNCONFIRMED)) | busy
    return _Moves(worse_by, slower, suspected, unconfirmed, busy, grew, shrank, dropped, multiplied, better_single)


def _single_moves(
    cases: pd.DataFrame,
    ruled: pd.Series,
    rules: dict[str, Rule],
    kind: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    growth: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A single figure's moves beyond its own rule (memory, PSNR, error): grew, shrank, dropped, multiplied and
    better (a drop or factor rule read the other way)."""
    grew = (
        (kind == RuleKind.growth.value)
        & (as_percent(growth) >= _per_case(ruled, rules, "percent"))
        & (c - b >= _per_case(ruled, rules, "floor"))
    )
    jitter = rounding_jitter(cases, kind, b, c)
    drop, factor = _per_case(ruled, rules, "drop"), _per_case(ruled, rules, "factor")
    worse_single, better_single = beyond_rule(kind, b, c, drop, factor, jitter, growth)
    dropped = worse_single & (kind == RuleKind.drop.value)
    multiplied = worse_single & (kind == RuleKind.factor.value)
    # the same rules read the other way: what a single figure (memory, PSNR, error) gained beyond its rule
    shrank = (
        (kind == RuleKind.growth.value)
        & (as_percent(-growth) >= _per_case(ruled, rules, "percent"))
        & (b - c >= _per_case(ruled, rules, "floor"))
    )
    return grew, shrank, dropped, multiplied, better_single


BY_RULE = (RuleKind.growth.value, RuleKind.drop.value, RuleKind.factor.value)  # single figures' rules


def directions(
    cases: pd.DataFrame,
    kind: np.ndarray,
    bound: np.ndarray,
    regressed: np.ndarray,
    improved: np.ndarray,
    busy: np.ndarray,
) -> np.ndarray:
    """Each case's direction (db.review.cases.columns.DIRECTIONS), the one every view and count reads: a tested
    figure's against its bound (db.review.cases.columns.tested_directions); a single figure judged by its own rule (memory,
    PSNR, errors) worse where it regressed, better where it gained beyond that rule, not decided where its side
    was contended, else unchanged; passed → failed is worse whatever the metric."""
    tested = tested_directions(cases, bound)
    ruled = np.where(regressed, WORSE, np.where(improved, BETTER, np.where(busy, UNCLEAR, UNCHANGED)))
    return np.where(regressed, WORSE, np.where(np.isin(kind, BY_RULE), ruled, tested))


def relative_growth(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """How much the candidate's single figure grew, as a fraction of the baseline's (inf from nothing to some)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, c / b - 1.0, np.where(c > 0, np.inf, 0.0))


def beyond_rule(
    kind: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    drop: np.ndarray,
    factor: np.ndarray,
    jitter: np.ndarray,
    growth: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A drop- or factor-ruled single figure (a PSNR in dB, an error) moved beyond its rule: (worse, better) — a
    PSNR down (up) by more than its drop, an error multiplied (divided) by its factor or more — and not within its
    dtype's rounding (`jitter`: rounding_jitter). The Regressions review and the Correctness page both read it.
    `growth`: relative_growth(b, c), where the caller has it."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        growth = relative_growth(b, c) if growth is None else growth
        is_db, is_factor = kind == RuleKind.drop.value, kind == RuleKind.factor.value
        worse = (is_db & (b - c > drop)) | (is_factor & (c > 0) & (growth + 1.0 >= factor))
        better = (is_db & (c - b > drop)) | (is_factor & (b > 0) & ((c == 0) | (b / c >= factor)))
    return worse & ~jitter, better & ~jitter


def _contended(cases: pd.DataFrame) -> np.ndarray:
    if "contended" not in cases:
        return np.zeros(len(cases), dtype=bool)
    return cases.contended.to_numpy(dtype=bool, na_value=False)


def rounding_jitter(cases: pd.DataFrame, kind: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per case, whether a drop- or factor-ruled figure moved within its dtype's rounding (bundle.metrics,
    ROUNDING_UNITS), either way: it has a rounding level, both sides' errors are within ROUNDING_UNITS of it, it
    moved by less than ROUNDING_MOVE, and the candidate passes — and, for a PSNR with a stated tolerance (dB),
    stays TOLERANCE_MARGIN clear of it. (An error figure's stated tolerance is one part of the combined pass rule,
    |out − ref| ≤ atol + rtol·|ref|: not its own scale; `passed` is.) Such a move is neither a regression nor a
    win."""
    if "rounding" not in cases:
        return np.zeros(len(cases), dtype=bool)
    level = cases.rounding.to_numpy(dtype=float, na_value=np.nan)
    tolerance = cases.tolerance.to_numpy(dtype=float, na_value=np.nan)
    db = kind == RuleKind.drop.value
    margin_db = 20.0 * np.log10(TOLERANCE_MARGIN)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # each side's error in roundings (RMS for a PSNR), and how far it moved (×, either way)
        units = np.fmax(*(np.where(db, 10.0 ** ((level - x) / 20.0), x / level) for x in (b, c)))
        moved = np.where(db, 10.0 ** (np.abs(b - c) / 20.0), np.fmax(c / b, b / c))
        near = db & (c - tolerance < margin_db)  # NaN (no tolerance): False
        scaled = np.isfinite(level) & np.where(db, True, level > 0)
        not_failed = (cases.candidate_passed != False).to_numpy(dtype=bool)  # noqa: E712 - elementwise; missing: not failed
        return (
            (db | (kind == RuleKind.factor.value))
            & scaled
            & (units <= ROUNDING_UNITS)
            & (moved < ROUNDING_MOVE)
            & ~near
            & not_failed
        )


def is_correctness(metric: pd.Series) -> np.ndarray:
    return metric.isin(CORRECTNESS).to_numpy(dtype=bool)
