"""Identity without leaks: the local token file is trusted only when it is the server user's own private,
non-empty file; the sign-in link is exchanged for a signed, expiring session cookie before any page loads;
cookie and bearer token are one identity; Origin is compared by scheme, host and port; a trusted proxy must name
the host; /_stcore/metrics is a read like any other; every answer carries the anti-framing/no-referrer headers."""

from __future__ import annotations

import os
import time

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import app
import db.store.engine
import db.store.writers.tokens as tokens
from api.auth import HostCheck
from db.store.writers import sessions
from tests.bundles import make_bundle
from tests.store_fixtures import server_store

HEADERS = {
    "content-security-policy": "frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def store(tmp_path, monkeypatch):
    with server_store(monkeypatch, tmp_path / "ways.duckdb"):
        yield tmp_path


def _server() -> Starlette:
    """The API as app.api_routes() mounts it, a stand-in page and Streamlit's metrics path, under app.py's
    middleware."""

    async def page(request):
        return PlainTextResponse("page")

    routes = [Route("/upload", page), Route("/_stcore/metrics", page)]
    return Starlette(routes=app.api_routes() + routes, middleware=app._middleware())


def _client(**kw) -> TestClient:
    return TestClient(
        _server(), base_url="http://127.0.0.1:8501", client=("127.0.0.1", 50000), follow_redirects=False, **kw
    )


def _post(client: TestClient, token: str, **headers):
    return client.post("/api/v1/runs", json=make_bundle(), headers={"authorization": f"Bearer {token}", **headers})


# --- the local token file ----------------------------------------------------------------------------------------


def test_a_fresh_local_token_works_and_is_private(store):
    token = tokens.local_token()
    path = tokens.local_token_path()
    assert token and os.stat(path).st_mode & 0o777 == 0o600
    assert tokens.identify(token) == tokens.Identity("local", "admin")
    assert _post(_client(), token).status_code == 201


@pytest.mark.parametrize("plant", ["world-readable", "group-readable", "other owner", "empty", "a link"])
def test_a_planted_or_exposed_token_file_is_refused_with_its_reason(store, monkeypatch, capsys, plant):
    path = store / tokens.TOKEN_FILE
    if plant == "a link":
        (store / "elsewhere").write_text("planted-token\n")
        os.chmod(store / "elsewhere", 0o600)
        path.symlink_to(store / "elsewhere")
    else:
        path.write_text("" if plant == "empty" else "planted-token\n")
        os.chmod(path, {"world-readable": 0o644, "group-readable": 0o640}.get(plant, 0o600))
    if plant == "other owner":
        monkeypatch.setattr(tokens, "server_uid", lambda: os.geteuid() + 1)  # the file's owner is someone else
    reason = {
        "world-readable": "mode 0644",
        "group-readable": "mode 0640",
        "other owner": "not by the server's user",
        "empty": "is empty",
        "a link": "cannot be read",
    }[plant]
    assert tokens.identify("planted-token") is None and tokens.local_token() is None
    assert reason in tokens.local_token_refusal()
    refused = _post(_client(), "planted-token")
    assert refused.status_code == 401 and reason in refused.json()["error"]  # the 401 says why
    app.announce_token()  # the start banner says it too, and never prints a link with ?token=None
    printed = capsys.readouterr().err
    assert reason in printed and "token=" not in printed and "None" not in printed


# --- Origin and Host ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://127.0.0.1:8501", 201),
        ("http://localhost:9999", 403),
        ("http://127.0.0.1:9999", 403),
        ("https://127.0.0.1:8501", 403),
        ("http://127.0.0.1", 403),
        ("ftp://127.0.0.1:8501", 403),
        ("null", 403),
    ],
)
def test_origin_is_compared_by_scheme_host_and_port(store, monkeypatch, origin, status):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    answer = _post(_client(), "tok-alice", origin=origin)
    assert answer.status_code == status, answer.text
    if status == 403:
        assert answer.json()["errors"][0]["field"] == "Origin"


def test_the_pages_websocket_from_another_port_is_refused(store):
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    async def echo(ws):
        await ws.accept()
        await ws.send_text("hello")
        await ws.close()

    server = Starlette(routes=[WebSocketRoute("/_stcore/stream", echo)], middleware=[Middleware(HostCheck)])
    client = TestClient(server)
    host = {"host": "127.0.0.1:8501"}  # the test client's websocket ignores base_url
    with client.websocket_connect("/_stcore/stream", headers={**host, "origin": "http://127.0.0.1:8501"}) as ws:
        assert ws.receive_text() == "hello"
    with pytest.raises(WebSocketDisconnect) as closed:
        with client.websocket_connect("/_stcore/stream", headers={**host, "origin": "http://localhost:9999"}) as ws:
            ws.receive_text()
    assert closed.value.code == 1008


def test_a_trusted_proxy_must_name_the_host_it_was_asked_for(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_ALLOWED_HOSTS", "bench.example.com")
    monkeypatch.setenv("MPSBENCH_TRUSTED_PROXIES", "127.0.0.1")
    client = _client()
    # the proxy rewrote Host to its upstream and forwarded no X-Forwarded-Host: the name asked for is unknown
    rewritten = client.get("/api/v1/runs", headers={"host": "127.0.0.1:8501"})
    assert rewritten.status_code == 403 and rewritten.json()["errors"][0]["field"] == "X-Forwarded-Host"
    assert client.get("/upload", headers={"host": "127.0.0.1:8501"}).status_code == 403  # pages too
    named = {"host": "127.0.0.1:8501", "x-forwarded-host": "bench.example.com", "x-forwarded-proto": "https"}
    assert client.get("/api/v1/runs", headers=named).status_code == 200
    evil = {**named, "x-forwarded-host": "evil.example"}
    assert client.get("/api/v1/runs", headers=evil).status_code == 403
    # the browser's Origin is the proxy's https one: matched by the forwarded scheme, host and default port
    assert client.get("/api/v1/runs", headers={**named, "origin": "https://bench.example.com"}).status_code == 200
    assert client.get("/api/v1/runs", headers={**named, "origin": "http://bench.example.com"}).status_code == 403


# --- the sign-in link and the session cookie ---------------------------------------------------------------------


def test_the_link_is_exchanged_for_a_cookie_and_leaves_the_address(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=tok-read")
    client = _client()
    answer = client.get("/upload?token=tok-alice&tab=2")
    assert answer.status_code == 303 and answer.headers["location"] == "/upload?tab=2"
    cookie = answer.headers["set-cookie"]
    assert "tok-alice" not in cookie and "tok-alice" not in answer.headers["location"]
    for flag in ("HttpOnly", "SameSite=strict", f"Max-Age={sessions.SESSION_HOURS * 3600}", "Path=/"):
        assert flag.lower() in cookie.lower(), cookie
    assert "secure" not in cookie.lower()  # plain http here; https below
    session = client.cookies[sessions.COOKIE]
    assert sessions.session_identity(session) == tokens.Identity("alice", "upload")
    assert client.get("/api/v1/runs").status_code == 200  # the cookie reads, as the token would
    assert _client().get("/api/v1/runs").status_code == 401  # without it: no
    assert client.post("/api/v1/runs", json=make_bundle()).status_code == 401  # writes need the bearer token
    secret = store / sessions.SECRET_FILE
    assert os.stat(secret).st_mode & 0o777 == 0o600


def test_an_unknown_link_token_gets_no_cookie(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    answer = _client().get("/upload?token=wrong")
    assert answer.status_code == 303 and answer.headers["location"] == "/upload?signin=refused"
    assert "set-cookie" not in answer.headers


def test_a_typed_tokens_ticket_is_exchanged_once_within_a_minute(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    assert sessions.ticket("wrong") is None
    code = sessions.ticket("tok-alice")
    assert "tok-alice" not in code
    client = _client()
    answer = client.get(f"/upload?signin_code={code}&tab=2")
    assert answer.status_code == 303 and answer.headers["location"] == "/upload?tab=2"
    assert sessions.session_identity(client.cookies[sessions.COOKIE]).name == "alice"
    again = _client().get(f"/upload?signin_code={code}")  # used: refused, no cookie
    assert again.headers["location"] == "/upload?signin=refused" and "set-cookie" not in again.headers
    now = time.time()
    late = sessions.ticket("tok-alice", now)
    assert sessions.redeem(late, now + sessions.TICKET_SECONDS + 1) is None


def test_the_link_over_https_sets_a_secure_cookie(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    client = TestClient(_server(), base_url="https://127.0.0.1:8501", follow_redirects=False)
    assert "secure" in client.get("/upload?token=tok-alice").headers["set-cookie"].lower()


def test_a_session_expires_is_tied_to_its_token_and_can_be_signed_out(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice,bob=tok-bob")
    now = time.time()
    session = sessions.issue("tok-alice", now)
    assert sessions.issue("wrong") is None
    assert sessions.session_identity(session, now + 3600).name == "alice"
    assert sessions.session_identity(session, now + sessions.SESSION_HOURS * 3600 + 1) is None  # expired
    sid, expires, fingerprint, mac = session.split(".")
    forged = f"{sid}.{int(expires) + 10**6}.{fingerprint}.{mac}"  # a longer life, not signed by the server
    assert sessions.session_identity(forged) is None
    assert sessions.identity(None, session).name == "alice" and sessions.identity("tok-bob", session).name == "bob"
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "bob=tok-bob")  # alice's token removed: her session ends at once
    assert sessions.session_identity(session) is None
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    assert sessions.session_identity(session).name == "alice"
    sessions.sign_out(session)
    assert sessions.session_identity(session) is None  # any copy of the cookie too
    assert sessions.session_identity(sessions.issue("tok-alice")).name == "alice"  # a new sign-in works


def test_a_readable_secret_file_turns_sessions_off(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    session = sessions.issue("tok-alice")
    os.chmod(store / sessions.SECRET_FILE, 0o644)
    with pytest.raises(db.errors.StoreError, match="mode 0644"):
        sessions.session_identity(session)
    answer = _client().get("/upload?token=tok-alice")  # no cookie from a secret others may read
    assert answer.headers["location"] == "/upload?signin=refused" and "set-cookie" not in answer.headers


# --- metrics and headers -----------------------------------------------------------------------------------------


def test_streamlits_metrics_need_the_read_token_when_reads_do(store, monkeypatch):
    assert _client().get("/_stcore/metrics").status_code == 200
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=tok-read")
    assert _client().get("/_stcore/metrics").status_code == 401
    assert _client().get("/_stcore/metrics/").status_code == 401
    assert _client().get("/_stcore/metrics", headers={"authorization": "Bearer tok-read"}).status_code == 200


@pytest.mark.parametrize("path", ["/upload", "/api/v1/health", "/api/v1/runs", "/api/v1/nowhere", "/upload?token=x"])
def test_every_answer_carries_the_security_headers(store, path):
    answer = _client().get(path)
    for name, value in HEADERS.items():
        assert answer.headers.get(name) == value, (path, answer.status_code, dict(answer.headers))
    refused = _client().get(path, headers={"host": "evil.example"})
    assert refused.status_code == 403 and refused.headers["x-frame-options"] == "DENY"


import db.errors  # noqa: E402 - for the StoreError above


def test_the_link_redirect_never_leaves_the_server(store, monkeypatch):
    """A path of two slashes (sent as /%2Fevil.example) must not become "//evil.example": another site's URL."""
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    answer = _client().get("/%2Fevil.example?token=anything")
    assert answer.status_code == 303 and answer.headers["location"] == "/evil.example?signin=refused"


def test_a_damaged_secret_file_is_a_clear_error_not_a_traceback(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    session = sessions.issue("tok-alice")
    (store / sessions.SECRET_FILE).write_text("not hex\n")  # still 0600: only its content is wrong
    with pytest.raises(db.errors.StoreError, match="is not a hex secret"):
        sessions.session_identity(session)
    answer = _client().get("/upload?token=tok-alice")
    assert answer.headers["location"] == "/upload?signin=refused" and "set-cookie" not in answer.headers
