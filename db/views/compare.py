"""The Compare page's adapter and its JSON twin (GET /api/v1/compare): the judged review (db.review) named for
people — each case row with its name and Trends link, its direction and regression flag (db.views.compare_chart),
the status changes and why nothing was compared, when nothing was."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from db.query.plain import records
from db.review.review import Review, judge_review
from db.review.status_changes import status_changes
from db.review.summary import release_summary
from db.views.compare_chart import case_rows
from db.views.empty_reason import empty_reason
from db.views.trends import FIELDS as TREND_FIELDS
from db.views.trends import trend_urls


def named_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Case rows with their name (bundle.case_names) and their Trends link (relative to the dashboard's root)
    added: what the page's table and the JSON twin lead with. Named on request, not in the cached comparison:
    a page names only the rows it shows."""
    links = trend_urls(cases[list(TREND_FIELDS)].itertuples(index=False, name=None))
    return cases.assign(case=case_names(cases), trend=links)


# the case's name, what is missing and why first; the identifying keys pinned at the end (as the case table)
UNMATCHED_VIEW = [
    "case",
    "scope",
    "metric",
    "reason",
    "baseline_status",
    "candidate_status",
    "baseline_median",
    "candidate_median",
    "unit",
    "baseline_figure",
    "candidate_figure",
    "message",
    "candidate_passed",
    "device",
    "workload",
    "dtype",
    "compile",
    "case_key",
]


def named_unmatched(unmatched: pd.DataFrame) -> pd.DataFrame:
    """The cases not compared, each led by its name (bundle.case_names: "conv2d · C=96 H=256 W=256 · fp16", never
    only its JSON key), for the page's "Not compared" table and the twin's "unmatched"."""
    return unmatched.assign(case=case_names(unmatched))[UNMATCHED_VIEW]


def compare_answer(engine: Engine, review: Review, rows: Callable[[pd.DataFrame], Any] = records) -> dict[str, Any]:
    """GET /api/v1/compare: the comparison, its judged rows and the release summary, from one judged review; each
    table as `rows` gives it (its records; the API keeps the frames and writes their records in slices)."""
    judged = judge_review(engine, review)
    result, q = judged.comparison, review.compare
    return {
        "baseline": q.baseline,
        "candidate": q.candidate,
        "scope": q.scope,
        "pool": q.pool,
        "filters": {k: list(v) for k, v in q.filters},
        "notes": result.notes,
        "empty_reason": empty_reason(result),  # null when cases were compared; else why none were
        "cases": rows(named_cases(case_rows(judged))),
        "families": rows(result.families),
        "status_changes": rows(status_changes(result.cases, result.unmatched)),
        "unmatched": rows(named_unmatched(result.unmatched)),
        "summary": release_summary(engine, judged),
    }
