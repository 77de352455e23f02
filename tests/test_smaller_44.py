"""Issue 44's smaller items, page by page, on issue 44's release store (tests/release_store.py: two Macs, 2.14.1 run
twice a round, 2.15.0rc1, a nightly; 10 worker processes), each under AppTest as a browser opens it. Every figure
a page shows for a case is checked against the judged review's (what Compare shows for it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit as st

from db.store.engine import open_store
from tests import release_store as r
from tests.page_store import open_page

SIDES = {"baseline": r.STABLE, "candidate": r.RC}


@pytest.fixture(scope="module")
def release_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("smaller44") / "release.duckdb"
    engine = open_store(path)
    r.release_store(engine)
    engine.dispose()
    return path


@pytest.fixture
def release(release_path, tmp_path, monkeypatch) -> Path:
    """The release store, served to the pages (a copy: a page that writes, the triage form, changes only it)."""
    path = tmp_path / "release.duckdb"
    shutil.copy(release_path, path)
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    return path


def _no_errors(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# -- 6. Runs: which run, where, of which build, when — before the hardware ---------------------------------------
def test_runs_lead_with_run_machine_chip_build_git_hash_and_start(release):
    at = open_page("runs.py")
    _no_errors(at)
    runs = at.dataframe[0].value
    assert list(runs.columns[:6]) == ["run_id", "machine_name", "chip", "torch_version", "git_hash", "started_at"]
    assert len(runs) == len(r.release_bundles()) and set(runs.git_hash) == {"a" * 10, "b" * 10, "c" * 10}
