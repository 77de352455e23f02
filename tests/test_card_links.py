"""Every link a verdict card makes opens a working page: a regression's trend, and for a correctness row (several
figures, no one trend: Trends refused its "correctness" metric) the Correctness page of the review's builds."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
from db.review.comparison import CompareQuery
from db.review.review import Review
from db.store.engine import open_store
from db.views.release.verdict_cards import verdict_cards
from tests.test_dashboard_apptest import SCRIPT, TIMEOUT_S


@pytest.fixture(scope="module")
def seeded_links(tmp_path_factory):
    path = tmp_path_factory.mktemp("links") / "store.duckdb"
    engine = open_store(path)
    seed_store(engine)
    links = set()
    for scope in ("chip", "machine"):
        query = CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE, "scope": scope})
        links |= {(w["text"], w["link"]) for card in verdict_cards(engine, Review(query)).cards for w in card["worst"]}
    engine.dispose()
    return path, sorted(links)


def test_a_correctness_row_links_to_correctness_and_every_card_link_opens_its_page(seeded_links, monkeypatch):
    path, links = seeded_links
    pages = {text.split(" · ")[-1].split(" ")[0]: urlsplit(link).path for text, link in links}
    assert pages == {"op_time": "trends", "correctness": "correctness"}, links  # the seed has both kinds
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    for _, link in {(urlsplit(link).path, link) for _, link in links}:  # one of each page is enough
        parts = urlsplit(link)
        at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
        at.run()
        at.switch_page(f"{parts.path}.py")
        at.query_params.clear()
        for key, value in parse_qsl(parts.query):
            at.query_params[key] = value
        at.run()
        refused = [e.value for e in at.error if not e.value.startswith("faster but wrong")]  # the seed's finding
        assert not at.exception and not refused, (link, [e.value for e in at.exception], refused)
        if parts.path == "correctness":  # the review's builds, not the page's default pair
            sides = {s.label: s.value for s in at.selectbox}
            assert (sides["Baseline build"], sides["Candidate build"]) == ("2.14.1 (stable)", "2.15.0rc1 (rc)")
