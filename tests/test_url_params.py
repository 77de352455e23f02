"""Every page's URL parameters: a bad value is named in a plain st.error (never a traceback), and the page and
the API read `threshold` the same way (percent)."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from api.errors import guard_routes
from benchmarks.stores.seed import seed_store
from db.errors import StoreError
from db.query.params import int_param, one_of, threshold_percent
from db.store.engine import open_store
from tests.test_dashboard_apptest import SCRIPT, TIMEOUT_S

B, C = "torch=2.14.1", "torch=2.15.0rc1"


@pytest.fixture(scope="module")
def seeded_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("params") / "store.duckdb"
    engine = open_store(path)
    seed_store(engine)
    engine.dispose()
    return path


def test_threshold_is_percent_and_refuses_fractions_and_junk():
    assert threshold_percent(None) == 5.0 and threshold_percent("12.5") == 12.5 and threshold_percent("1") == 1.0
    for bad in ("abc", "0.05", "0", "-3", "101", "nan", "inf"):
        with pytest.raises(StoreError) as found:
            threshold_percent(bad)
        assert found.value.status == 400 and str(found.value).startswith("threshold: a percentage from 1 to 100")


def test_int_and_choice_name_the_parameter_and_the_rule():
    assert int_param("chart_cases", "", 60, 5, 500) == 60 and int_param("chart_cases", " 7 ", 60, 5, 500) == 7
    with pytest.raises(StoreError, match=r"chart_cases: a whole number from 5 to 500 \(got 'abc'\)"):
        int_param("chart_cases", "abc", 60, 5, 500)
    with pytest.raises(StoreError, match=r"rows: must be one of chip, dtype \(got 'x'\)"):
        one_of("rows", "x", ["chip", "dtype"])


BAD = [  # (page, parameters, the parameter the error must name)
    ("compare.py", {"baseline": B, "candidate": C, "chart_cases": "abc"}, "chart_cases"),
    ("compare.py", {"baseline": B, "candidate": C, "all_cases": "maybe"}, "all_cases"),
    ("compare.py", {"baseline": B, "candidate": C, "scope": "galaxy"}, "scope"),
    ("compare.py", {"baseline": B, "candidate": C, "metric": "speed"}, "metric"),
    ("compare.py", {"baseline": "nonsense", "candidate": C}, "baseline"),
    ("compare.py", {"baseline": B, "candidate": "torch=9.9"}, "candidate"),
    ("regressions.py", {"baseline": B, "candidate": C, "threshold": "abc"}, "threshold"),
    ("regressions.py", {"baseline": B, "candidate": C, "threshold": "0.05"}, "threshold"),
    ("regressions.py", {"baseline": B, "candidate": C, "rules": "speed.percent=1"}, "rules"),
    ("regressions.py", {"baseline": B, "candidate": C, "rules": "op_time.percent=abc"}, "rules"),
    ("matrix.py", {"metric": "speed"}, "metric"),
    ("matrix.py", {"rows": "planets"}, "rows"),
    ("matrix.py", {"baseline": "9.9.9"}, "baseline"),
    ("memory.py", {"baseline": "9.9.9 (stable)"}, "baseline"),
    ("memory.py", {"candidate": "nope"}, "candidate"),
    ("trends.py", {"workload": "nope"}, "workload"),
    ("trends.py", {"workload": "softmax", "metric": "speed"}, "metric"),
    ("trends.py", {"workload": "softmax", "case_key": "{bad json"}, "case_key"),
    ("correctness.py", {"baseline": "9.9.9"}, "baseline"),
    ("correctness.py", {"candidate": "nope"}, "candidate"),
    ("correctness.py", {"metric": "speed"}, "metric"),
    ("compare.py", {"baseline": B, "candidate": C, "pool": "maybe"}, "pool"),
    ("runs.py", {"run_id": "nope"}, "run_id"),  # named, not silently dropped
]


@pytest.mark.parametrize("file,params,named", BAD, ids=[f"{f}:{','.join(p)}" for f, p, _ in BAD])
def test_a_bad_url_value_is_named_never_a_traceback(seeded_path, monkeypatch, file, params, named):
    monkeypatch.setenv("MPSBENCH_DB", str(seeded_path))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
    at.run()
    at.switch_page(file)
    at.query_params.clear()  # as a browser's page change does
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert sum(e.startswith(f"{named}:") for e in errors) == 1, errors  # once
    assert not any("Traceback" in e or "/work/" in e for e in errors)


def test_a_problem_the_message_already_says_is_not_repeated():
    from db.errors import Problem
    from db.query.params import bad

    assert (
        str(bad("chart_cases", "a whole number from 5 to 500", "abc"))
        == "chart_cases: a whole number from 5 to 500 (got 'abc')"
    )
    assert str(StoreError(400, "refused", [Problem("x", "must be y")])) == "refused (x: must be y)"


def test_the_api_reads_threshold_in_percent_like_the_page(seeded_path, monkeypatch):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    import api.query as query_api
    from db.review.comparison import CompareQuery
    from db.review.release.listing import regressions

    engine = open_store(seeded_path)
    monkeypatch.setattr(query_api, "_engine", lambda: engine)
    client = TestClient(Starlette(routes=guard_routes(query_api.ROUTES)))
    got = client.get("/api/v1/regressions", params={"baseline": B, "candidate": C, "threshold": "5"})
    body = got.json()
    assert got.status_code == 200 and (body["threshold"], body["threshold_unit"]) == (5.0, "% worse")
    expected = regressions(engine, CompareQuery.from_params({"baseline": B, "candidate": C}), 0.05)
    assert len(body["regressions"]) == len(expected) > 0  # 5 means 5 %, not 500 %
    refused = client.get("/api/v1/regressions", params={"baseline": B, "candidate": C, "threshold": "0.05"})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "threshold"
    engine.dispose()
