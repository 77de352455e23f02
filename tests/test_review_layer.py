"""The review layer (db/review): one judged review per question and data version, shared by every page and
answer; a Compare or Regressions render judges its cases once; an upload or a retraction makes a new answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import db.review.review as review_module
from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery
from db.review.review import JudgedReview, Review, cached_review
from db.store.engine import open_store
from tests.bundles import make_bundle
from tests.page_store import SCRIPT, TIMEOUT_S, page_store

QUERY = CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE})


@pytest.fixture
def counted(monkeypatch) -> list[int]:
    """Counts db.review.rules.case_verdicts calls made through the judged review (the only place a review is judged)."""
    calls = []
    real = review_module.case_verdicts

    def case_verdicts(cases, threshold, rules):
        calls.append(len(cases))
        return real(cases, threshold, rules)

    monkeypatch.setattr(review_module, "case_verdicts", case_verdicts)
    review_module._JUDGED.clear()
    return calls


def test_one_question_of_one_data_version_is_judged_once(tmp_path, counted):
    engine = open_store(tmp_path / "s.duckdb")
    seed_store(engine)
    first = cached_review(engine, Review(QUERY))
    assert isinstance(first, JudgedReview) and len(counted) == 1 and counted[0] == len(first.cases) > 0
    assert cached_review(engine, QUERY) is first  # a bare query is the default review
    assert cached_review(engine, first) is first and len(counted) == 1
    stricter = cached_review(engine, Review(QUERY, threshold=50.0))
    assert stricter is not first and len(counted) == 2
    assert stricter.verdicts.regressed.sum() <= first.verdicts.regressed.sum()
    ingest_bundle(engine, make_bundle())  # new data (an rc run on another machine): a new answer
    assert cached_review(engine, Review(QUERY)) is not first and len(counted) == 3
    engine.dispose()


@pytest.mark.parametrize("page", ["compare.py", "regressions.py"])
def test_a_page_render_judges_its_review_once(tmp_path: Path, monkeypatch, counted, page):
    """With the memo off, every cached_review call judges anew: a page that judged twice would show it."""
    page_store(tmp_path, monkeypatch, seed_store)
    monkeypatch.setattr("db.review.cache.Memo.get", lambda self, engine, question, compute: compute())
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
    at.run()  # the default page (Overview) judges its own review: not counted
    at.switch_page(page)
    at.query_params.clear()  # as a browser's page change does (st.switch_page clears them)
    for key, value in {"baseline": BASELINE, "candidate": CANDIDATE}.items():
        at.query_params[key] = value
    counted.clear()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(counted) == 1, f"{page} judged its review {len(counted)} times"
