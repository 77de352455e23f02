"""The Compare page's adapter and its JSON twin (GET /api/v1/compare): the judged review (db.review) named for
people — each case row with its name and Trends link, each side's value with its unit, its direction and
regression flag (db.views.release.compare_chart), regressions first and then the largest changes — the status changes and
why nothing was compared, when nothing was."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from bundle.case_names import case_names
from db.query.json_values import records
from db.review.cases.wording import with_side_values
from db.review.release.status_changes import status_changes
from db.review.release.summary import release_summary
from db.review.review import Review, cached_review
from db.views.browse.trends import FIELDS as TREND_FIELDS
from db.views.browse.trends import trend_urls
from db.views.empty_reason import empty_reason
from db.views.release.compare_chart import case_rows
from db.views.release.what_ran import compare_what_ran


def named_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Case rows with their name (bundle.case_names) and their Trends link (relative to the dashboard's root)
    added: what the page's table and the JSON twin lead with. Named on request, not in the cached comparison:
    a page names only the rows it shows."""
    links = trend_urls(cases[list(TREND_FIELDS)].itertuples(index=False, name=None))
    return cases.assign(case=case_names(cases), trend=links)


# what a person reads first: which case and figure, each side's value with its unit (8.108 GiB, not 8706170470.4),
# the change and its verdict; then the chip, the trend link and the test; the raw medians and the identifying keys
# pinned at the end. At 1440 px the first six are in view (the name, the figures and the change were past the
# window's edge behind the trend link, the scope and the direction)
CASE_VIEW = [
    "case",
    "metric",
    "baseline_value",
    "candidate_value",
    "change",
    "direction",
    "regression",
    "scope",
    "trend",
    "significance",
    "ci_low",
    "ci_high",
    "p_value",
    "derived",
    "replicates",
    "caveats",
    "baseline_median",
    "candidate_median",
    "unit",
    "change_unit",
    "baseline_iqr",
    "baseline_n",
    "candidate_iqr",
    "candidate_n",
    "ratio",
    "oriented_ratio",
    "difference",
    "device",
    "workload",
    "dtype",
    "compile",
    "case_key",
]
DB_PER_E = 10 / math.log(10)  # a PSNR change of d dB is the error's power × 10^(d/10): |d| / DB_PER_E on the log scale


def change_size(cases: pd.DataFrame) -> np.ndarray:
    """Each case's change on one scale, |log| of its factor: a ratio's oriented ratio, a dB difference as its power
    factor, another difference (bytes outside the allocator) as candidate / baseline; NaN where there is none."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.log(cases.oriented_ratio.to_numpy(dtype=float, na_value=np.nan)))
        diff = cases.difference.to_numpy(dtype=float, na_value=np.nan)
        base = cases.baseline_median.to_numpy(dtype=float, na_value=np.nan)
        cand = cases.candidate_median.to_numpy(dtype=float, na_value=np.nan)
        other = np.abs(np.log(cand / base))
    other = np.where((base > 0) & (cand > 0), other, np.nan)
    size = np.where(cases.unit.to_numpy() == "dB", np.abs(diff) / DB_PER_E, other)
    return np.where(np.isfinite(ratio), ratio, size)


def case_order(cases: pd.DataFrame) -> pd.DataFrame:
    """Compare's case rows as its table lists them: the regressions first, then every case by the size of its
    change (change_size), largest first; a case with no size last. Cheap (no names): a page names the rows it
    shows (shown_cases)."""
    size = change_size(cases)
    keys = (np.where(np.isfinite(size), -size, np.inf), ~cases.regression.to_numpy(dtype=bool))
    return cases.iloc[np.lexsort(keys)]


def shown_cases(cases: pd.DataFrame) -> pd.DataFrame:
    """Case rows named (named_cases) with each side's median in its unit, as words (`baseline_value`,
    `candidate_value`: db.review.cases.wording.format_value, the words the Regressions page uses)."""
    return with_side_values(named_cases(cases))


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
    judged = cached_review(engine, review)
    result, q = judged.comparison, review.compare
    return {
        "baseline": q.baseline,
        "candidate": q.candidate,
        "scope": q.scope,
        "pool": q.pool,
        "filters": {k: list(v) for k, v in q.filters},
        "notes": result.notes,
        "empty_reason": empty_reason(result),  # null when cases were compared; else why none were
        # the page's order and words, each case with what changed in what ran (the case detail's words)
        "cases": rows(compare_what_ran(engine, q, shown_cases(case_order(case_rows(judged))))),
        "families": rows(result.families),
        "status_changes": rows(status_changes(result.cases, result.unmatched)),
        "unmatched": rows(named_unmatched(result.unmatched)),
        "summary": release_summary(engine, judged),
    }
