"""The judged review's rows for the pages that compare two builds on a few metrics (Memory, Correctness): the one
figure a case has on Compare — its side medians of the pooled clean samples, its change in words, its direction
and verdict by the metric's rule (db.review.rules) — never a page's own recomputation. A build label of those pages
("2.15.0rc1 (rc)", or split by a tag) is the exact set of runs behind it: `runs:` selectors, so the figures are
Compare's for the same runs."""

from __future__ import annotations

from typing import Sequence

import pandas as pd
from sqlalchemy import Engine

from db.review.comparison import CompareQuery
from db.review.review import Review, cached_review


def runs_selector(records: pd.DataFrame, label: str) -> str:
    """The `runs:` selector of a build label: the runs of `records` (a `build` and a `run_id` column) under it."""
    ids = sorted(set(records.loc[records["build"] == label, "run_id"].astype(str)))
    return "runs:" + ",".join(ids)


def judged_rows(
    engine: Engine, baseline: str, candidate: str, metrics: Sequence[str], workload: str = ""
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the compared cases of these metrics with their verdicts, the cases not compared) of baseline → candidate
    (selector texts), machine scope, as Compare judges them."""
    params = {"baseline": baseline, "candidate": candidate, "scope": "machine", "metric": ",".join(metrics)}
    if workload:
        params["workload"] = workload
    judged = cached_review(engine, Review(CompareQuery.from_params(params)))
    return pd.concat([judged.cases, judged.verdicts], axis=1), judged.comparison.unmatched
