"""A release summary's rows, one per (scope, device, dtype, compile) group (db.review.release.summary): its cases
counted by outcome, its memory and correctness lines, what its tests can see, its evidence, its regressions and
doubts by name."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import METRICS, RuleKind
from db.review.cases.columns import GROUP, SIGNIFICANCE, per_metric
from db.review.cases.derived_figures import folded_rows
from db.review.detectable import detection
from db.review.release.answer import (
    CASE,
    FASTER,
    OUTCOMES,
    REGRESSED,
    SLOWER,
    TRIAGED,
    UNCHANGED_CASE,
    UNDECIDED,
)
from db.review.release.evidence import NO_TIMING, evidence_by_group, named_doubts, nothing_compared
from db.review.release.group_words import correctness_line, group_line, memory_line, moved
from db.review.release.scope_answer import named_regressions
from db.review.review import JudgedReview
from db.review.rules import BUSY, UNCONFIRMED_STATE
from db.stats.significance import UNCONFIRMED


def group_rows(
    engine: Engine, judged: JudgedReview, outcomes: pd.DataFrame, live: pd.DataFrame, doubts: pd.DataFrame
) -> list[dict[str, Any]]:
    """One row per (scope, device, dtype, compile) group (summary.GROUP_COLUMNS): its cases counted by outcome, its memory
    and correctness lines, what its tests can see, its evidence and its regressions and doubts by name."""
    tallies = _tallies(judged, outcomes, doubts)
    q = judged.review.compare
    return [
        _group_row(key, tallies, live, doubts, q) for key in sorted(set(tallies.by_outcome) | set(tallies.unmatched))
    ]


class _Tallies(NamedTuple):
    """What group_rows reads per group, each keyed by the group's GROUP values."""

    by_outcome: dict  # its cases counted by outcome
    timed: dict  # its timing cases
    blind: dict  # its timing cases with nothing to test on
    unmatched_cases: pd.DataFrame  # the cases one side lacks (a failed decode once, not its rate)
    unmatched: dict
    busy: dict  # its contended doubts
    unsure: dict  # its unconfirmed doubts
    doubtful: dict  # all its doubts
    seen: dict  # what its tests can see
    evidence: dict
    memory_cases: pd.DataFrame  # the memory figures judged by growth, and whether each improved
    correctness_cases: pd.DataFrame


def _tallies(judged: JudgedReview, outcomes: pd.DataFrame, doubts: pd.DataFrame) -> _Tallies:
    review, result, cases = judged.review, judged.comparison, judged.cases
    kinds = judged.verdicts.rule.to_numpy()
    quantity = per_metric(cases.metric, {n: m.quantity for n, m in METRICS.items()}, object, "")
    timing = (kinds == RuleKind.significant.value) & (cases.comparison == "ratio").to_numpy(dtype=bool)
    untested = timing & (cases[SIGNIFICANCE] == UNCONFIRMED).to_numpy(dtype=bool)
    unmatched_cases = result.unmatched[~folded_rows(result.unmatched)]  # a failed decode is one case, not its rate
    with_gains = cases.assign(improved=judged.verdicts.improved)
    return _Tallies(
        by_outcome=_by_group(outcomes.assign(**{o: outcomes.outcome == o for o in OUTCOMES}), list(OUTCOMES)),
        timed=_by_group(outcomes[["timing"] + GROUP], ["timing"]),
        blind=_by_group(cases[GROUP].assign(untested=untested), ["untested"]),
        unmatched_cases=unmatched_cases,
        unmatched=_sizes(unmatched_cases.drop_duplicates(CASE)),
        busy=_sizes(doubts[doubts.doubt == BUSY].drop_duplicates(CASE)) if len(doubts) else {},
        unsure=_sizes(doubts[doubts.verdict == UNCONFIRMED_STATE].drop_duplicates(CASE)) if len(doubts) else {},
        doubtful=_sizes(doubts.drop_duplicates(CASE) if len(doubts) else doubts),
        # what a review can see is said of the cases it tests: a contended case's spread is the machine's load
        seen=detection(cases[timing & ~cases.contended.to_numpy(dtype=bool)], GROUP, review.fraction),
        evidence=evidence_by_group(cases[timing], GROUP, review.compare.baseline),
        memory_cases=with_gains[(quantity == "memory") & (kinds == RuleKind.growth.value)],
        correctness_cases=with_gains[quantity == "correctness"],
    )


def _group_row(key: tuple, t: _Tallies, live: pd.DataFrame, doubts: pd.DataFrame, q) -> dict[str, Any]:
    """One group's row (`q`: the review's CompareQuery)."""
    got = t.by_outcome.get(key, dict.fromkeys(OUTCOMES, 0))
    n = sum(got.values())
    mine = in_group(live, key)
    sight = t.seen.get(key, {})
    memory_cases, correctness_cases = in_group(t.memory_cases, key), in_group(t.correctness_cases, key)
    row = {
        **dict(zip(GROUP, key)),
        "compared": n,
        "regressed": got[REGRESSED],
        "triaged": got[TRIAGED],
        "faster": got[FASTER],
        "slower": got[SLOWER],
        "unchanged": got[UNCHANGED_CASE],
        "undecided": got[UNDECIDED],
        "untested": t.blind.get(key, {}).get("untested", 0),
        "unconfirmed": t.unsure.get(key, 0),
        "contended": t.busy.get(key, 0),
        "suspected": t.doubtful.get(key, 0) - t.unsure.get(key, 0),
        "unmatched": t.unmatched.get(key, 0),
        "timing": t.timed.get(key, {}).get("timing", 0),
        "memory": memory_line(memory_cases, mine),
        "correctness": correctness_line(correctness_cases, mine),
        **moved(memory_cases, mine, "memory"),
        **moved(correctness_cases, mine, "correctness"),
        "detects": sight.get("words", ""),
        "sees_bound": bool(sight.get("sees_bound", True)),
        "more_runs": sight.get("more_runs"),
        "evidence": t.evidence.get(key, NO_TIMING),
        "worst": named_regressions(mine),
        "doubts": named_doubts(in_group(doubts, key)),
    }
    row["verdict"] = (
        group_line(row) if n else nothing_compared(in_group(t.unmatched_cases, key), q.baseline, q.candidate, key[0])
    )
    return row


def _by_group(frame: pd.DataFrame, columns: list[str]) -> dict[tuple, dict[str, int]]:
    if frame.empty:
        return {}
    sums = frame.groupby(GROUP, sort=False, observed=True, dropna=False)[columns].sum()
    return {
        tuple(str(k) for k in key): {c: int(v) for c, v in zip(columns, values)}
        for key, values in zip(sums.index, sums.to_numpy())
    }


def _sizes(frame: pd.DataFrame) -> dict[tuple, int]:
    if frame.empty:
        return {}
    sizes = frame.groupby(GROUP, sort=False, observed=True, dropna=False).size()
    return {tuple(str(k) for k in key): int(v) for key, v in sizes.items()}


def in_group(frame: pd.DataFrame, key: tuple, names: list[str] = GROUP) -> pd.DataFrame:
    """The rows of a frame in one group (`names`: the group's columns, `key` their values as text)."""
    if frame.empty:
        return frame
    hit = np.ones(len(frame), dtype=bool)
    for name, value in zip(names, key):
        hit &= (frame[name].astype(str) == value).to_numpy()
    return frame[hit]
