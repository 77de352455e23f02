"""The smaller holes: DELETE bounds its body before reading it, a retracted run's re-upload is a 409 naming the
retraction, subnormal samples are refused at ingest, and a restore killed midway leaves no store behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine
from app import api_routes
from db.store.writers.backup import backup, restore
from tests.bundles import make_bundle, make_result

ROOT = Path(__file__).resolve().parent.parent
AUTH = {"authorization": "Bearer tok-alice"}


@pytest.fixture
def store(tmp_path, monkeypatch):
    for name in (
        "MPSBENCH_ADMIN_TOKENS",
        "MPSBENCH_READ_TOKENS",
        "MPSBENCH_UPLOAD_TOKENS_FILE",
        "MPSBENCH_ALLOWED_HOSTS",
        "MPSBENCH_TRUSTED_PROXIES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "holes.duckdb"))
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    monkeypatch.setattr(db.store.engine, "_shared", {})
    engine = db.store.engine.shared_store()
    yield engine
    engine.dispose()


def _client() -> TestClient:
    return TestClient(Starlette(routes=api_routes()), base_url="http://127.0.0.1:8501")


def test_delete_refuses_a_large_body_after_reading_at_most_its_cap(store):
    """Straight through ASGI, so what the server pulled is counted: 64 chunks of 1 MiB offered, no length."""
    chunk, pulled = b" " * 2**20, []
    server = Starlette(routes=api_routes())

    async def receive():
        pulled.append(1)
        return {"type": "http.request", "body": chunk, "more_body": len(pulled) < 64}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "DELETE",
        "path": "/api/v1/runs/abc",
        "raw_path": b"/api/v1/runs/abc",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("127.0.0.1", 8501),
        "client": ("127.0.0.1", 50000),
        "http_version": "1.1",
        "headers": [
            (b"host", b"127.0.0.1:8501"),
            (b"authorization", b"Bearer tok-alice"),
            (b"content-type", b"application/json"),
        ],
    }
    asyncio.run(server(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = json.loads(b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"))
    assert status == 413 and "64 KiB" in body["error"]
    assert len(pulled) == 1  # the first 1 MiB chunk already passes 64 KiB: nothing more was read


def test_a_retracted_runs_reupload_is_a_409_naming_the_retraction(store):
    client, bundle = _client(), make_bundle()
    assert client.post("/api/v1/runs", json=bundle, headers=AUTH).status_code == 201
    assert client.post("/api/v1/runs", json=bundle, headers=AUTH).status_code == 200  # present: idempotent
    gone = client.request("DELETE", f"/api/v1/runs/{bundle['run_id']}", json={"reason": "ran on battery"}, headers=AUTH)
    assert gone.status_code == 200
    again = client.post("/api/v1/runs", json=bundle, headers=AUTH)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert "retracted by alice" in error and "ran on battery" in error
    assert again.json()["errors"][0]["field"] == "run_id"


@pytest.mark.parametrize("tiny", [5e-324, 2.2e-308])  # the smallest subnormal; the largest below the normal range
def test_subnormal_samples_are_refused_at_ingest(store, tiny):
    bundle = make_bundle(results=[make_result(samples=[1.0, tiny, 1.0])])
    answer = _client().post("/api/v1/runs", json=bundle, headers=AUTH)
    assert answer.status_code == 422, answer.text
    problem = answer.json()["errors"][0]
    assert problem["field"] == "results[0].samples" and "normal float" in problem["rule"]
    with store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 0
    smallest_normal = make_bundle(results=[make_result(samples=[1.0, sys.float_info.min, 1.0])])
    assert _client().post("/api/v1/runs", json=smallest_normal, headers=AUTH).status_code == 201


KILL_AT_COMMIT = """
import os, signal, sys
import duckdb
from db.store.writers.backup import restore
real = duckdb.connect
class Killed:  # the real connection; the process dies (SIGKILL) as the import is about to commit
    def __init__(self, conn): self.conn = conn
    def execute(self, sql, *a):
        if sql == "COMMIT":
            os.kill(os.getpid(), signal.SIGKILL)
        return self.conn.execute(sql, *a)
    def __getattr__(self, name): return getattr(self.conn, name)
duckdb.connect = lambda *a, **k: Killed(real(*a, **k))
restore(sys.argv[1], sys.argv[2])
"""


def test_a_restore_killed_midway_leaves_no_store_and_the_next_restore_succeeds(store, tmp_path):
    client = _client()
    assert client.post("/api/v1/runs", json=make_bundle(), headers=AUTH).status_code == 201
    store.dispose()
    db.store.engine._shared.clear()
    backup(os.environ["MPSBENCH_DB"], str(tmp_path / "bk"))
    target = tmp_path / "restored.duckdb"
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT_COMMIT, str(tmp_path / "bk"), str(target)],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert not target.exists()  # nothing a later open could take for a valid (empty) store
    counts = restore(str(tmp_path / "bk"), str(target))
    assert counts["runs"] == 1 and counts["results"] == 6
    assert not (tmp_path / "restored.duckdb.restoring").exists()
