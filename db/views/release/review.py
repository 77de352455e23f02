"""A review as a page or a twin names it: read from URL parameters, judged once per data version (db.review), and
the status changes (passed → failed, newly supported) Compare lists beside it."""

from __future__ import annotations

from typing import Mapping

import pandas as pd
from sqlalchemy import Engine

from db.review import comparison
from db.review.release import status_changes
from db.review.review import JudgedReview, Review, cached_review


def review_of(params: Mapping[str, str | None]) -> Review:
    """The review a URL names: baseline, candidate, scope, filters, threshold and rule overrides (a bad one is a
    StoreError 400 naming it)."""
    return Review.from_params(params)


def judged_comparison(engine: Engine, params: Mapping[str, str | None]) -> JudgedReview:
    """Compare's review, judged once per data version: its rows, chart and cards read the one judgement."""
    return cached_review(engine, Review(comparison.CompareQuery.from_params(params)))


def status_rows(cases: pd.DataFrame, unmatched: pd.DataFrame) -> pd.DataFrame:
    """The cases whose status changed between the sides (db.review.release.status_changes)."""
    return status_changes.status_changes(cases, unmatched)


def status_words(changes: pd.DataFrame) -> str:
    """The status changes counted in words, kind by kind."""
    return status_changes.status_words(changes)
