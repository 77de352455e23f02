"""The hostile corpus of issue 17, each probe through ingest_bundle and through POST /api/v1/runs: a 4xx with
the one JSON error shape naming the field, the same answer from both, and nothing stored."""

import gzip
import json

import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.testclient import TestClient

import api.upload
import db.store.engine
from api.errors import guard_routes
from bundle.schema import MAX_TAGS
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from tests.bundles import make_bundle, make_result

TABLES = ("meta", "runs", "run_tags", "results")
JSON = {"content-type": "application/json", "authorization": "Bearer tok-hostile"}


def _raw(bundle: dict) -> bytes:
    return json.dumps(bundle, ensure_ascii=False).encode()


def _in_params(value: bytes) -> bytes:
    """A bundle whose first result's params hold `value` verbatim (JSON no dict can spell)."""
    return _raw(make_bundle(results=[make_result(params={"x": "@@"})])).replace(b'"@@"', value, 1)


def _without(key: str) -> bytes:
    return _raw({k: v for k, v in make_bundle().items() if k != key})


def _results_first(raw: bytes) -> bytes:
    doc = json.loads(raw)
    return _raw({"results": doc.pop("results")} | doc)


_COMMA = _raw(make_bundle(results=[make_result(samples=[7.0, 8.0])])).replace(b"[7.0, 8.0]", b"[7.0, 8.0,]")
DEEP = b"[" * 1000 + b"]" * 1000

# (probe, status, the field the refusal names (a prefix of it))
PROBES = {
    "nesting 1000 deep in params": (_in_params(DEEP), 400, "results[0]"),
    "nesting 1000 deep in the header": (_raw(make_bundle(tags={"x": "@@"})).replace(b'"@@"', DEEP), 400, "body"),
    "gpu_cores 2**31": (
        _raw(make_bundle(machine=make_bundle()["machine"] | {"gpu_cores": 2**31})),
        422,
        "machine.gpu_cores",
    ),
    "memory_bytes 2**63": (
        _raw(make_bundle(machine=make_bundle()["machine"] | {"memory_bytes": 2**63})),
        422,
        "machine.memory_bytes",
    ),
    "started_at year 9999 -01:00": (
        _raw(make_bundle(started_at="9999-12-31T23:59:59-01:00", ended_at=None)),
        422,
        "started_at",
    ),
    "lone surrogate in params": (_in_params(b'"a\\ud800b"'), 400, "results[0].params.x"),
    "samples [1e308]*3 overflow": (
        _raw(make_bundle(results=[make_result(samples=[1e308] * 3)])),
        422,
        "results[0].samples",
    ),
    "trailing comma in samples, results last": (_COMMA, 400, "body"),
    "trailing comma in samples, results first": (
        _results_first(_COMMA.replace(b",]", b"]")).replace(b"[7.0, 8.0]", b"[7.0, 8.0,]"),
        400,
        "body",
    ),
    "negative op_time sample": (
        _raw(make_bundle(results=[make_result(samples=[7.0, -1.0])])),
        422,
        "results[0].samples",
    ),
    "zero op_time sample": (_raw(make_bundle(results=[make_result(samples=[0.0])])), 422, "results[0].samples"),
    "zero memory sample": (
        _raw(make_bundle(results=[make_result(metric="memory_driver_peak", unit="B", samples=[0])])),
        422,
        "results[0].samples",
    ),
    "NaN in params": (_in_params(b"NaN"), 422, "results[0].params.x"),
    "Infinity in params": (_in_params(b"-Infinity"), 422, "results[0].params.x"),
    "NaN tolerance": (_raw(make_bundle(results=[make_result(tolerance=float("nan"))])), 422, "results[0].tolerance"),
    "schema_version missing": (_without("schema_version"), 422, "schema_version"),
    'schema_version "1"': (_raw(make_bundle(schema_version="1")), 422, "schema_version"),
    "schema_version true": (_raw(make_bundle(schema_version=True)), 422, "schema_version"),
    "integer epoch started_at": (_raw(make_bundle(started_at=1764669600, ended_at=None)), 422, "started_at"),
    "integer epoch ended_at": (_raw(make_bundle(ended_at=1764669600)), 422, "ended_at"),
    "ended_at before started_at": (_raw(make_bundle(ended_at="2026-12-02T09:59:59+00:00")), 422, "ended_at"),
    "UTF-16 body": (_raw(make_bundle()).decode().encode("utf-16"), 400, "body"),
    "UTF-32 body": (_raw(make_bundle()).decode().encode("utf-32"), 400, "body"),
    "Latin-1 byte in a result's message": (
        _raw(make_bundle(results=[make_result(status="error", samples=[], message="caf@")])).replace(b"@", b"\xe9"),
        400,
        "body",
    ),
    "Latin-1 byte in a tag": (_raw(make_bundle(tags={"x": "caf@"})).replace(b"@", b"\xe9"), 400, "body"),
    "UTF-8-encoded surrogate in a message": (
        _raw(make_bundle(results=[make_result(status="error", samples=[], message="@")])).replace(
            b"@", "\ud800".encode("utf-8", "surrogatepass")
        ),
        400,
        "body",
    ),
    "too many tags": (_raw(make_bundle(tags={f"k{i}": "v" for i in range(MAX_TAGS + 1)})), 422, "tags"),
    "samples as strings": (_raw(make_bundle(results=[make_result(samples=["7.5", 8])])), 422, "results[0].samples"),
    "passed as 1": (_raw(make_bundle(results=[make_result(passed=1)])), 422, "results[0].passed"),
    "nesting 960 deep in params": (_in_params(b"[" * 960 + b"]" * 960), 400, "results[0]"),
    "samples whose sum overflows": (
        _raw(make_bundle(results=[make_result(samples=[1.7e308, 1.7e308])])),
        422,
        "results[0].samples",
    ),
    "results a number": (_raw(make_bundle(results=5)), 422, "results"),  # found by the fuzz (was a 500)
    "results null": (_raw(make_bundle(results=None)), 422, "results"),
    "results an object": (_raw(make_bundle(results={"0": make_result()})), 422, "results"),
    "only results, a string": (b'{"results": "x"}', 422, "results"),
}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "hostile.duckdb"))
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "hostile=tok-hostile")
    monkeypatch.setattr(db.store.engine, "_shared", {})
    engine = db.store.engine.shared_store()
    ingest_bundle(engine, make_bundle())  # something stored already: a refusal must leave it as it is
    yield engine
    engine.dispose()


def _dump(engine) -> dict:
    with engine.connect() as conn:
        return {t: sorted(map(repr, conn.execute(text(f"SELECT * FROM {t}")).fetchall())) for t in TABLES}


def _post(body: bytes, headers=JSON):
    client = TestClient(Starlette(routes=guard_routes(api.upload.ROUTES)), client=("127.0.0.1", 50000))
    return client.post("/api/v1/runs", content=body, headers=headers)


@pytest.mark.parametrize("name", PROBES)
def test_probe_is_refused_alike_by_ingest_and_api_naming_the_field(store, name):
    raw, status, field = PROBES[name]
    before = _dump(store)
    with pytest.raises(StoreError) as info:
        ingest_bundle(store, raw)
    err = info.value
    assert err.status == status, (err.message, err.problems)
    assert any(p.field.startswith(field) for p in err.problems), err.problems
    assert _dump(store) == before
    response = _post(raw)
    body = response.json()
    assert response.status_code == status and body == {
        "ok": False,
        "status": status,
        "error": err.message,
        "errors": [{"field": p.field, "rule": p.rule} for p in err.problems],
    }
    assert _dump(store) == before


@pytest.mark.parametrize("name", [n for n in PROBES if "Latin-1" in n or "UTF-" in n])
def test_bytes_that_are_not_utf8_are_named_so(store, name):
    with pytest.raises(StoreError) as info:
        ingest_bundle(store, PROBES[name][0])
    assert info.value.message == "body is not UTF-8"
    assert "bundles are UTF-8 JSON" in info.value.problems[0].rule


def test_a_gzip_body_is_decoded_and_stored(store):
    bundle = make_bundle()
    response = _post(gzip.compress(_raw(bundle)), JSON | {"content-encoding": "gzip"})
    assert response.status_code == 201, response.json()
    assert _post(_raw(bundle)).status_code == 200  # the same bundle, plain: already present


def test_a_gzip_bomb_past_the_limit_is_413_and_other_encodings_415(store, monkeypatch):
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", "1")
    bomb = gzip.compress(b" " * (3 << 20) + _raw(make_bundle()))  # 3 MB of spaces: valid JSON, too big
    assert len(bomb) < (1 << 20)
    before = _dump(store)
    response = _post(bomb, JSON | {"content-encoding": "gzip"})
    assert response.status_code == 413 and "decompressed" in response.json()["error"]
    assert _post(_raw(make_bundle()), JSON | {"content-encoding": "br"}).status_code == 415
    assert _post(b"\x1f\x8b not gzip", JSON | {"content-encoding": "gzip"}).status_code == 400
    assert _dump(store) == before
