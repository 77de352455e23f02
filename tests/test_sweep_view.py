"""The dashboard knows a sweep: GET /api/v1/sweeps (+ one sweep: builds, runs in order, A/A pairs, comparisons
with the rounds as replicates), the Sweeps page, and the comparison its link opens. Bundles made as the sweep
tags them (the end-to-end sweep is tests/test_sweep_run.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from api.errors import guard_routes
from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, compute_compare
from db.views.browse.sweeps import sweep_detail, sweeps
from tests.bundles import make_bundle, make_result

ROOT = Path(__file__).resolve().parents[1]
SWEEP = "0123456789ab"
BASE = ("2.14.1", "2c5d0e7a1b3f4c6d8e9fa0b1c2d3e4f5a6b7c8d9", "release", "2.14.1 (release, 2c5d0e7)")
RC = ("2.15.0", "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "rc", "2.15.0 (rc, 1a2b3c4)")
# round 1: base, rc, base(A/A); round 2 rotated: rc, base(A/A), base — op_time µs per run
PLAN = [
    (1, 1, 1, 0, BASE, 10.0),
    (1, 2, 2, 0, RC, 8.0),
    (1, 3, 1, 1, BASE, 10.1),
    (2, 1, 2, 0, RC, 8.1),
    (2, 2, 1, 1, BASE, 9.9),
    (2, 3, 1, 0, BASE, 10.2),
]


def _ingest(engine, sweep: str = SWEEP) -> list[str]:
    ids = []
    for rnd, pos, spec, aa, (version, git, channel, label), us in PLAN:
        run_id = uuid.uuid4().hex
        build = {
            "torch_version": version,
            "git_hash": git,
            "channel": channel,
            "python_version": "3.11.7",
            "collector_version": "0.1.0",
            "install_source": "https://download.pytorch.org/whl/test/cpu",
        }
        tags = {
            "sweep": sweep,
            "round": str(rnd),
            "position": str(pos),
            "spec": str(spec),
            "aa": str(aa),
            "build": label,
        }
        ingest_bundle(
            engine,
            make_bundle(
                run_id=run_id,
                build=build,
                tags=tags,
                started_at=f"2026-12-03T10:{rnd}{pos}:00+00:00",
                ended_at=f"2026-12-03T11:{rnd}{pos}:00+00:00",
                results=[make_result(samples=[us, us * 1.01, us * 0.99])],
            ),
        )
        ids.append(run_id)
    return ids


def test_sweep_list_and_detail(engine):
    ids = _ingest(engine)
    ingest_bundle(engine, make_bundle())  # a run outside any sweep
    listed = sweeps(engine)
    assert listed.to_dict("records")[0] | {"started_at": None} == {
        "sweep": SWEEP,
        "started_at": None,
        "machine_name": "m3u",
        "n_builds": 2,
        "rounds": 2,
        "n_runs": 6,
        "aa_pairs": 2,
        "builds": "2.14.1 (release, 2c5d0e7) | 2.15.0 (rc, 1a2b3c4)",
    }
    detail = sweep_detail(engine, SWEEP.upper())
    assert detail.runs[["round", "position", "spec", "aa"]].values.tolist() == [
        [r, p, s, a] for r, p, s, a, _, _ in PLAN
    ]
    builds = detail.builds.set_index("spec")
    assert builds.loc[1, "n_runs"] == 2 and builds.loc[1, "n_aa_runs"] == 2 and builds.loc[2, "n_runs"] == 2
    assert builds.loc[1, "selector"] == "runs:" + ",".join(sorted([ids[0], ids[5]]))
    assert detail.aa_pairs.values.tolist() == [[1, ids[0], ids[2]], [2, ids[5], ids[4]]]
    ab, aa = detail.comparisons.to_dict("records")
    assert ab["baseline"] == builds.loc[1, "selector"] and ab["candidate"] == builds.loc[2, "selector"]
    assert ab["link"].startswith("/compare?baseline=runs%3A") and "vs 2.14.1 (release, 2c5d0e7)" in ab["what"]
    assert aa["what"].startswith("A/A: 2.14.1 (release, 2c5d0e7) against itself, 2 rounds")
    # the comparison the link opens: the rounds are the replicates (one run each), every sample pooled per side
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": ab["baseline"], "candidate": ab["candidate"]})
    )
    case = result.cases.iloc[0]
    assert (case.baseline_pooled, case.candidate_pooled) == (2, 2)
    assert case.oriented_ratio == pytest.approx(10.1 / 8.05, rel=0.02)


def test_bad_and_unknown_sweeps(engine):
    from db.errors import StoreError

    _ingest(engine)
    with pytest.raises(StoreError) as err:
        sweep_detail(engine, "not-a-sweep")
    assert err.value.status == 400 and err.value.problems[0].field == "sweep"
    with pytest.raises(StoreError) as err:
        sweep_detail(engine, "ffffffffffff")
    assert err.value.status == 404


def test_api_twin(engine, monkeypatch):
    from api import sweeps as api_sweeps

    _ingest(engine)
    monkeypatch.setattr(api_sweeps, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(api_sweeps.ROUTES)))
    listed = client.get("/api/v1/sweeps").json()
    assert listed["ok"] and [s["sweep"] for s in listed["sweeps"]] == [SWEEP]
    one = client.get(f"/api/v1/sweeps/{SWEEP}").json()
    assert [b["label"] for b in one["builds"]] == ["2.14.1 (release, 2c5d0e7)", "2.15.0 (rc, 1a2b3c4)"]
    assert len(one["runs"]) == 6 and len(one["aa_pairs"]) == 2 and len(one["comparisons"]) == 2
    bad = client.get("/api/v1/sweeps/..%3Bdrop")
    assert bad.status_code in (400, 404) and bad.json()["ok"] is False
    missing = client.get("/api/v1/sweeps/abcdef123456")
    assert missing.status_code == 404 and missing.json()["errors"][0]["field"] == "sweep"


def test_sweeps_page(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.page_store import page_store

    page_store(tmp_path, monkeypatch, _ingest, "page.duckdb")
    at = AppTest.from_file(str(ROOT / "pages" / "navigation.py"), default_timeout=90)
    at.run()
    at.switch_page("sweeps.py")
    at.query_params.clear()  # as a browser's page change does
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    cells = {str(v) for frame in at.dataframe for v in frame.value.astype(str).to_numpy().ravel()}
    assert SWEEP in cells and "2.15.0 (rc, 1a2b3c4)" in cells
    assert any(c.startswith("/compare?baseline=runs%3A") for c in cells)
    # the page shows its JSON twin's figures (both call db.views.browse.sweeps)
    import db.store.engine
    from app import api_routes
    from tests.test_page_twins import _same

    monkeypatch.setattr(db.store.engine, "_shared", {})
    client = TestClient(Starlette(routes=api_routes()), base_url="http://127.0.0.1")
    listed, one = client.get("/api/v1/sweeps").json(), client.get(f"/api/v1/sweeps/{SWEEP}").json()
    for index, body, key in [
        (0, listed, "sweeps"),
        (1, one, "builds"),
        (2, one, "comparisons"),
        (3, one, "aa_pairs"),
        (4, one, "runs"),
    ]:
        _same(at.dataframe[index].value, body[key], f"sweeps.py table {index} vs {key}")
    for opened in db.store.engine._shared.values():
        opened.dispose()
