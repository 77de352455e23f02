"""Every JSON twin on a store of one build (op_time runs only): a 2xx answer (empty where there is nothing to
compare) or a 4xx naming the field, never a 500. The correctness twin used to merge an empty frame's float64
`build` with the runs' strings and answer 500."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine
from app import api_routes
from db.ingest.core import ingest_bundle
from tests.dashboard_bundles import known_bundle, raw

BUILD = "2.14.1"
ONE = {"baseline": f"torch={BUILD}", "candidate": f"torch={BUILD}"}


def _twin_paths() -> list[str]:
    from api import health, openapi, query, sweeps

    return sorted(
        {
            r.path
            for r in query.ROUTES + sweeps.ROUTES + health.ROUTES + openapi.ROUTES
            if "GET" in (r.methods or ()) and "{" not in r.path
        }
    )


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("one_build") / "one.duckdb"
    engine = db.store.engine.open_store(path)
    for index in range(2):  # two runs of the one build, op_time only
        bundle = known_bundle(index, BUILD, "stable", 10.0 + index, 60.0, True)
        bundle = bundle.model_copy(update={"results": [r for r in bundle.results if r.metric == "op_time"]})
        ingest_bundle(engine, raw(bundle), "test")
    engine.dispose()
    patch = pytest.MonkeyPatch()
    patch.setenv("MPSBENCH_DB", str(path))
    patch.setenv("MPSBENCH_UPLOAD_TOKENS", "t=tok")
    patch.delenv("MPSBENCH_READ_TOKENS", raising=False)
    patch.setattr(db.store.engine, "_shared", {})
    yield TestClient(Starlette(routes=api_routes()), base_url="http://127.0.0.1:8501")
    for engine in db.store.engine._shared.values():
        engine.dispose()
    patch.undo()


def test_the_twins_are_all_listed():
    assert {"/api/v1/correctness", "/api/v1/compare", "/api/v1/overview", "/api/v1/noise"} <= set(_twin_paths())


@pytest.mark.parametrize("params", [{}, ONE], ids=["no parameters", "the one build on both sides"])
@pytest.mark.parametrize("path", _twin_paths())
def test_each_twin_answers_a_one_build_store_without_a_500(client, path, params):
    answer = client.get(path, params=params)
    assert answer.status_code < 500, answer.text
    body = answer.json()
    if answer.status_code >= 400:  # the one JSON error shape, naming a field
        assert body["ok"] is False and body["errors"] and body["errors"][0]["field"], body
    else:
        assert body.get("ok", True) is not False


def test_the_correctness_twin_is_empty_not_failed(client):
    body = client.get("/api/v1/correctness").json()
    assert body["ok"] is True and body["faster_but_wrong"] == [] and body["records"] == []
