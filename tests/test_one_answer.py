"""One answer everywhere (issue 44): on the release store (tests/release_store.py: two Macs, 2.14.1 run twice a
round, 2.15.0rc1, a nightly; 10 worker processes), every figure a page, card, export or JSON twin shows for a case
is the judged review's figure for it, to the last digit; the counts are of cases (3 planted regressions: 3); and
triaging one regression as noise changes every count that included it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from api.errors import guard_routes
from bundle.units import convert
from db.review.comparison import CompareQuery
from db.review.release.answer import CASE
from db.review.review import Review, cached_review
from db.review.rules import REGRESSION
from db.store.engine import open_store
from db.store.writers.triage import NOTE_KEY, save_note
from tests import release_store as r

SIDES = {"baseline": r.STABLE, "candidate": r.RC}
CHIP, MACHINE = {**SIDES, "scope": "chip"}, {**SIDES, "scope": "machine"}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = open_store(tmp_path_factory.mktemp("one-answer") / "release.duckdb")
    r.release_store(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def api(engine, monkeypatch):
    import api.query as query_api

    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    return lambda path, **params: client.get(path, params=params).json()


def _judged(engine, params: dict):
    judged = cached_review(engine, Review(CompareQuery.from_params(params)))
    return judged.cases.join(judged.verdicts)


def _key(row) -> tuple:
    return tuple(str(row[k]) for k in CASE + ["metric"])


def test_the_home_page_asks_the_release_question_and_counts_cases(api):
    body = api("/api/v1/overview")
    verdict = body["verdict"]
    assert (verdict["baseline"], verdict["candidate"], verdict["scope"]) == (r.STABLE, r.RC, "chip")
    answers = {a["title"]: a for a in verdict["answers"]}
    regressed = {
        (chip, w["text"].split(" · ")[0] + (" M=4" if "M=4" in w["text"] else ""))
        for chip, scope in r.CHIP_SCOPE.items()
        for w in answers[scope]["regressions"]
    }
    assert regressed == {(chip, name.replace("linear M=4", "linear M=4")) for chip, name in r.REGRESSED}
    assert verdict["summary"]["regressions"] == 3 and verdict["verdict"].startswith("3 cases regressed on 2 of 2 chips")
    for scope in r.CHIP_SCOPE.values():  # the wins in view beside the regressions, each chip's own
        assert answers[scope]["answer"] == "regression"
        won = " ".join(w["text"] for w in answers[scope]["wins"])
        assert "softmax" in won and "constant_pad" in won and "33.33× less memory" in won and "+19.89 dB" in won
        assert "decode · Qwen3" in won
    # the sdpa case's first-call time (1.63×, one figure a run, no spread) is the same case, never a 4th regression
    m4 = answers[r.CHIP_SCOPE[r.M4]]
    assert len(m4["regressions"]) == 2 and m4["regressed"] == 2


def test_two_releases_read_older_to_newer_on_the_home_page(tmp_path):
    from db.ingest.core import ingest_bundle
    from db.views.release.overview import overview

    engine = open_store(tmp_path / "two.duckdb")
    for bundle in r.release_bundles()[:8]:  # rounds of one Mac: 2.14.1 twice a round
        version = bundle.build.torch_version
        if version == "2.15.0rc1":  # the final release: same channel as 2.14.1
            bundle = bundle.model_copy(
                update={"build": bundle.build.model_copy(update={"torch_version": "2.15.0", "channel": "release"})}
            )
        if version.startswith("2.16"):
            continue
        ingest_bundle(engine, bundle.model_dump_json().encode())
    verdict = overview(engine).verdict
    engine.dispose()
    assert (verdict["baseline"], verdict["candidate"]) == ("torch=2.14.1", "torch=2.15.0")  # never newer → older
    assert verdict["answers"][0]["answer"] == "regression"  # the planted rc slowdowns read as slowdowns


def test_every_view_shows_the_judged_figure_of_each_case(engine, api):
    chip = {_key(row): row for _, row in _judged(engine, CHIP).iterrows()}
    compare = api("/api/v1/compare", **CHIP)
    assert (
        compare["summary"]
        == api("/api/v1/regressions", **CHIP)["summary"]
        == api("/api/v1/overview")["verdict"]["summary"]
    )
    for row in compare["cases"]:
        mine = chip[_key(row)]
        for name in ("baseline_median", "candidate_median", "oriented_ratio", "ci_low", "ci_high", "p_value"):
            same = (row[name] is None and (mine[name] is None or np.isnan(mine[name]))) or row[name] == mine[name]
            assert same, (name, row["case"], row["metric"], row[name], mine[name])
        assert row["direction"] == mine["direction"] and row["regression"] == (mine["verdict"] == REGRESSION)
    # Trends: each build's point on a chip is Compare's side figure (its clean processes' pooled samples)
    timing = [k for k, m in chip.items() if m["metric"] in ("op_time", "decode_time")]
    assert len(timing) >= 10
    for key in timing:
        mine = chip[key]
        trend = api("/api/v1/trends", **dict(zip(("workload", "case_key", "dtype", "compile", "metric"), key[2:])))
        points = {(p["chip"], p["torch_version"]): p for p in trend["points"]}
        assert points[(mine["scope"], "2.14.1")]["median"] == mine["baseline_median"]
        assert points[(mine["scope"], "2.15.0rc1")]["median"] == mine["candidate_median"]
    # Memory and Correctness: machine scope, the same runs as Compare's selectors
    machine = {_key(row): row for _, row in _judged(engine, MACHINE).iterrows()}
    memory = api("/api/v1/memory")
    assert memory["baseline"].startswith("2.14.1") and memory["candidate"].startswith("2.15.0rc1")  # one default
    peaks = [m for m in memory["table"] if m["figure"] == "driver total peak"]
    assert len(peaks) == 2
    for row in peaks:
        mine = machine[
            (
                row["machine"],
                "mps",
                row["workload"],
                row["case_key"],
                row["dtype"],
                row["compile"],
                "memory_driver_peak",
            )
        ]
        assert row["baseline_GiB"] == convert(mine["baseline_median"], "B", "GiB")
        assert row["candidate_GiB"] == convert(mine["candidate_median"], "B", "GiB")
        assert (row["change"], row["direction"]) == (mine["change"], mine["direction"])
    slopes = api("/api/v1/correctness", metric="psnr_vs_input")["slopes"]
    assert len(slopes) == 2
    for row in slopes:
        mine = machine[
            (
                row["machine_name"],
                "mps",
                row["workload"],
                row["case_key"],
                row["dtype"],
                row["compile"],
                "psnr_vs_input",
            )
        ]
        assert (row["baseline_median"], row["candidate_median"]) == (mine["baseline_median"], mine["candidate_median"])
        assert row["direction"] == "improved" and mine["direction"] == "better"
    # Claims: a claim's measured figure on a case is the chip-scope review's
    claims = api("/api/v1/claims", **SIDES)["claims"]
    measured = [c for c in claims if c["measured"] is not None and c["case_key"]]
    assert {c["workload"] for c in measured} >= {"softmax", "vae_tiled_decode"}
    for c in measured:
        mine = chip[(c["chip"], "mps", c["workload"], c["case_key"], c["dtype"], c["compile"], c["metric"])]
        assert c["measured"] == mine["oriented_ratio"] and mine["change"] in c["measured_words"]
        model = c["workload"] in ("decode", "vae_tiled_decode", "vae_roundtrip")  # random-weight configs here
        assert c["stand_in"].startswith("random-weight stand-in") if model else c["stand_in"] == ""
        assert not c["status"].startswith("reproduced") or not model or c["status"] == "reproduced on a stand-in"


def test_the_exports_carry_the_review_figures(engine, api):
    from db.review.release.listing import doubtful, regressions
    from db.views.exports.ci_summary import job_summary
    from db.views.exports.review_export import review_csv, review_markdown

    review = Review(CompareQuery.from_params(CHIP))
    found, doubts = regressions(engine, review), doubtful(engine, review)
    answer = api("/api/v1/regressions", **CHIP)
    md = review_markdown(found, r.STABLE, r.RC, answer["notes"], answer["summary"], (), doubts)
    csv = review_csv(found, doubts)
    job = job_summary(answer, review.params())
    chip = {_key(row): row for _, row in _judged(engine, CHIP).iterrows()}
    for row in answer["regressions"]:
        mine = chip[_key(row)]
        assert (row["baseline_median"], row["candidate_median"]) == (mine["baseline_median"], mine["candidate_median"])
        for text in (md, job):
            assert row["baseline_value"] in text and row["candidate_value"] in text and row["change"] in text
        assert repr(mine["baseline_median"]) in csv or f"{mine['baseline_median']}" in csv
    assert "3 cases regressed" in md and "3 cases regressed" in job.splitlines()[0]


def test_triage_as_noise_takes_the_case_out_of_every_count(tmp_path, monkeypatch):
    """One regression (the M3 Ultra's linear M=4) marked noise on the Regressions page (machine scope): the chip
    answer the home page shows, its counts, the twins and the exports all drop it, and show it as triaged."""
    import api.query as query_api
    from db.views.release.overview import overview

    engine = open_store(tmp_path / "triage.duckdb")
    r.release_store(engine)
    machine = _judged(engine, MACHINE)
    [row] = machine[(machine.verdict == REGRESSION) & (machine.scope == "studio-m3u")].to_dict("records")
    save_note(engine, r.STABLE, r.RC, {k: row[k] for k in NOTE_KEY}, "noise", "release-manager", "a cold run")
    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    for params in (CHIP, MACHINE):
        summary = client.get("/api/v1/regressions", params=params).json()["summary"]
        assert (summary["regressions"], summary["triaged"]) == (2, 1), params["scope"]
        assert summary["verdict"].startswith("2 cases regressed on 1 of 2") and "; 1 triaged" in summary["verdict"]
    verdict = overview(engine).verdict
    answers = {a["title"]: a for a in verdict["answers"]}
    m3 = answers[r.CHIP_SCOPE[r.M3]]
    assert m3["answer"] == "win" and m3["regressed"] == 0 and m3["triaged"] == 1
    assert m3["triage"][0]["text"].endswith("— noise (release-manager: a cold run)")
    assert json.dumps(verdict).count("noise") >= 1 and answers[r.CHIP_SCOPE[r.M4]]["regressed"] == 2
    engine.dispose()
    assert not math.isnan(row["baseline_median"])
