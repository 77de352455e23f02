"""What the server does while it starts (app.preload), and the pages' typed tooltips."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text

import app
from db.store import engine as store
from db.store.tables import STORE_VERSION
from pages.parts.charts import tooltips


def test_preload_opens_the_store_of_this_process(tmp_path, monkeypatch):
    path = tmp_path / "served.duckdb"
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    monkeypatch.setattr(store, "_shared", {})
    app.preload()
    assert path.exists() and str(path) in store._shared
    assert store.shared_store() is store._shared[str(path)]  # the pages and the API get the opened engine
    store._shared[str(path)].dispose()


def test_preload_leaves_a_refused_store_to_the_pages(tmp_path, monkeypatch, capsys):
    path = tmp_path / "future.duckdb"
    engine = store.open_store(path)
    with engine.begin() as conn:
        conn.execute(text("UPDATE meta SET value=:v WHERE key='store_version'"), {"v": str(STORE_VERSION + 1)})
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    monkeypatch.setattr(store, "_shared", {})
    app.preload()  # does not raise: the server still starts, and each page shows the store's error
    assert "the store did not open at start" in capsys.readouterr().err
    assert store._shared == {}


def test_tooltips_carry_the_type_altair_would_infer():
    data = pd.DataFrame(
        {"name": ["a"], "value": [1.5], "count": [3], "flag": [True], "when": pd.to_datetime(["2026-12-03"])}
    )
    got = [t.to_dict() for t in tooltips(data, "name", "value", "count", "flag", "when")]
    assert got == [
        {"field": "name", "type": "nominal"},
        {"field": "value", "type": "quantitative"},
        {"field": "count", "type": "quantitative"},
        {"field": "flag", "type": "nominal"},
        {"field": "when", "type": "temporal"},
    ]


def test_the_default_page_answers_at_its_own_path_too():
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    client = TestClient(Starlette(routes=app.default_page_alias()), follow_redirects=False)
    moved = client.get("/overview?machine=studio&scope=chip")
    assert moved.status_code == 307 and moved.headers["location"] == "./?machine=studio&scope=chip"
    assert client.get("/overview").headers["location"] == "./"
    assert client.get("/compare").status_code == 404  # only the default page is aliased; Streamlit serves the rest
