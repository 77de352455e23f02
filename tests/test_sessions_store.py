"""Sign-in sessions kept in the store (db.store.writers.sessions, table signed_out, store v10): a sign-out from any thread,
process or lake replica holds for every other one; a store from before v10 opens, and the ids its old file listed
stay signed out; a refused secret (readable by others, a directory, not hex) is the documented "sign-in sessions
are off" error — a 401 naming why, never a 500 — while bearer tokens keep working."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import app
import db.store.engine
from benchmarks.stores.pg_lake import lake_store
from db.store.engine import open_store
from db.store.tables import STORE_VERSION
from db.store.writers import sessions
from tests.store_fixtures import server_store

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def store(tmp_path, monkeypatch):
    with server_store(monkeypatch, tmp_path / "s.duckdb", MPSBENCH_UPLOAD_TOKENS="alice=tok-alice,bob=tok-bob"):
        yield tmp_path


def _client() -> TestClient:
    async def page(request):
        return PlainTextResponse("page")

    server = Starlette(routes=app.api_routes() + [Route("/upload", page)], middleware=app._middleware())
    return TestClient(server, base_url="http://127.0.0.1:8501", client=("127.0.0.1", 50000), follow_redirects=False)


def _signed_out_rows(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT sid, signed_out_by FROM signed_out ORDER BY sid"))]


def test_a_sign_out_is_a_row_in_the_store_naming_whose_session_it_was(store):
    session = sessions.issue("tok-alice")
    sessions.sign_out(session)
    sessions.sign_out(session)  # twice: still one row
    assert _signed_out_rows(db.store.engine.shared_store()) == [(session.split(".")[0], "alice")]
    assert sessions.session_identity(session) is None
    assert not (store / sessions.OLD_SIGNED_OUT_FILE).exists()  # no file beside the store any more


def test_concurrent_sign_outs_from_many_threads_all_hold(store):
    issued = [sessions.issue("tok-alice" if i % 2 else "tok-bob") for i in range(60)]
    threads = [
        threading.Thread(target=lambda part=issued[k::6]: [sessions.sign_out(s) for s in part]) for k in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s in issued if sessions.session_identity(s) is not None] == []
    assert len(_signed_out_rows(db.store.engine.shared_store())) == 60


def test_expired_sign_outs_are_dropped_and_a_live_one_kept(store):
    now = time.time()
    old = sessions.issue("tok-alice", now - sessions.SESSION_HOURS * 3600 - 10)  # already expired
    live = sessions.issue("tok-bob")
    engine = db.store.engine.shared_store()
    with engine.begin() as conn:  # as a sign-out made before it expired would have stored it
        sessions._add(conn, old.split(".")[0], int(old.split(".")[1]), "alice", now - 3600 * 13)
    sessions.sign_out(live)
    assert _signed_out_rows(engine) == [(live.split(".")[0], "bob")]


def test_a_v9_store_opens_at_v10_and_its_old_signed_out_file_still_holds(tmp_path, monkeypatch):
    path = tmp_path / "old.duckdb"
    engine = open_store(path)
    with engine.begin() as conn:  # a store as v9 left it: no signed_out table
        conn.execute(text("DROP TABLE signed_out"))
        conn.execute(text("UPDATE meta SET value = '9' WHERE key = 'store_version'"))
    engine.dispose()
    with server_store(monkeypatch, path, MPSBENCH_UPLOAD_TOKENS="alice=tok-alice"):
        out, kept = sessions.issue("tok-alice"), sessions.issue("tok-alice")
        sid, expires = out.split(".")[:2]
        old_file = tmp_path / sessions.OLD_SIGNED_OUT_FILE
        old_file.write_text(f"{sid} {expires}\nexpired {int(time.time()) - 5}\n")
        os.chmod(old_file, 0o600)
        sessions._old_file_taken.clear()
        assert sessions.session_identity(out) is None  # signed out before the upgrade: still signed out
        assert sessions.session_identity(kept).name == "alice"
        assert not old_file.exists()
        reopened = db.store.engine.shared_store()
        with reopened.connect() as conn:
            assert conn.execute(text("SELECT value FROM meta WHERE key = 'store_version'")).scalar() == str(
                STORE_VERSION
            )
        assert [r[0] for r in _signed_out_rows(reopened)] == [sid]
    assert STORE_VERSION >= 10  # signed_out came with v10: a later version keeps it


# --- a refused secret: sessions are off, said as documented, never a 500 ------------------------------------------


def _spoil(secret: Path, how: str) -> str:
    """Spoil the secret file; what the refusal names."""
    if how == "mode 0644":
        os.chmod(secret, 0o644)
    elif how == "a directory":
        secret.unlink()
        secret.mkdir()
        return "is not a regular file"
    elif how == "not hex":
        secret.write_text("not hex\n")
        return "is not a hex secret"
    elif how == "binary":
        secret.write_bytes(b"\xff\xfe\x00junk")
        return "cannot be read as text"
    return how


@pytest.mark.parametrize("how", ["mode 0644", "a directory", "not hex", "binary"])
def test_a_refused_secret_turns_sessions_off_with_the_documented_error(store, monkeypatch, how):
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=tok-read")
    client = _client()
    assert client.get("/upload?token=tok-alice").status_code == 303
    assert client.get("/api/v1/runs").status_code == 200  # the cookie reads
    reason = _spoil(store / sessions.SECRET_FILE, how)
    answer = client.get("/api/v1/runs")
    assert answer.status_code == 401, answer.text
    assert "sign-in sessions are off: " in answer.json()["error"] and reason in answer.json()["error"]
    assert client.get("/api/v1/runs", headers={"authorization": "Bearer tok-read"}).status_code == 200
    assert client.get("/_stcore/metrics").status_code in (401, 404)  # the middleware's read check: no 500 either
    link = client.get("/upload?token=tok-alice")
    assert link.headers["location"] == "/upload?signin=refused" and "set-cookie" not in link.headers
    assert sessions.sessions_off().startswith("sign-in sessions are off: ")
    with pytest.raises(sessions.SessionsOff, match=reason):
        sessions.session_identity(client.cookies[sessions.COOKIE])


@pytest.mark.parametrize("how", ["mode 0644", "a directory", "not hex", "binary"])
def test_serve_refuses_to_start_on_a_refused_secret_naming_the_file_and_the_rule(store, monkeypatch, capsys, how):
    """A team server starts with sign-in working or not at all: `mpsbench serve` stops before Streamlit starts
    (before binding any port), saying which file and the rule it breaks (issue 46: it started silently without)."""
    from mpsbench.cli import main

    sessions.issue("tok-alice")  # the secret is made
    reason = _spoil(store / sessions.SECRET_FILE, how)
    started = []
    monkeypatch.setattr("streamlit.web.cli.main", lambda *a, **k: started.append(a) or 0)
    assert main(["serve", "--port", "1"]) == 1 and not started
    out = capsys.readouterr().out
    assert out.startswith(f"ERROR: {store / sessions.SECRET_FILE} ") and reason in out, out
    assert "must be a regular file owned by the server's user, mode 0600, holding hex" in out
    assert out.count("\n") == 1 and "Traceback" not in out


def test_serve_starts_with_no_secret_yet_or_a_good_one_and_makes_none_itself(store, monkeypatch, capsys):
    from mpsbench.cli import main

    started = []
    monkeypatch.setattr("streamlit.web.cli.main", lambda *a, **k: started.append(a) or 0)
    monkeypatch.setattr("sys.argv", list(sys.argv))  # serve rewrites it for streamlit
    assert main(["serve", "--port", "1"]) == 0 and len(started) == 1
    assert not (store / sessions.SECRET_FILE).exists()  # made at the first sign-in, not by the check
    sessions.issue("tok-alice")
    assert sessions.secret_refusal() is None and main(["serve", "--port", "1"]) == 0 and len(started) == 2
    assert "ERROR" not in capsys.readouterr().out


def test_a_bare_streamlit_start_says_sessions_are_off_in_its_banner(store, capsys):
    sessions.issue("tok-alice")
    _spoil(store / sessions.SECRET_FILE, "not hex")
    app.preload()
    err = capsys.readouterr().err
    assert f"mpsbench: sign-in sessions are off: {store / sessions.SECRET_FILE} is not a hex secret" in err


def test_sessions_work_again_when_the_secret_is_deleted(store):
    session = sessions.issue("tok-alice")
    _spoil(store / sessions.SECRET_FILE, "a directory")
    (store / sessions.SECRET_FILE).rmdir()
    assert sessions.sessions_off() is None
    assert sessions.session_identity(session) is None  # a new secret: every old session ended
    assert sessions.session_identity(sessions.issue("tok-alice")).name == "alice"


# --- across processes: lake replicas -----------------------------------------------------------------------------

_SIGN_OUT = """
import sys, time
from db.store.writers import sessions
from db.store.engine import shared_store
shared_store()
todo = open(sys.argv[1]).read().split()
while time.time() < float(sys.argv[2]):
    time.sleep(0.001)
for session in todo:
    sessions.sign_out(session)
print(len(todo))
"""


def test_lake_replicas_signing_out_at_once_lose_no_sign_out(postgres, tmp_path, monkeypatch):
    store = lake_store(postgres, tmp_path / "data", "sessions", monkeypatch)
    with server_store(monkeypatch, tmp_path / "unused.duckdb", MPSBENCH_UPLOAD_TOKENS="alice=tok-alice"):
        monkeypatch.setenv("MPSBENCH_STORE", store)
        db.store.engine.shared_store()  # the lake made once, before the replicas race
        issued = [sessions.issue("tok-alice") for _ in range(90)]  # the secret lives in the lake's data folder
        parts = []
        for k in range(3):
            part = tmp_path / f"part{k}.txt"
            part.write_text("\n".join(issued[k::3]))
            parts.append(part)
        start = time.time() + 8  # every replica has opened the lake by then
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _SIGN_OUT, str(p), str(start)],
                cwd=ROOT,
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for p in parts
        ]
        outs = [p.communicate(timeout=300) for p in procs]
        assert all(p.returncode == 0 for p in procs), [e[-6000:] for _, e in outs]
        assert [int(o.split()[-1]) for o, _ in outs] == [30, 30, 30]
        still = [s for s in issued if sessions.session_identity(s) is not None]
        assert still == []  # the file version left 129 of 300 accepted
        assert len(_signed_out_rows(db.store.engine.shared_store())) == 90


@pytest.mark.parametrize("value", ["lots", "-1", "inf"])
def test_serve_refuses_to_start_on_an_idle_release_that_is_not_seconds(store, monkeypatch, capsys, value):
    """MPSBENCH_IDLE_RELEASE_S was read with float() at the server's start: "lots" was a traceback."""
    from mpsbench.cli import main

    monkeypatch.setenv("MPSBENCH_IDLE_RELEASE_S", value)
    started = []
    monkeypatch.setattr("streamlit.web.cli.main", lambda *a, **k: started.append(a) or 0)
    assert main(["serve", "--port", "1"]) == 1 and not started
    out = capsys.readouterr().out
    assert out.startswith(f"ERROR: MPSBENCH_IDLE_RELEASE_S={value!r} is not a number of seconds"), out
    assert "must be a number of seconds, 0 or more" in out and "Traceback" not in out
