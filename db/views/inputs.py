"""A request's inputs, for the pages' pickers and the API's schema: the selectors and split tags stored, and the
rules a URL parameter is read by (db.query.params, db.query.selectors), one reading for a page and its twin.

The vocabulary below (filters, patterns, ranges) is the lower layers' own, named here once so that the pages and
api/openapi.py describe and check parameters without importing below db.views."""

from __future__ import annotations

from typing import Iterable

import pandas as pd
from sqlalchemy import Engine

from db.query import browse, params, runs, selectors
from db.query.compare import pivot
from db.review import comparison

SELECTOR_SYNTAX = selectors.SYNTAX  # a selector in words, as every error names it
SELECTOR_PATTERN = selectors.SELECTOR_PATTERN
THRESHOLD_PERCENT = params.THRESHOLD_PERCENT  # (low, high) of a regression threshold, in percent worse
RUN_FILTERS = runs.RUN_FILTERS  # the Runs list's filters, as GET /api/v1/runs takes them
COMPARE_FILTERS = pivot.FILTERS  # a comparison's case filters
SCOPES = comparison.SCOPES  # pair results on the same machine or the same chip
CORRECTNESS_METRICS = browse.CORRECTNESS_METRICS


def available_selectors(engine: Engine) -> pd.DataFrame:
    """The pickers' selectors: builds in build order, then tag values, each with its run count."""
    return selectors.available_selectors(engine)


def check_selector(text: str | None, field: str) -> None:
    """A selector as a URL gives it, refused (StoreError 400 naming `field`) when it is malformed."""
    selectors.parse_selector(text, field)


def tag_keys(engine: Engine) -> list[str]:
    """The tag keys stored: a page splits one build's runs by one of them (A/B runs)."""
    return browse.tag_keys(engine)


def run_filter_options(engine: Engine) -> dict[str, list[str]]:
    """Each run filter's stored values, for the Runs page's pickers."""
    return runs.run_filter_options(engine)


def one_of(name: str, value: str, allowed: Iterable[str]) -> str:
    """`value` if it is one of `allowed`, else a StoreError 400 naming `name` and the choices."""
    return params.one_of(name, value, allowed)


def int_param(name: str, text: str | None, default: int, low: int, high: int) -> int:
    """A whole number from `low` to `high` (absent or empty: `default`), else a StoreError 400."""
    return params.int_param(name, text, default, low, high)


def threshold_percent(text: str | None) -> float:
    """A regression threshold in percent worse, read as GET /api/v1/regressions reads it (absent: 5)."""
    return params.threshold_percent(text)


def as_build(builds: list[str], value: str) -> str:
    """A build as Compare writes it ("torch=2.15.0rc1") as Memory and Correctness name it ("2.15.0rc1 (rc)")."""
    return params.as_build(builds, value)
