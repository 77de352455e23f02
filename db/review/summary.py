"""The release summary of a review (baseline → candidate), per (scope, device, dtype, compile): the scope is the
chip in chip scope, each machine in machine scope. What a team reads first: the geomean per family (timing
metrics only; each family one baseline, one unit, one configuration: never pooled across them), how many timing
cases got faster / slower / stayed unchanged, how many cases regressed (by their metric's rule, correctness one
row per case) or could not be compared (a derived figure, bandwidth or tokens/s, counted with its timing only:
db.review.derived), the memory and correctness verdicts, and the notes (builds pooled, libraries differ, battery /
Low Power Mode / thermal pressure on either side).

A plain, JSON-ready dict (`release_summary`, its fields named by `Summary`): the verdict cards render it first,
GET /api/v1/compare and /api/v1/regressions return it, the Markdown export and `mpsbench compare` print it, all
from this one function over the memoised judged review (db.review.review)."""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.metrics import METRICS, RuleKind
from db.query.conditions import condition_notes
from db.query.plain import records
from db.review.case_table import BETTER, GROUP, ORIENTED_RATIO, SIGNIFICANCE, WORSE, per_metric
from db.review.comparison import SAME_BUILD
from db.review.derived import folded_rows
from db.review.detectable import detectable_words
from db.review.evidence import NO_TIMING, confirm_command, evidence_by_group, named_doubts, nothing_compared, worst
from db.review.listing import Question, doubtful, regressions
from db.review.review import judge_review
from db.review.rules import BUSY, SUSPECTED, UNCONFIRMED_STATE, rule_kinds
from db.review.status_changes import status_changes
from db.review.wording import format_value
from db.stats.significance import NOT_SIGNIFICANT, SIGNIFICANT, UNCONFIRMED

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
    "faster",
    "slower",
    "unchanged",
    "untested",
    "regressed",
    "unconfirmed",
    "contended",
    "suspected",
    "unmatched",
    "memory",
    "correctness",
    "detects",
    "evidence",
    "worst",
    "doubts",
    "memory_regressed",
    "memory_gains",
    "correctness_regressed",
    "correctness_gains",
]
AA_WORDS = "A/A, one build on both sides (any change is run-to-run noise): "
COUNTED = ["faster", "slower", "unchanged", "untested"]  # timing cases: the first three tested, the last not


class Summary(TypedDict):
    """What release_summary answers (JSON-ready): the review's parameters, its verdict and counts, one row per
    group (GROUP_COLUMNS), the family geomeans (FAMILY_COLUMNS) and the notes."""

    baseline: str
    candidate: str
    scope: str
    threshold: float
    threshold_unit: str
    rules: str
    verdict: str
    regressions: int
    untested: int  # timing cases with nothing to test on (no replicates, no A/A data): neither changed nor not
    unconfirmed: int  # contended ones included
    contended: int  # of the unconfirmed: too few clean worker processes (db.stats.contention)
    suspected: int
    groups: list[dict[str, Any]]
    families: list[dict[str, Any]]
    notes: list[str]
    confirm: str  # the `mpsbench confirm` line deciding the doubtful cases ("" when there are none)
    same_build: bool  # both sides are runs of one build: an A/A review (its verdict says so)


def release_summary(
    engine: Engine, question: Question, found: pd.DataFrame | None = None, doubts: pd.DataFrame | None = None
) -> Summary:
    """The summary of a review (judged once: db.review.review.judge_review); its regressions `found` and its
    unconfirmed / suspected cases `doubts` may be passed when the caller has listed them already."""
    judged = judge_review(engine, question)
    review, result, cases = judged.review, judged.comparison, judged.cases
    found = regressions(engine, judged) if found is None else found
    doubts = doubtful(engine, judged) if doubts is None else doubts
    kinds = rule_kinds(cases, review.rules)  # a derived figure beside its timing is not a second timing case
    quantity = per_metric(cases.metric, {n: m.quantity for n, m in METRICS.items()}, object, "")
    timing = (kinds == RuleKind.significant.value) & (cases.comparison == "ratio").to_numpy(dtype=bool)
    sig = (cases[SIGNIFICANCE] == SIGNIFICANT).to_numpy(dtype=bool)
    oriented = cases[ORIENTED_RATIO].to_numpy(dtype=float, na_value=np.nan)
    # unchanged is what a test found no change in: a case nothing could test (no replicates, contended) is not
    quiet = (cases[SIGNIFICANCE] == NOT_SIGNIFICANT).to_numpy(dtype=bool) | (sig & (oriented == 1))
    untested = timing & (cases[SIGNIFICANCE] == UNCONFIRMED).to_numpy(dtype=bool)
    direction = judged.directions  # faster / slower: a timing case better / worse, as Compare shows it
    flags = pd.DataFrame(
        {
            "faster": timing & (direction == BETTER),
            "slower": timing & (direction == WORSE),
            "unchanged": timing & quiet,
            "untested": untested,
        },
        index=cases.index,
    )
    counts = _by_group(pd.concat([cases[GROUP], flags], axis=1), COUNTED)
    unmatched_cases = result.unmatched[
        ~folded_rows(result.unmatched)
    ]  # a failed decode is one case, not its tokens/s too
    regressed, unmatched = _sizes(found), _sizes(unmatched_cases)
    compared = _sizes(cases[~folded_rows(cases)])
    unconfirmed = _sizes(doubts[doubts.verdict == UNCONFIRMED_STATE]) if len(doubts) else {}
    contended = _sizes(doubts[doubts.doubt == BUSY]) if len(doubts) else {}
    suspected = _sizes(doubts[doubts.verdict == SUSPECTED]) if len(doubts) else {}
    # what a review can detect is said of the cases it tests: a contended case's spread is the machine's load
    detects = detectable_words(cases[timing & ~cases.contended.to_numpy(dtype=bool)], GROUP, review.fraction)
    evidence = evidence_by_group(cases[timing], GROUP)
    with_gains = cases.assign(improved=judged.verdicts.improved)
    memory_cases = with_gains[(quantity == "memory") & (kinds == RuleKind.growth.value)]
    correctness_cases = with_gains[quantity == "correctness"]
    rows = []
    q = review.compare
    for key in sorted(set(counts) | set(regressed) | set(unmatched)):
        hit = regressed.get(key, 0)
        got = counts.get(key, dict.fromkeys(COUNTED, 0))
        doubt, busy, suspect = unconfirmed.get(key, 0), contended.get(key, 0), suspected.get(key, 0)
        n = compared.get(key, 0)
        verdict = (
            _group_line(hit, doubt, busy, suspect, got)
            if n
            else nothing_compared(_in(unmatched_cases, key), q.baseline, q.candidate, key[0])
        )
        rows.append(
            {
                **dict(zip(GROUP, key)),
                "verdict": verdict,
                "compared": n,
                **got,
                "regressed": hit,
                "unconfirmed": doubt,
                "contended": busy,
                "suspected": suspect,
                "unmatched": unmatched.get(key, 0),
                "memory": _memory(_in(memory_cases, key), _in(found, key)),
                "correctness": _correctness(_in(correctness_cases, key), _in(found, key)),
                **_moved(_in(memory_cases, key), _in(found, key), "memory"),
                **_moved(_in(correctness_cases, key), _in(found, key), "correctness"),
                "detects": detects.get(key, ""),
                "evidence": evidence.get(key, NO_TIMING),
                "worst": worst(_in(found, key)),
                "doubts": named_doubts(_in(doubts, key)),
            }
        )
    fams = _timed(result.families, cases[timing], untested[timing])
    base, cand = review.compare.selectors()
    notes = list(result.notes) + condition_notes(engine, base, "baseline") + condition_notes(engine, cand, "candidate")
    total = len(found)
    n_doubt = int((doubts.verdict == UNCONFIRMED_STATE).sum()) if len(doubts) else 0
    n_busy = int((doubts.doubt == BUSY).sum()) if len(doubts) else 0
    n_suspect = int((doubts.verdict == SUSPECTED).sum()) if len(doubts) else 0
    n_untested = int(untested.sum())
    same_build = result.same == SAME_BUILD
    return {
        "baseline": review.compare.baseline,
        "candidate": review.compare.candidate,
        "scope": review.compare.scope,
        "threshold": review.threshold,
        "threshold_unit": "% worse",
        "rules": review.rules_text,
        "verdict": (AA_WORDS if same_build else "")
        + _overall_line(total, rows, n_doubt, n_busy, n_suspect, n_untested),
        "regressions": total,
        "same_build": same_build,
        "untested": n_untested,
        "unconfirmed": n_doubt,
        "contended": n_busy,
        "suspected": n_suspect,
        "groups": records(pd.DataFrame(rows, columns=GROUP_COLUMNS)),
        "families": records(fams.reindex(columns=FAMILY_COLUMNS)),
        "notes": notes,
        "confirm": confirm_command(review.params()) if len(doubts) else "",
    }


def _timed(families: pd.DataFrame, timing: pd.DataFrame, untested: np.ndarray) -> pd.DataFrame:
    """The families of the timing cases counted above (not bandwidth or tokens/s beside their timing), each
    saying how many of its cases were untested (`untested`: per timing case): a geomean of untested cases is a
    figure, not a tested change, and must not read as one beside counts without a faster case."""
    if families.empty:
        return families
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
    words = "untested (no replicates)" if untested >= cases else f"{untested} of {cases} cases untested (no replicates)"
    head, sep, tail = summary.partition(", baseline ")
    return f"{head} — {words}{sep}{tail}"


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


def _in(frame: pd.DataFrame, key: tuple) -> pd.DataFrame:
    """The rows of a small frame (memory, correctness, regressions) in one group."""
    if frame.empty:
        return frame
    hit = np.ones(len(frame), dtype=bool)
    for name, value in zip(GROUP, key):
        hit &= (frame[name].astype(str) == value).to_numpy()
    return frame[hit]


GAINS_NAMED = 3  # the largest gains a summary line names; the rest are counted


def _gains(compared: pd.DataFrame, word: str) -> str:
    """ "; 2 smaller: wan_vae memory_driver_peak 33× less memory, …" for the figures better beyond their rule."""
    won = compared[compared.improved.to_numpy(dtype=bool)] if len(compared) else compared
    if won.empty:
        return ""
    said = ", ".join(f"{r.workload} {r.metric} {r.change}" for r in won.head(GAINS_NAMED).itertuples())
    more = f", {len(won) - GAINS_NAMED} more" if len(won) > GAINS_NAMED else ""
    return f"; {len(won)} {word}: {said}{more}"


def _moved(compared: pd.DataFrame, found: pd.DataFrame, quantity: str) -> dict[str, int]:
    """{quantity}_regressed / {quantity}_gains: the group's figures of a quantity that regressed, and that are
    better beyond their rule (what its memory / correctness line says in words; the cards colour the line by them)."""
    if quantity == "correctness":
        hit = int((found.metric == "correctness").sum()) if len(found) else 0
    else:
        hit = (
            int(found.metric.map(lambda m: m in METRICS and METRICS[m].quantity == quantity).sum()) if len(found) else 0
        )
    gains = int(compared.improved.to_numpy(dtype=bool).sum()) if len(compared) else 0
    return {f"{quantity}_regressed": hit, f"{quantity}_gains": gains}


def _memory(compared: pd.DataFrame, found: pd.DataFrame) -> str:
    hit = found[found.metric.map(lambda m: m in METRICS and METRICS[m].quantity == "memory")] if len(found) else found
    if compared.empty:
        return "no memory figures compared"
    n = len(compared)
    gains = _gains(compared, "smaller")
    if hit.empty:
        return f"no memory regression ({n} figure{'s' * (n != 1)} compared{gains})"
    said = "; ".join(
        f"{r.workload} {r.metric} {format_value(r.baseline_median, r.unit)} → "
        f"{format_value(r.candidate_median, r.unit)}"
        for r in hit.itertuples()
    )
    return f"{len(hit)} memory regression{'s' * (len(hit) != 1)} of {n} figures: {said}{gains}"


def _correctness(mine: pd.DataFrame, found: pd.DataFrame) -> str:
    checked = len(mine.drop_duplicates(["workload", "case_key"])) if len(mine) else 0
    hit = found[found.metric == "correctness"] if len(found) else found
    if not checked:
        return "no correctness figures compared"
    gains = _gains(mine, "more accurate")
    if hit.empty:
        return f"no correctness regression ({checked} case{'s' * (checked != 1)} checked{gains})"
    said = "; ".join(f"{r.workload} ({r.why.removeprefix('correctness: ')})" for r in hit.itertuples())
    return f"{len(hit)} of {checked} cases regressed: {said}{gains}"


def _group_line(hit: int, doubt: int, busy: int, suspect: int, counts: dict[str, int]) -> str:
    """A group's verdict line (the summary's `verdict` field): its regressions, else what could not be confirmed, else what was not tested — never a
    bare "no regressions" over cases nothing tested."""
    apart = _doubt_words(doubt, busy, suspect)
    if hit:
        return f"{hit} regression{'s' * (hit != 1)}" + (f" ({apart})" if apart else "")
    if apart:
        return f"no confirmed regression ({apart})"
    untested, tested = counts["untested"], sum(counts[k] for k in ("faster", "slower", "unchanged"))
    if untested and not tested:
        return f"untested: {untested} timing case{'s' * (untested != 1)} without replicates"
    if untested:
        return f"no regression in {tested} tested case{'s' * (tested != 1)}; {untested} untested (no replicates)"
    return "no regressions"


def _doubt_words(doubt: int, busy: int, suspect: int = 0) -> str:
    """ "6 unconfirmed: 2 contended: other processes took the cores while they were timed; 4 with nothing to
    test them on; 1 suspected", or "" when nothing is doubtful."""
    untested = doubt - busy
    why = [
        f"{busy} contended: other processes took the cores while {'they were' if busy != 1 else 'it was'} timed"
        if busy
        else "",
        f"{untested} with nothing to test {'them' if untested != 1 else 'it'} on" if untested else "",
    ]
    words = f"{doubt} unconfirmed: " + "; ".join(w for w in why if w) if doubt else ""
    if suspect:
        words += ("; " if words else "") + f"{suspect} suspected (own test only)"
    return words


def _overall_line(
    total: int, rows: list[dict], unconfirmed: int = 0, busy: int = 0, suspect: int = 0, untested: int = 0
) -> str:
    empty = [r for r in rows if not r["compared"]]
    if len(empty) == len(rows):
        return "nothing compared"
    rows = [r for r in rows if r["compared"]]
    doubts = _doubt_words(unconfirmed, busy, suspect)
    apart = f"; {doubts} (counted apart)" if doubts else ""
    if untested:
        apart += f"; {untested} timing case{'s' * (untested != 1)} untested (no replicates)"
    if empty:
        apart += f"; {len(empty)} group{'s' * (len(empty) != 1)} with nothing compared"
    groups = f"{len(rows)} group{'s' * (len(rows) != 1)} (scope · device · dtype · compile)"
    if not total:
        return f"{'no confirmed regression' if doubts or untested else 'no regressions'} in {groups}{apart}"
    hit = sum(1 for r in rows if r["regressed"])
    return f"{total} regression{'s' * (total != 1)} in {hit} of {groups}{apart}"


def review_answer(engine: Engine, question: Question) -> dict[str, Any]:
    """A review as GET /api/v1/regressions returns it (and `mpsbench compare` reads it, locally or from a server):
    the parameters, the release summary, the regressions worst first, the notes."""
    judged = judge_review(engine, question)
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
        "regressions": records(found),
        "unconfirmed": records(doubts[doubts.verdict == UNCONFIRMED_STATE]),
        "suspected": records(doubts[doubts.verdict == SUSPECTED]),
        "status_changes": records(status_changes(result.cases, result.unmatched)),
    }
