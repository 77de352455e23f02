"""The derived summaries' upkeep after uploads (db.store.writers.upkeep): an API upload is answered before its group is
summarised and leaves no mark once the answer is done; A/A figures read without the write lock never bring back
a retracted run's pairs; a burst of upkeeps runs at most once behind the running one."""

from __future__ import annotations

import json
import math
import threading

import pandas as pd
import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient

import api.upload
import db.store.engine
import db.store.writers.upkeep as upkeep
from api.errors import guard_routes
from db.ingest.core import ingest_bundle
from db.query.read import read_data_version
from db.review.comparison import CompareQuery, compare
from db.store.derived import aa_pairs, side_cases
from db.store.engine import WRITE_LOCK, open_store
from db.store.writers.retract import retract_run
from tests.bundles import make_bundle, make_result

TOKEN = "tok-upkeep"


def _marks(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM side_stale")).scalar()


def _side_rows(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM side_cases")).scalar()


def _run(run_id: str, scale: float) -> bytes:
    results = [
        make_result(workload="softmax", params={"n": i}, samples=[scale * (10 + i) * (1 + 0.01 * k) for k in range(5)])
        for i in range(4)
    ]
    return json.dumps(make_bundle(run_id=run_id.rjust(32, "0"), results=results)).encode()


def test_an_api_upload_is_summarised_once_its_answer_is_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "api.duckdb"))
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", f"ci={TOKEN}")
    monkeypatch.setattr(db.store.engine, "_shared", {})
    engine = db.store.engine.shared_store()
    seen: list[int] = []
    real = upkeep._run

    def run(e):  # what the store held when the upkeep began: the upload's rows and its mark, committed
        seen.append(_marks(e))
        return real(e)

    monkeypatch.setattr(upkeep, "_run", run)
    try:
        client = TestClient(Starlette(routes=guard_routes(api.upload.ROUTES)), client=("127.0.0.1", 50000))
        reply = client.post(
            "/api/v1/runs",
            content=_run("a1", 1.0),
            headers={"content-type": "application/json", "authorization": f"Bearer {TOKEN}"},
        )
        assert reply.status_code == 201, reply.json()
        # the test client returns once the background task is done: it ran after the answer, with the mark there
        assert seen == [2] and _marks(engine) == 0 and _side_rows(engine) == 8  # machine and chip kinds
        again = client.post(
            "/api/v1/runs",
            content=_run("a1", 1.0),
            headers={"content-type": "application/json", "authorization": f"Bearer {TOKEN}"},
        )
        assert again.status_code == 200 and seen == [2]  # nothing stored: no upkeep
    finally:
        engine.dispose()


def test_figures_read_before_a_retraction_are_not_written_after_it(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    try:
        for run_id, scale in (("a1", 1.0), ("a2", 1.5), ("a3", 1.0)):
            ingest_bundle(engine, _run(run_id, scale))
        with engine.connect() as conn, conn.begin():
            figures = aa_pairs.due_figures(conn)  # the upkeep's snapshot: every pair, a2's included
        assert figures and all(f[3] == 12 for f in figures)  # 3 pairs of runs × 4 cases
        retract_run(engine, "a2".rjust(32, "0"), "ran on battery", "admin", admin=True)  # recomputed at once
        with WRITE_LOCK, engine.begin() as conn:
            aa_pairs.write_figures(conn, figures)
            pairs, quantile = conn.execute(text("SELECT pairs, quantile_log FROM aa_noise")).one()
        assert pairs == 4  # a1–a3 only: the figures from before the retraction were refused
        assert quantile == pytest.approx(0.0, abs=1e-12)  # a1 and a3 measured alike
    finally:
        engine.dispose()


def test_a_burst_of_upkeeps_runs_once_behind_the_running_one(tmp_path, monkeypatch):
    engine = open_store(tmp_path / "s.duckdb")
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow(e):
        runs.append(1)
        started.set()
        release.wait(10)
        return None

    monkeypatch.setattr(upkeep, "_run", slow)
    try:
        first = threading.Thread(target=upkeep.catch_up_soon, args=(engine,))
        first.start()
        assert started.wait(10)
        waiting = threading.Thread(target=upkeep.catch_up_soon, args=(engine,))
        waiting.start()
        while upkeep._WAITING._value:  # until it waits behind the first (CPython's Semaphore keeps its count there)
            threading.Event().wait(0.01)
        for _ in range(5):  # while one waits, these return at once: it will see their marks
            upkeep.catch_up_soon(engine)
        release.set()
        first.join(10)
        waiting.join(10)
        assert len(runs) == 2
    finally:
        engine.dispose()


def test_groups_are_summarised_in_batches_of_bounded_results_a_larger_group_alone():
    sizes = {1: 90_000, 2: 90_000, 3: 50_000, 4: 500_000, 5: 0, 6: 10}
    # RESULTS_PER_WRITE = 200,000: the 500,000-result group is read in 3 slices of its cases
    assert upkeep._batches(sizes) == [([1, 2], 1), ([3], 1), ([4], 3), ([5, 6], 1)]
    assert upkeep._batches({}) == []


@pytest.mark.parametrize("kind", ["machine", "chip"])
def test_a_group_read_in_slices_of_its_cases_gives_the_rows_of_one_read(tmp_path, kind):
    engine = open_store(tmp_path / "s.duckdb")
    try:
        for i, scale in enumerate((1.0, 1.02, 0.99)):  # three runs of one group, 40 cases, some warned or failed
            results = [
                make_result(
                    workload=("softmax", "matmul")[c % 2],
                    params={"n": c},
                    dtype=("float32", "bfloat16")[c % 3 == 0],
                    warnings=["noisy"] if c % 5 == 0 else [],
                    samples=[scale * (10 + c) * (1 + 0.01 * k) for k in range(5)],
                )
                for c in range(40)
            ]
            results[7] = make_result(params={"n": 7}, status="error", samples=[], message="it broke")
            ingest_bundle(engine, json.dumps(make_bundle(run_id=f"e{i}".rjust(32, "0"), results=results)).encode())
        with engine.connect() as conn:
            [group] = {g for k, g in side_cases.marks(conn) if k == kind}
            whole = side_cases.summarise(conn, kind, [group])
            for parts in (2, 5, 64):  # 64 slices: most hold one case or none
                sliced = side_cases.summarise(conn, kind, [group], parts)
                # every value to the last bit (NaN where one read has NaN), in the same row order
                pd.testing.assert_frame_equal(sliced.to_pandas(), whole.to_pandas(), check_exact=True)
        assert whole.num_rows == 40
    finally:
        engine.dispose()


def test_a_group_whose_runs_are_all_retracted_loses_its_rows_and_its_mark(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    try:
        ingest_bundle(engine, _run("a1", 1.0))
        upkeep.catch_up(engine)
        assert _side_rows(engine) == 8
        retract_run(engine, "a1".rjust(32, "0"), "wrong machine", "admin", admin=True)
        assert upkeep.catch_up(engine).side_groups == 2
        assert (_side_rows(engine), _marks(engine)) == (0, 0)
    finally:
        engine.dispose()


def test_new_aa_figures_reach_a_review_judged_before_them(tmp_path):
    # a review judged between an upload and its upkeep read the old A/A figures; it is memoised per data
    # version, so the upkeep's new figures must change the version or that answer stays (a lake's replicas
    # answered one comparison with 7 pairs and 14)
    engine = open_store(tmp_path / "s.duckdb")
    try:
        for run_id, scale in (("a1", 1.0), ("a2", 1.02)):
            ingest_bundle(engine, _run(run_id, scale))
        newer = json.loads(_run("c1", 1.3))
        newer["build"] |= {"torch_version": "2.16.0.dev20261201"}
        ingest_bundle(engine, json.dumps(newer).encode())
        question = CompareQuery("torch=2.15.0rc1", "torch=2.16.0.dev20261201")
        before = set(compare(engine, question).cases["noise"])
        assert before == {"no A/A data"}  # the pair a1–a2 is stored, its group's figures not yet computed
        version = read_data_version(engine)
        assert upkeep.catch_up(engine).aa_groups == 1
        caught = read_data_version(engine)
        assert caught != version
        after = set(compare(engine, question).cases["noise"])
        spread = 100 * math.log(1.02) / math.sqrt(2)  # each of the 4 pairs: ln 1.02; a run's σ is the pair's / √2
        assert after == {f"A/A: its softmax group on this chip, 4 pairs (run spread ±{spread:.1f} %; the case has 1)"}
        assert upkeep.catch_up(engine).aa_groups == 0
        assert read_data_version(engine) == caught  # nothing due: the memoised answers stand
    finally:
        engine.dispose()
