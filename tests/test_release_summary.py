"""The release summary (db.review.release.summary) on the known-verdict store (tests/verdict_store.py): counts, memory and
correctness verdicts and notes computed here from the store's constants, and the same summary in the API twin
and at the top of the Markdown export."""

from __future__ import annotations

import pandas as pd
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine as store
from api.errors import guard_routes
from db.review.release.listing import regressions
from db.review.release.summary import release_summary, review_answer
from db.review.review import Review
from db.views.exports.review_export import md_escape, review_markdown
from tests import verdict_store as v

PARAMS = {"baseline": v.BASELINE, "candidate": v.CANDIDATE}


@pytest.fixture(scope="module")
def engine(verdict_engine):
    """The verdict store (tests/conftest.py) for every test here."""
    return verdict_engine


def test_counts_and_verdicts_per_group(engine):
    summary = release_summary(engine, Review.from_params(PARAMS))
    groups = {g["dtype"]: g for g in summary["groups"]}
    assert set(groups) == {"bfloat16", "float32"} and all(g["scope"] == "mac-a" for g in groups.values())
    linear = groups["bfloat16"]  # linear op_time 1.5× slower over both runs; its bandwidth is derived, not counted
    assert (linear["compared"], linear["regressed"], linear["faster"], linear["slower"]) == (1, 1, 0, 0)
    rest = groups["float32"]  # two cases: softmax (op time unchanged, its correctness regressed) and the VAE
    assert (rest["compared"], rest["faster"], rest["slower"], rest["unchanged"], rest["unmatched"]) == (2, 0, 0, 0, 0)
    # counted by case: the VAE's driver peak (10×), reserved peak (+10 %, +204.8 MiB) and PSNR are one case, the
    # softmax's correctness another; five regressed figures in all
    assert rest["regressed"] == 2 and summary["regressions"] == 3 and summary["regression_rows"] == 5
    assert rest["memory"].startswith("2 memory regressions of 3 figures") and "10.000 GiB" in rest["memory"]
    assert "memory_allocated_peak" not in rest["memory"]  # 3 %, 30.72 MiB: under the floor
    assert rest["correctness"].startswith("2 of 2 cases regressed")
    assert summary["verdict"].startswith("3 cases regressed on 1 of 1 machine")
    [answer] = summary["answers"]
    assert (answer["scope"], answer["answer"], answer["regressed"], answer["compared"]) == ("mac-a", "regression", 3, 3)
    assert len(answer["regressions"]) == 3  # every regressed case by name, its figures joined


def test_families_are_timing_only_and_name_their_baseline(engine):
    summary = release_summary(engine, Review.from_params(PARAMS))
    families = {(f["workload"], f["metric"]): f for f in summary["families"]}
    assert set(families) == {("linear", "op_time"), ("softmax", "op_time")}  # no bandwidth, memory or correctness
    linear = families[("linear", "op_time")]
    assert linear["geomean"] == pytest.approx(v.LINEAR_US[False] / v.LINEAR_US[True], rel=0.01)
    assert linear["unit"] == "×" and f"baseline {v.BASELINE}" in linear["summary"]


def test_battery_and_low_power_runs_are_noted(tmp_path):
    engine = store.open_store(tmp_path / "power.duckdb")
    from db.ingest.core import ingest_bundle

    bundles = v.verdict_bundles()
    bundles[3] = bundles[3].model_copy(
        update={"machine": bundles[3].machine.model_copy(update={"power_source": "battery", "low_power_mode": True})}
    )
    for bundle in bundles:
        ingest_bundle(engine, bundle.model_dump_json().encode())
    notes = release_summary(engine, Review.from_params(PARAMS))["notes"]
    assert "candidate: 1 of 2 runs on battery power: their figures may be slower" in notes
    assert any(n.startswith("candidate: 1 of 2 runs in Low Power Mode") for n in notes)
    assert not any(n.startswith("baseline:") for n in notes)
    engine.dispose()


def test_api_and_export_carry_the_same_summary(engine, monkeypatch):
    import api.query as query_api

    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    review = Review.from_params(PARAMS)
    local = review_answer(engine, review)
    for path in ("/api/v1/regressions", "/api/v1/compare"):
        body = client.get(path, params=PARAMS).json()
        assert body["summary"] == local["summary"], path
    md = review_markdown(regressions(engine, review), v.BASELINE, v.CANDIDATE, local["notes"], local["summary"])
    head = md.splitlines()[:5]
    assert head[2].startswith("## Release summary") and md_escape(local["summary"]["verdict"]) in head[4]
    assert md.index("Release summary") < md.index("| scope | workload |")  # the summary, then the regressions
    assert "figures: psnr\\_vs\\_cpu 60 dB → 20 dB" in md
    assert len(pd.DataFrame(local["regressions"])) == local["summary"]["regression_rows"] == 5
