"""Regressions, triage save/load, and the Markdown/CSV export (escaping) on the seeded store."""

from __future__ import annotations

import pytest

import db.store.engine as store
from benchmarks.stores.seed import seed_store
from db.errors import StoreError
from db.review.comparison import CompareQuery
from db.review.release.listing import regressions
from db.store.writers.triage import NOTE_KEY, save_note
from db.views.exports.review_export import md_escape, review_csv, review_markdown

QUERY = CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})


@pytest.fixture
def engine(tmp_path):
    engine = store.open_store(tmp_path / "r.duckdb")
    seed_store(engine)
    yield engine
    engine.dispose()


def test_regressions_worst_first_with_threshold(engine):
    found = regressions(engine, QUERY)
    slow = found[found.why == "significant slowdown"]
    assert set(slow.workload) == {"linear"} and len(slow) == 3  # the 1.10× slower shape on each machine
    assert (slow.worse_by.between(0.08, 0.12)).all()
    assert set(found[found.why.str.startswith("correctness")].scope) == {"air-1"}
    assert found.worse_by.is_monotonic_decreasing and set(found.state) == {"new"}
    assert regressions(engine, QUERY, threshold=0.2).query("why == 'significant slowdown'").empty


def test_triage_latest_note_wins_and_bad_fields_are_named(engine):
    row = regressions(engine, QUERY).iloc[-1]
    key = {k: row[k] for k in NOTE_KEY}
    save_note(engine, QUERY.baseline, QUERY.candidate, key, "confirmed", "ana", "first")
    save_note(engine, QUERY.baseline, QUERY.candidate, key, "expected", "bo", "a | `pipe` <b>x</b>", "https://x.test/1")
    again = regressions(engine, QUERY)
    hit = again[(again.scope == row.scope) & (again.case_key == row.case_key) & (again.metric == row.metric)].iloc[0]
    assert (hit.state, hit.author) == ("expected", "bo")
    with pytest.raises(StoreError) as err:
        save_note(engine, QUERY.baseline, QUERY.candidate, key, "wontfix", "", link="javascript:alert(1)")
    assert err.value.status == 422 and {p.field for p in err.value.problems} == {"state", "author", "link"}
    md = review_markdown(again, QUERY.baseline, QUERY.candidate)
    assert "<b>" not in md and "a \\| \\`pipe\\` &lt;b&gt;x&lt;/b&gt;" in md and "baseline torch=2.14.1" in md
    assert "µs" in md and review_csv(again).splitlines()[0].startswith('"case",')  # the case's name leads
    noted = review_markdown(again, QUERY.baseline, QUERY.candidate, ["Library versions differ (a | b)"])
    assert noted.splitlines()[2:4] == ["- Library versions differ (a \\| b)", ""]


def test_md_escape_neutralises_markup():
    assert md_escape("a|b`c<script>") == "a\\|b\\`c&lt;script&gt;"
