"""GET /api/v1/runs and the Runs page (one function, db.query.runs.list_runs) carry the build's short git hash:
an rc wheel and the final of one version read apart."""

from __future__ import annotations

import json

from db.ingest.core import ingest_bundle
from db.query.runs import list_runs
from db.store.engine import open_store
from db.views.browse.runs import RUN_VIEW
from tests.bundles import make_bundle

FINAL, RC = "a" * 40, "b" * 40


def test_two_builds_of_one_version_differ_by_their_short_git_hash(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    for git in (FINAL, RC, None):
        build = {
            "torch_version": "2.15.0",
            "channel": "stable",
            "python_version": "3.12.8",
            "collector_version": "0.2.0",
            **({"git_hash": git} if git else {}),
        }
        ingest_bundle(engine, json.dumps(make_bundle(schema_version=3, build=build)).encode(), "t")
    runs = list_runs(engine, {})
    engine.dispose()
    assert sorted(runs.git_hash.fillna("")) == ["", "aaaaaaaaaa", "bbbbbbbbbb"]
    assert RUN_VIEW.index("git_hash") == RUN_VIEW.index("torch_version") + 1  # read beside the version
