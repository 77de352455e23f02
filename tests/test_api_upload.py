"""POST /api/v1/runs through a real Starlette app: statuses, the one error shape, refusals that change nothing,
concurrent uploads, and hostile strings kept verbatim (read back through GET /api/v1/runs)."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient

import api.query
import api.upload
import db.store.engine
from api.errors import guard_routes
from tests.bundles import make_bundle, make_result

TABLES = ("meta", "runs", "run_tags", "results", "review_notes")
URL = "/api/v1/runs"
TOKEN = "tok-ci-mac-1"
JSON = {"content-type": "application/json", "authorization": f"Bearer {TOKEN}"}
LOCAL = ("127.0.0.1", 50000)
TOKEN_ENV = ("MPSBENCH_UPLOAD_TOKENS", "MPSBENCH_UPLOAD_TOKENS_FILE", "MPSBENCH_ADMIN_TOKENS", "MPSBENCH_READ_TOKENS")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "api.duckdb"))
    for name in TOKEN_ENV + ("MPSBENCH_MAX_UPLOAD_MB",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", f"ci-mac-1={TOKEN}")
    monkeypatch.setattr(db.store.engine, "_shared", {})  # shared_store() opens this test's file, not a cached one
    engine = db.store.engine.shared_store()
    yield engine
    engine.dispose()


def _client(client=LOCAL) -> TestClient:
    app = Starlette(routes=guard_routes(api.upload.ROUTES + api.query.ROUTES))  # the order app.py mounts them in
    return TestClient(app, client=client)


def dump(engine) -> dict:
    """Every row of every table, data_version included: a refusal must not even touch that."""
    with engine.connect() as conn:
        return {t: sorted(map(repr, conn.execute(text(f"SELECT * FROM {t}")).fetchall())) for t in TABLES}


def post(client: TestClient, bundle, headers=JSON, **kw):
    body = bundle if isinstance(bundle, bytes) else json.dumps(bundle).encode()
    return client.post(URL, content=body, headers=headers, **kw)


def assert_refused(response, status: int, engine, before: dict, field: str | None = None) -> dict:
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"ok", "status", "error", "errors"} and (body["ok"], body["status"]) == (False, status)
    assert isinstance(body["error"], str) and body["error"]
    assert all(set(e) == {"field", "rule"} and e["rule"] for e in body["errors"])
    if field is not None:
        assert field in [e["field"] for e in body["errors"]], body["errors"]
    assert dump(engine) == before
    return body


def test_new_bundle_is_201_and_the_same_bundle_again_is_200_with_nothing_added(store):
    bundle = make_bundle()
    first = post(_client(), bundle)
    after_first = dump(store)
    again = post(_client(), bundle)
    assert (first.status_code, first.json()) == (
        201,
        {"ok": True, "run_id": bundle["run_id"], "created": True, "results": 6},
    )
    assert (again.status_code, again.json()) == (
        200,
        {"ok": True, "run_id": bundle["run_id"], "created": False, "results": 6},
    )
    assert dump(store) == after_first and len(after_first["results"]) == 6 and len(after_first["runs"]) == 1


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_without_tokens_loopback_needs_the_generated_token_too(store, monkeypatch, tmp_path, capsys, host):
    import app

    monkeypatch.delenv("MPSBENCH_UPLOAD_TOKENS")
    app.announce_token()  # what the server does at start
    token_file = tmp_path / "mpsbench-token"  # made beside the store, readable by its owner only
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert f"/upload?token={token_file.read_text().strip()}" in capsys.readouterr().err
    before = dump(store)
    for headers in ({"content-type": "application/json"}, JSON):  # no token, and a token the server does not know
        body = assert_refused(post(_client((host, 50000)), make_bundle(), headers=headers), 401, store, before)
        assert "token" in body["error"]
    headers = {"content-type": "application/json", "authorization": f"Bearer {token_file.read_text().strip()}"}
    assert post(_client((host, 50000)), make_bundle(), headers=headers).status_code == 201
    with store.connect() as conn:
        assert conn.execute(text("SELECT uploaded_by FROM runs")).scalar() == "local"


@pytest.mark.parametrize(
    ("auth", "status"),
    [
        (None, 401),
        ("Bearer t3", 401),
        ("Bearer t1x", 401),
        ("Basic t1", 401),
        ("t1", 401),
        ("Bearer ", 401),
        ("Bearer ci-mac-1", 401),
        ("Bearer ci-mac-1=t1", 401),
        ("Bearer r1", 403),
        ("Bearer t1", 201),
        ("Bearer t2", 201),
        ("bearer t2", 201),
    ],
)
def test_with_tokens_every_client_needs_one_of_them(store, monkeypatch, auth, status):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "ci-mac-1=t1,alice=t2")
    monkeypatch.setenv("MPSBENCH_READ_TOKENS", "dash=r1")
    headers = {"content-type": "application/json"} | ({"authorization": auth} if auth else {})
    before = dump(store)
    for client in (_client(("testclient", 50000)), _client(LOCAL)):  # loopback is no exception
        response = post(client, make_bundle(), headers=headers)
        if status != 201:
            assert_refused(response, status, store, before, field="Authorization")
        else:
            assert response.status_code == 201


def test_the_run_records_the_name_of_the_token_that_uploaded_it(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "ci-mac-1=t1,alice=t2")
    bundles = {"ci-mac-1": make_bundle(), "alice": make_bundle()}
    for name, token in (("ci-mac-1", "t1"), ("alice", "t2")):
        assert post(_client(), bundles[name], headers=JSON | {"authorization": f"Bearer {token}"}).status_code == 201
    with store.connect() as conn:
        found = dict(conn.execute(text("SELECT run_id, uploaded_by FROM runs")).fetchall())
    assert found == {bundles["ci-mac-1"]["run_id"]: "ci-mac-1", bundles["alice"]["run_id"]: "alice"}


def test_tokens_file_names_tokens_one_a_line(store, monkeypatch, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# team tokens\nbob=file-token-1\n\n")
    monkeypatch.delenv("MPSBENCH_UPLOAD_TOKENS")
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS_FILE", str(tokens))
    assert post(_client(), make_bundle(), headers=JSON | {"authorization": "Bearer file-token-1"}).status_code == 201
    assert post(_client(), make_bundle(), headers=JSON).status_code == 401  # the env token is gone
    with store.connect() as conn:
        assert conn.execute(text("SELECT uploaded_by FROM runs")).scalar() == "bob"


def test_conflicting_run_id_is_409_naming_run_id(store):
    bundle = make_bundle()
    post(_client(), bundle)
    before = dump(store)
    changed = bundle | {"tags": {"role": "baseline"}}
    assert_refused(post(_client(), changed), 409, store, before, field="run_id")


def _limit_mb(size: int) -> str:
    return repr(size / (1024 * 1024))  # exact: a power-of-two divisor, so the server's limit is `size` bytes


def test_body_at_the_limit_is_taken_and_one_byte_over_is_413(store, monkeypatch):
    bundle = make_bundle()
    body = json.dumps(bundle).encode()
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", _limit_mb(len(body) - 1))
    before = dump(store)
    refused = assert_refused(post(_client(), body), 413, store, before)
    assert "MPSBENCH_MAX_UPLOAD_MB" in refused["error"]
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", _limit_mb(len(body)))
    assert post(_client(), body).status_code == 201


def test_streamed_body_without_content_length_is_cut_off_at_the_limit(store, monkeypatch):
    body = json.dumps(make_bundle()).encode()
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", _limit_mb(len(body) - 1))
    sent = []

    def chunks():
        for start in range(0, len(body), 256):
            yield body[start : start + 256]

    def record(request):
        sent.append(dict(request.headers))

    before = dump(store)
    client = _client()
    client.event_hooks["request"] = [record]
    response = client.post(URL, content=chunks(), headers=JSON)
    assert "content-length" not in sent[0] and sent[0].get("transfer-encoding") == "chunked"
    assert_refused(response, 413, store, before)


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
def test_wrong_or_missing_content_type_is_415(store, kind):
    before = dump(store)
    headers = ({"content-type": kind} if kind else {}) | {"authorization": f"Bearer {TOKEN}"}
    body = assert_refused(post(_client(), make_bundle(), headers=headers), 415, store, before)
    assert "application/json" in body["error"]


def test_json_content_type_with_charset_is_accepted(store):
    assert (
        post(_client(), make_bundle(), headers=JSON | {"content-type": "Application/JSON; charset=utf-8"}).status_code
        == 201
    )


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'"a bundle"', b"", b"\xff\xfe{}"])
def test_not_json_or_not_an_object_is_400(store, raw):
    assert_refused(post(_client(), raw), 400, store, dump(store))


@pytest.mark.parametrize(
    ("bundle", "field"),
    [
        (make_bundle(results=[make_result(unit="GiB")]), "results[0].unit"),
        (make_bundle(results=[make_result(), make_result(metric="speed")]), "results[1].metric"),
        (make_bundle(run_id="not-a-uuid"), "run_id"),
        (make_bundle(colour="red"), "colour"),
    ],
)
def test_invalid_bundle_is_422_naming_the_field(store, bundle, field):
    post(_client(), make_bundle())  # a store with data in it: the refusal must leave that alone too
    assert_refused(post(_client(), bundle), 422, store, dump(store), field=field)


def test_eight_concurrent_uploads_are_all_stored_whole(store):
    bundles = [make_bundle(machine={"name": f"mac-{i}", "os": "macOS"}) for i in range(8)]
    with _client() as client, ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda b: post(client, b), bundles))
    assert [r.status_code for r in responses] == [201] * 8
    assert sorted(r.json()["run_id"] for r in responses) == sorted(b["run_id"] for b in bundles)
    with store.connect() as conn:
        per_run = dict(conn.execute(text("SELECT run_id, count(*) FROM results GROUP BY run_id")).fetchall())
        names = sorted(r[0] for r in conn.execute(text("SELECT machine_name FROM runs")))
    assert per_run == {b["run_id"]: 6 for b in bundles} and names == [f"mac-{i}" for i in range(8)]


HOSTILE = {
    "html": "<script>alert('x')</script>",
    "sql": "'; DROP TABLE runs; --",
    "quote": 'a"b\\c',
    "unicode": "naïve – 日本語 🚀 Ω",
    "control": "tab\there\x01\x1f\x7f end",
    "newline": "line1\nline2\r\n",
}


def test_hostile_strings_are_stored_and_returned_verbatim(store):
    machine = "<b>m3u</b> '; DROP TABLE runs; -- 🚀"
    message = "<img src=x onerror=alert(1)> '; DELETE FROM results; -- \x02 ü"
    bundle = make_bundle(
        machine={"name": machine, "os": "macOS"},
        tags=HOSTILE,
        warnings=[HOSTILE["sql"]],
        results=[make_result(status="unavailable", samples=[], message=message, warnings=[HOSTILE["html"]])],
    )
    client = _client()
    assert post(client, bundle).status_code == 201
    listed = client.get(URL, params={"machine": machine})
    runs = listed.json()["runs"]
    assert listed.status_code == 200 and [r["run_id"] for r in runs] == [bundle["run_id"]]
    assert runs[0]["machine_name"] == machine and json.loads(runs[0]["tags_json"]) == HOSTILE
    by_tag = client.get(URL, params={"tag": f"sql={HOSTILE['sql']}"}).json()["runs"]
    assert [r["run_id"] for r in by_tag] == [bundle["run_id"]]
    with store.connect() as conn:
        tags = dict(conn.execute(text("SELECT key, value FROM run_tags")).fetchall())
        row = conn.execute(text("SELECT message, warnings_json FROM results")).one()
        run_warnings = conn.execute(text("SELECT warnings_json FROM runs")).scalar()
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 1  # nothing was dropped
    assert tags == HOSTILE and row[0] == message and json.loads(row[1]) == [HOSTILE["html"]]
    assert json.loads(run_warnings) == [HOSTILE["sql"]]
