"""The release summary of a review (baseline → candidate), per (scope, device, dtype, compile): the scope is the
chip in chip scope, each machine in machine scope. What a team reads first: the geomean per family (timing
metrics only; each family one baseline, one unit, one configuration: never pooled across them), how many timing
cases got faster / slower / stayed unchanged, how many cases regressed (by their metric's rule, correctness one
row per case) or could not be compared (a derived figure, bandwidth or tokens/s, counted with its timing only:
db.review.cases.derived_figures), the memory and correctness verdicts, and the notes (builds pooled, libraries differ, battery /
Low Power Mode / thermal pressure on either side).

A plain, JSON-ready dict (`release_summary`, its fields named by `Summary`): the verdict cards render it first,
GET /api/v1/compare and /api/v1/regressions return it, the Markdown export and `mpsbench compare` print it, all
from this one function over the memoised judged review (db.review.review)."""

from __future__ import annotations

from typing import Any, Callable, TypedDict

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import RuleKind
from db.query.conditions import condition_notes
from db.query.json_values import records
from db.review.cases.columns import GROUP, SIGNIFICANCE
from db.review.comparison import SAME_BUILD
from db.review.release.answer import (
    CASE,
    DOUBTFUL,
    REGRESSED,
    TRIAGED,
    case_outcomes,
)
from db.review.release.evidence import confirm_command, named_doubts
from db.review.release.group_rows import group_rows, in_group
from db.review.release.group_words import overall_line
from db.review.release.listing import Question, doubtful, regressions
from db.review.release.scope_answer import SCOPE, named_regressions, named_triage, named_wins, scope_answers
from db.review.release.status_changes import status_changes
from db.review.review import cached_review
from db.review.rules import SUSPECTED, UNCONFIRMED_STATE, rule_kinds
from db.stats.significance import UNCONFIRMED
from db.store.writers.triage import TRIAGED_AWAY

FAMILY_COLUMNS = GROUP + [
    "workload",
    "metric",
    "n_cases",
    "geomean",
    "ci_low",
    "ci_high",
    "unit",
    "n_better",
    "n_worse",
    "summary",
]
FAMILY = GROUP + ["workload", "metric"]
GROUP_COLUMNS = GROUP + [
    "verdict",
    "compared",
    "regressed",
    "triaged",
    "faster",
    "slower",
    "unchanged",
    "undecided",
    "untested",
    "unconfirmed",
    "contended",
    "suspected",
    "unmatched",
    "timing",
    "memory",
    "correctness",
    "detects",
    "sees_bound",
    "more_runs",
    "evidence",
    "worst",
    "doubts",
    "memory_regressed",
    "memory_gains",
    "correctness_regressed",
    "correctness_gains",
]
AA_WORDS = "A/A, one build on both sides (any change is run-to-run noise): "


class Summary(TypedDict):
    """What release_summary answers (JSON-ready): the review's parameters, its verdict, counts of cases
    (db.review.release.answer), one answer per chip or machine (db.review.release.scope_answer), one row per group
    (GROUP_COLUMNS: its detail), the family geomeans (FAMILY_COLUMNS) and the notes."""

    baseline: str
    candidate: str
    scope: str
    threshold: float
    threshold_unit: str
    rules: str
    verdict: str
    cases: int  # compared cases (a case's metric rows nested under it)
    regressions: int  # cases regressed, not triaged away
    regression_rows: int  # their regressed figures (a case's op time and first-call time are two)
    triaged: int  # cases whose every regression is triaged away (noise, expected, accepted)
    untested: int  # timing cases with nothing to test on (no replicates, no A/A data): neither changed nor not
    unconfirmed: int  # cases worse beyond their bound with nothing to test them on; contended ones included
    contended: int  # of the unconfirmed: too few clean worker processes (db.stats.contention)
    suspected: int
    answers: list[dict[str, Any]]  # per chip (machine): win / regression / not decided / no change
    groups: list[dict[str, Any]]
    families: list[dict[str, Any]]
    notes: list[str]
    confirm: str  # the `mpsbench confirm` line deciding the doubtful cases ("" when there are none)
    same_build: bool  # both sides are runs of one build: an A/A review (its verdict says so)


def release_summary(
    engine: Engine, question: Question, found: pd.DataFrame | None = None, doubts: pd.DataFrame | None = None
) -> Summary:
    """The summary of a review (judged once: db.review.review.cached_review); its regressions `found` and its
    unconfirmed / suspected cases `doubts` may be passed when the caller has listed them already."""
    judged = cached_review(engine, question)
    review, result, cases = judged.review, judged.comparison, judged.cases
    found = regressions(engine, judged) if found is None else found
    doubts = doubtful(engine, judged) if doubts is None else doubts
    away = found.state.isin(TRIAGED_AWAY).to_numpy(dtype=bool) if len(found) else np.zeros(0, dtype=bool)
    live, triaged = found[~away], found[away]
    outcomes = case_outcomes(cases, judged.verdicts, found)
    doubts = doubts[_of(doubts, outcomes[outcomes.outcome == DOUBTFUL])]  # a regressed case's other rows: no doubt
    groups = group_rows(engine, judged, outcomes, live, doubts)
    named = {
        key: {"regressions": named_regressions(in_group(live, key, SCOPE))}
        | {"wins": named_wins(in_group(outcomes, key, SCOPE), cases)}
        | {"doubts": named_doubts(in_group(doubts, key, SCOPE)), "triage": named_triage(in_group(triaged, key, SCOPE))}
        for key in {(str(g["scope"]), str(g["device"])) for g in groups}
    }
    q = review.compare
    answers = scope_answers(groups, status_changes(result.cases, result.unmatched), named, (q.baseline, q.candidate))
    base, cand = q.selectors()
    notes = list(result.notes) + condition_notes(engine, base, "baseline") + condition_notes(engine, cand, "candidate")
    total, n_triaged = int((outcomes.outcome == REGRESSED).sum()), int((outcomes.outcome == TRIAGED).sum())
    same_build = result.same == SAME_BUILD
    counts = {name: sum(int(g[name]) for g in groups) for name in ("untested", "unconfirmed", "contended", "suspected")}
    kind = "chip" if q.scope == "chip" else "machine"
    doubtful_cases = counts["unconfirmed"] + counts["suspected"]
    return {
        "baseline": q.baseline,
        "candidate": q.candidate,
        "scope": q.scope,
        "threshold": review.threshold,
        "threshold_unit": "% worse",
        "rules": review.rules_text,
        "verdict": (AA_WORDS if same_build else "")
        + overall_line(total, answers, kind, n_triaged, doubtful_cases, counts["untested"], counts["contended"]),
        "cases": len(outcomes),
        "regressions": total,
        "regression_rows": len(live),
        "triaged": n_triaged,
        "same_build": same_build,
        **counts,
        "answers": answers,
        "groups": records(pd.DataFrame(groups, columns=GROUP_COLUMNS)),
        "families": records(_timed(judged.families, cases, review.rules).reindex(columns=FAMILY_COLUMNS)),
        "notes": notes,
        "confirm": confirm_command(review.params()) if len(doubts) else "",
    }


def _of(rows: pd.DataFrame, cases: pd.DataFrame) -> np.ndarray:
    """Which of `rows` belong to one of `cases` (both with CASE columns)."""
    if rows.empty:
        return np.zeros(0, dtype=bool)
    wanted = set(cases[CASE].astype(str).itertuples(index=False, name=None))
    return np.array([k in wanted for k in rows[CASE].astype(str).itertuples(index=False, name=None)], dtype=bool)


def _timed(families: pd.DataFrame, cases: pd.DataFrame, rules) -> pd.DataFrame:
    """The families of the timing cases counted above (not bandwidth or tokens/s beside their timing), each
    saying how many of its cases were untested: a geomean of untested cases is a figure, not a tested change, and
    must not read as one beside counts without a faster case."""
    if families.empty:
        return families
    kinds = rule_kinds(cases, rules)
    timing = cases[(kinds == RuleKind.significant.value) & (cases.comparison == "ratio").to_numpy(dtype=bool)]
    untested = (timing[SIGNIFICANCE] == UNCONFIRMED).to_numpy(dtype=bool)
    said: dict[tuple, int] = {}
    for key, blind in zip(timing[FAMILY].astype(str).itertuples(index=False, name=None), untested):
        said[key] = said.get(key, 0) + int(blind)
    own = list(families[FAMILY].astype(str).itertuples(index=False, name=None))
    mine = families[[t in said for t in own]].copy()
    blind = [said[t] for t in own if t in said]
    mine["summary"] = [
        _untested_words(text, n, int(total))
        for text, n, total in zip(mine["summary"].astype(str), blind, mine["n_cases"].fillna(0))
    ]
    return mine


def _untested_words(summary: str, untested: int, cases: int) -> str:
    """The family's words with its untested cases said before its baseline (a card shows the words up to it)."""
    if not untested:
        return summary
    words = (
        "untested (one figure a side)"
        if untested >= cases
        else f"{untested} of {cases} cases untested (one figure a side)"
    )
    head, sep, tail = summary.partition(", baseline ")
    return f"{head} — {words}{sep}{tail}"


def review_answer(engine: Engine, question: Question, rows: Callable[[pd.DataFrame], Any] = records) -> dict[str, Any]:
    """A review as GET /api/v1/regressions returns it (and `mpsbench compare` reads it, locally or from a server):
    the parameters, the release summary, the regressions worst first, the notes; each list as `rows` gives it
    (its records; the API keeps the frames and writes their records in slices)."""
    judged = cached_review(engine, question)
    found, doubts = regressions(engine, judged), doubtful(engine, judged)
    summary = release_summary(engine, judged, found, doubts)
    review, result = judged.review, judged.comparison
    q = review.compare
    return {
        "baseline": q.baseline,
        "candidate": q.candidate,
        "scope": q.scope,
        "threshold": review.threshold,
        "threshold_unit": "% worse",
        "rules": review.rules_text,
        "notes": summary["notes"],
        "summary": summary,
        "regressions": rows(found),
        "unconfirmed": rows(doubts[doubts.verdict == UNCONFIRMED_STATE]),
        "suspected": rows(doubts[doubts.verdict == SUSPECTED]),
        "status_changes": rows(status_changes(result.cases, result.unmatched)),
    }
