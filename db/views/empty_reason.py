"""Why a comparison compared nothing, in words a page prints instead of a count: "0 regressions" over zero
compared cases is a false all-clear. Compare, Regressions and their JSON twins call `empty_reason`; Overview and
Correctness say `same_build` where their sides are one build."""

from __future__ import annotations

from db.review.comparison import SAME_RUNS, ComparisonResult

NEXT_BUILD = (
    "For a second build: `mpsbench sweep --build 'torch==2.14.1' --build python=/path/to/other/env/bin/python` "
    "on the same Mac runs both, interleaved (or `mpsbench run` in the other build's environment); then "
    "push or upload its bundle."
)


def _listed(values) -> str:
    names = sorted({str(v) for v in values})
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "") if names else "none"


def same_build(selector: str) -> str:
    """What every page with a Baseline and a Candidate says when both are one build: no verdict, and why."""
    return (
        f"Baseline and candidate are the same build ({selector}): nothing to compare. Pick a different candidate "
        f"build (or tag) to compare against. {NEXT_BUILD}"
    )


def empty_reason(result: ComparisonResult) -> str | None:
    """None when at least one case was compared between two different sides; else the reason, naming the sides
    and what each had (a side against itself compares nothing: every ratio is 1 by construction)."""
    q = result.query
    if q.baseline == q.candidate:
        return same_build(q.baseline)
    if result.same == SAME_RUNS:
        return (
            f"Nothing compared: {q.baseline} and {q.candidate} select the same runs, so every ratio would be 1. "
            f"Pick a different candidate build (or tag). {NEXT_BUILD}"
        )
    if len(result.cases):
        return None
    filters = "; ".join(f"{k} in {', '.join(v)}" for k, v in q.filters)
    where = f" (filters: {filters})" if filters else ""
    rest = result.unmatched
    if rest.empty:
        return (
            f"Nothing compared: neither {q.baseline} nor {q.candidate} has results{where}. Widen the filters "
            "or pick builds with runs."
        )
    base = rest[rest.baseline_status != "absent"].scope
    cand = rest[rest.candidate_status != "absent"].scope
    if base.empty or cand.empty:
        empty_side = q.baseline if base.empty else q.candidate
        return f"Nothing compared: {empty_side} has no results{where}; the other side's are listed under Not compared."
    shared = set(base) & set(cand)
    if not shared:
        hint = " Chip scope pools machines of one chip (scope=chip)." if q.scope == "machine" else ""
        return (
            f"Nothing compared: the sides share no {q.scope}. Baseline {q.baseline} ran on {_listed(base)}; "
            f"candidate {q.candidate} on {_listed(cand)}.{hint}"
        )
    return (
        f"Nothing compared: no case has an ok figure on both sides{where}; {len(rest)} case(s) are listed under "
        "Not compared with why (one side only, unsupported, error, unavailable, fallback)."
    )
