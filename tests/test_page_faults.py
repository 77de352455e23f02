"""Pages under faults (Streamlit's AppTest): a damaged store file and an unexpected error each show one short
st.error, never a traceback or a server path; the page works again once the fault is gone."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import db.store.engine
import db.views.release.overview
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from tests.bundles import make_bundle

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = str(ROOT / "pages" / "navigation.py")
TIMEOUT_S = 90  # generous: the test machine is shared and loaded


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "store.duckdb"
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    monkeypatch.setattr(db.store.engine, "_shared", {})
    st.cache_resource.clear()
    st.cache_data.clear()
    yield path
    for engine in db.store.engine._shared.values():
        engine.dispose()


def _page(file: str) -> AppTest:
    at = AppTest.from_file(SCRIPT, default_timeout=TIMEOUT_S)
    at.run()
    at.switch_page(file)
    at.query_params.clear()  # as a browser's page change does
    return at.run()


def _shown(at: AppTest) -> str:
    return " ".join(
        str(e.value) for kind in ("error", "markdown", "text", "code", "caption") for e in getattr(at, kind)
    )


def test_a_damaged_store_is_one_short_error_on_every_page_then_the_page_works_again(store_path):
    store_path.write_bytes(b"not a duckdb file" * 1000)
    for file in ("overview.py", "runs.py", "compare.py", "matrix.py"):
        at = _page(file)
        assert not at.exception, (file, [e.value for e in at.exception])
        errors = [e.value for e in at.error]
        assert errors and all("damaged or not a DuckDB database" in e for e in errors), (file, errors)
        assert str(store_path.parent) not in _shown(at)
    store_path.unlink()  # the operator restores the store (here: a new one)
    engine = open_store(store_path)
    ingest_bundle(engine, make_bundle())
    engine.dispose()
    at = _page("overview.py")
    assert not at.exception and not at.error
    assert [m.value for m in at.metric] == ["1"]


def test_an_unexpected_error_is_a_short_message_without_the_traceback(store_path, monkeypatch):
    open_store(store_path).dispose()

    def broken(*args, **kwargs):
        raise RuntimeError("boom in /srv/mpsbench/secret.py")

    monkeypatch.setattr(db.views.release.overview, "overview_of", broken)
    at = _page("overview.py")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This page failed on the server (the error is logged there). Reload, or try another page."
    ]
    assert "/srv" not in _shown(at) and "Traceback" not in _shown(at)


def test_a_page_without_its_own_guard_is_caught_by_the_navigations(store_path, monkeypatch):
    """The Upload page has no guarded() of its own: navigation.py runs every page under one."""
    open_store(store_path).dispose()

    def broken(*args, **kwargs):
        raise ValueError("boom in /srv/mpsbench/upload.py")

    monkeypatch.setattr(st, "title", broken)
    at = _page("upload.py")
    assert not at.exception
    assert len(at.error) == 1 and "/srv" not in _shown(at)
