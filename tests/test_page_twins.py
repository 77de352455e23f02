"""Every page beside its JSON twin, on the seeded store: the page (under Streamlit's AppTest, URL parameters set)
and GET /api/v1/<page> with the same parameters show the same figures, because both call one view function."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import streamlit as st
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

import db.store.engine
import pages.navigation
from app import api_routes
from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
from bundle.provenance import UNAVAILABLE
from db.query.json_values import records
from pages.navigation import PAGES

ISO = re.compile(r"\d{4}-\d\d-\d\dT")
ROOT_SCRIPT = pages.navigation.__file__
SIDES = {"baseline": BASELINE, "candidate": CANDIDATE}
TREND = {
    "workload": "softmax",
    "case_key": '{"rows":1,"vocab":128256}',
    "dtype": "float32",
    "compile": "eager",
    "metric": "op_time",
}
# page file → (URL parameters, twin path, [(the page's n-th table, the twin's key)]); -1 counts from the end
CASES = {
    "overview.py": ({}, "overview", [(0, "verdict.summary.groups"), (1, "latest"), (2, "status"), (3, "warnings")]),
    "runs.py": ({"build": "2.14.1", "chip": "Apple M3 Ultra"}, "runs", [(0, "runs")]),
    "compare.py": (
        {**SIDES, "scope": "chip"},
        "compare",
        [(0, "summary.groups"), (1, "status_changes"), (2, "families"), (3, "cases"), (-1, "unmatched")],
    ),
    "regressions.py": ({**SIDES, "threshold": "5"}, "regressions", [(0, "summary.groups"), (1, "regressions")]),
    "trends.py": (TREND, "trends", [(0, "points")]),
    "matrix.py": (
        {"metric": "op_time", "baseline": "2.14.1", "rows": "dtype", "compile": "eager"},
        "matrix",
        [(0, "cells")],
    ),
    "memory.py": (
        {"split_tag": "role", "workload": "vae_tiled_decode"},
        "memory",
        [(None, "table")],
    ),  # a panel per machine
    "correctness.py": (
        {"metric": "psnr_vs_cpu"},
        "correctness",
        [(0, "faster_but_wrong"), (1, "slopes"), (2, "records")],
    ),
    "claims.py": (SIDES, "claims", [(None, "claims")]),  # one table per claim, together the twin's list
    "noise.py": ({"precision": "3", "metric": "op_time"}, "noise", [(0, "groups")]),  # studio-1 ran each build twice
}
TWIN_PARAMS: dict[str, dict[str, str]] = {}  # the page and its twin read every parameter alike (threshold in %)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("twins") / "seed.duckdb"
    engine = db.store.engine.open_store(path)
    seed_store(engine)
    engine.dispose()
    return path


@pytest.fixture
def client(seeded, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(seeded))
    monkeypatch.setattr(db.store.engine, "_shared", {})
    st.cache_resource.clear()
    st.cache_data.clear()
    yield TestClient(Starlette(routes=api_routes()), client=("127.0.0.1", 50000), base_url="http://127.0.0.1")
    for engine in db.store.engine._shared.values():
        engine.dispose()


def _plain(value):
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 9)
    return value


def _same(shown: pd.DataFrame, twin: list[dict], what: str) -> None:
    """Same rows in the same order, and every column the page shows equal to the twin's (JSON-plain values)."""
    page_rows = records(shown)
    assert len(page_rows) == len(twin), what
    assert page_rows, f"{what}: the seeded store should give rows here"
    for i, (mine, theirs) in enumerate(zip(page_rows, twin)):
        for column, value in mine.items():
            assert column in theirs, f"{what}: the twin has no column {column}"
            if isinstance(value, str) and ISO.match(theirs[column] or ""):
                value, theirs_value = pd.Timestamp(value), pd.Timestamp(theirs[column])  # ISO forms differ
            else:
                theirs_value = theirs[column]
            if isinstance(value, (list, dict)) or isinstance(theirs_value, (list, dict)):
                continue  # JSON columns are rendered as text by the page
            if theirs_value is None and value == UNAVAILABLE:
                continue  # a machine field the run did not record: null in JSON, spelled out on the page
            if isinstance(value, str) and isinstance(theirs_value, int) and not isinstance(theirs_value, bool):
                theirs_value = str(theirs_value)  # a column holding "unavailable" shows its counts as text
            assert _plain(value) == _plain(theirs_value), f"{what} row {i} column {column}"


# the seeded store holds no sweep: the Sweeps page meets its twin on a sweep's runs in tests/test_sweep_view.py
ELSEWHERE = {"sweeps.py"}
WRITES = {"upload.py", "signin.py"}  # pages that write (or sign in to write): no read twin


@pytest.mark.parametrize("file", [f for f, _, _ in PAGES if f not in WRITES and f not in ELSEWHERE])
def test_every_page_shows_its_json_twins_figures(client, file):
    params, twin_path, tables = CASES[file]
    at = AppTest.from_file(ROOT_SCRIPT, default_timeout=120)
    at.run()
    at.switch_page(file)
    at.query_params.clear()  # as a browser's page change does (st.switch_page clears them)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error or file == "correctness.py", [e.value for e in at.error]
    got = client.get(f"/api/v1/{twin_path}", params={**params, **TWIN_PARAMS.get(file, {})})
    assert got.status_code == 200, got.text
    body = got.json()
    for index, key in tables:
        shown = pd.concat([d.value for d in at.dataframe]) if index is None else at.dataframe[index].value
        twin = body
        for part in key.split("."):  # "summary.groups": the release summary's table
            twin = twin[part]
        _same(shown, twin, f"{file} table {index} vs {twin_path}.{key}")
    if file == "overview.py":
        assert at.metric[0].value == str(body["runs"]) == "12"


def test_upload_has_no_read_twin_its_twin_is_the_upload_route():
    assert [f for f, _, _ in PAGES if f not in CASES and f not in ELSEWHERE] == sorted(WRITES, reverse=True)
    assert any(r.path == "/api/v1/runs" and "POST" in r.methods for r in api_routes())


@pytest.mark.parametrize(
    "url,field",
    [
        ("/api/v1/trends?metric=speed", "metric"),
        ("/api/v1/matrix?rows=machine", "rows"),
        ("/api/v1/memory?colour=red", "colour"),
        ("/api/v1/correctness?metric=op_time", "metric"),
        ("/api/v1/overview?x=1", "x"),
        ("/api/v1/noise?precision=0", "precision"),
        ("/api/v1/noise?metric=psnr_vs_cpu", "metric"),
    ],
)
def test_twins_refuse_bad_parameters_naming_them(client, url, field):
    got = client.get(url)
    assert got.status_code == 400
    body = got.json()
    assert body["ok"] is False and body["errors"][0]["field"] == field
