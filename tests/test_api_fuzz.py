"""GET /api/v1/openapi.json describes every mounted /api/v1 route, and schemathesis fuzzes each one from it
(valid and invalid parameters and bodies, in-process over ASGI, a fixed seed): no answer is a 5xx and every 4xx is
the one JSON error shape. MPSBENCH_FUZZ_EXAMPLES raises the examples per operation for a longer run by hand."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from starlette.applications import Starlette
from starlette.testclient import TestClient

import db.store.engine
from api.errors import route_methods
from app import api_routes
from db.ingest.core import ingest_bundle
from tests.bundles import make_bundle

EXAMPLES = int(os.environ.get("MPSBENCH_FUZZ_EXAMPLES", "10"))
SEED = int(os.environ.get("MPSBENCH_FUZZ_SEED", "17"))


TOKEN = "tok-fuzz"


class Loopback:
    """The API as a client on the server itself reaches it (client and Host 127.0.0.1, as the Host check wants),
    with the upload token: the fuzz is meant to reach the ingest, not stop at the sign-in."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k not in (b"host", b"authorization")]
            headers += [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {TOKEN}".encode())]
            scope = dict(scope, client=("127.0.0.1", 50000), headers=headers)
        await self.app(scope, receive, send)


APP = Loopback(Starlette(routes=api_routes()))
# the coverage phase (boundary values, unexpected methods) everywhere but on the upload, where it walks every
# field of the bundle schema (~30 s); the upload gets the examples and fuzzing phases, valid and invalid bundles
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {"mode": "all", "max-examples": EXAMPLES},
        "operations": [
            {
                "include-method": "POST",
                "include-path": "/api/v1/runs",
                "phases": {"coverage": {"enabled": EXAMPLES > 100}},
            }
        ],
    }
)
schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", APP, config=CONFIG)


@pytest.fixture(scope="module", autouse=True)
def store(tmp_path_factory):
    """Two builds stored, so valid selectors reach the comparisons; every request reads this file."""
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb"
    saved = os.environ.get("MPSBENCH_DB"), os.environ.get("MPSBENCH_UPLOAD_TOKENS"), db.store.engine._shared
    os.environ["MPSBENCH_DB"] = str(path)
    os.environ["MPSBENCH_UPLOAD_TOKENS"] = f"fuzz={TOKEN}"
    db.store.engine._shared = {}
    engine = db.store.engine.shared_store()
    for version, role in (("2.14.1", "baseline"), ("2.15.0rc1", "candidate")):
        build = make_bundle()["build"] | {
            "torch_version": version,
            "channel": "release" if role == "baseline" else "rc",
        }
        for _ in range(2):
            ingest_bundle(engine, make_bundle(build=build, tags={"role": role, "sweep": "s1"}))
    yield path
    engine.dispose()
    db.store.engine._shared = saved[2]
    for name, value in zip(("MPSBENCH_DB", "MPSBENCH_UPLOAD_TOKENS"), saved[:2]):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def test_the_document_lists_every_mounted_api_route_with_its_methods():
    doc = TestClient(APP).get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    mounted = {(r.path, m.lower()) for r in api_routes() for m in route_methods(r)}
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    assert documented == mounted
    assert {
        ("/api/v1/runs", "post"),
        ("/api/v1/runs", "get"),
        ("/api/v1/health", "get"),
        ("/api/v1/compare", "get"),
        ("/api/v1/sweeps/{sweep}", "get"),
    } <= documented


def test_every_answer_a_retraction_gets_is_documented_and_the_schema_states_its_rules():
    """DELETE /api/v1/runs/{run_id}: its 422 (a run_id that is not 32 lower-case hex digits, a blank or too long
    reason) and 403 were undocumented, and schema-valid requests (any string) were refused with them."""
    import re

    from db.store.writers.retract import MAX_REASON, check_request

    op = TestClient(APP).get("/api/v1/openapi.json").json()["paths"]["/api/v1/runs/{run_id}"]["delete"]
    client = TestClient(APP)
    hexid = "ab" * 16
    asked = {  # status → a request that gets it
        422: ("0123", {"reason": "battery"}),
        404: (hexid, {"reason": "battery"}),
        400: (hexid, b"not json"),
    }
    got = {}
    for status, (run_id, body) in asked.items():
        kw = (
            {"content": body, "headers": {"content-type": "application/json"}}
            if isinstance(body, bytes)
            else {"json": body}
        )
        got[status] = client.request("DELETE", f"/api/v1/runs/{run_id}", **kw).status_code
    for reason in ("   ", "\x1c", "x" * (MAX_REASON + 1)):
        assert client.request("DELETE", f"/api/v1/runs/{hexid}", json={"reason": reason}).status_code == 422
    assert got == {s: s for s in asked}
    assert {"200", "400", "401", "403", "404", "409", "422", "503"} <= set(op["responses"])
    # the rules, stated: what the schema allows the route takes, and what it refuses the schema rules out
    run_id = op["parameters"][0]["schema"]
    reason = op["requestBody"]["content"]["application/json"]["schema"]["properties"]["reason"]
    assert (reason["minLength"], reason["maxLength"]) == (1, MAX_REASON)
    for rid in (hexid, "AB" * 16, "g" * 32, hexid[:-1]):
        assert bool(re.search(run_id["pattern"], rid)) == (rid == hexid)
    with pytest.raises(
        Exception, match="not valid"
    ):  # ECMA's "$" (the schema's) takes no trailing newline: nor does the route
        check_request(hexid + "\n", "battery")
    for text in ("ran on battery", " x ", "\ufeff", "   ", "\x1c\x85\u3000", "\t\n"):
        allowed = bool(re.search(reason["pattern"], text))
        try:
            check_request(hexid, text)
            taken = True
        except Exception:  # noqa: BLE001 - its StoreError(422)
            taken = False
        assert not allowed or taken, repr(text)  # the schema never allows what the route refuses
        assert allowed == (text in ("ran on battery", " x ", "\ufeff")), repr(text)


def test_every_documented_query_parameter_is_one_its_route_accepts():
    """The names come from the views' own tuples: none of them is refused as unknown, an undocumented one is."""
    client = TestClient(APP)
    doc = client.get("/api/v1/openapi.json").json()
    for path, ops in doc["paths"].items():
        names = [p["name"] for p in ops.get("get", {}).get("parameters", []) if p["in"] == "query"]
        if "{" in path or not names:
            continue
        for name in names:
            body = client.get(path, params={name: "x"}).json()
            assert "unknown" not in body.get("error", ""), (path, name, body)
        if path not in ("/api/v1/compare", "/api/v1/regressions", "/api/v1/claims"):  # these ignore extras
            answer = client.get(path, params={"no_such_parameter": "1"})
            assert answer.status_code == 400 and "unknown" in answer.json()["error"], (path, answer.text)


# what a request the document allows may get (schemathesis's positive_data_acceptance, less its 5xx): an answer, or
# a well-formed value that names nothing stored (404), a run_id stored with other content (409); never a 400/422
ACCEPTED = {200, 201, 401, 403, 404, 409, 429}
# the upload's rules between values, which JSON Schema cannot state (bundle.json_rules.RELATIONAL), and an integer
# written with a fraction (JSON Schema calls 3.0 an integer; the ingest reads JSON's types strictly): a 422 naming
# one of these is the documented answer to a body the schema allows
UPLOAD_RELATIONAL = (
    "ended_at must not be before started_at",
    "repeats the case of",
    "does not match params",
    "sample counts add up to",
    "contention shares for",
    "summary does not match the samples",
    "Input should be a valid integer",
    "is listed twice (one entry per name)",  # a breakdown's entries (bundle.json_rules.RELATIONAL)
    "does not match device_time_us / the breakdown's device time",
)


def _rejected_although_valid(case, response) -> bool:
    if not case.meta.generation.mode.is_positive or response.status_code in ACCEPTED:
        return False
    if (case.method, case.path) == ("POST", "/api/v1/runs") and response.status_code == 422:
        rules = [e["rule"] for e in response.json()["errors"]]
        return not all(any(r in rule for r in UPLOAD_RELATIONAL) for rule in rules)
    return True


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)
def test_no_input_reaches_a_server_error_and_no_valid_request_is_rejected(case):
    """Issue 46: 11 requests the document allowed were refused with a 400 (selectors, the sweep id, noise's
    numbers, a run tag, stored values that are a 404) or a 422 (schema_version 300): the document now states each
    rule the server checks on a parameter's form."""
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, case.query, response.text[:500])
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"ok", "status", "error", "errors"} and body["ok"] is False, body
        assert body["status"] == response.status_code and isinstance(body["error"], str) and body["error"], body
        assert all(set(e) == {"field", "rule"} for e in body["errors"]), body
    assert not _rejected_although_valid(case, response), (
        "valid request rejected",
        case.method,
        case.path,
        case.path_parameters,
        case.query,
        response.text[:500],
    )


# hand-picked hostile values for every documented query parameter (the fuzz above draws random ones)
ODD = ["99999999999999999999999999", "nan", "a\x00b", "\u202e\ufeff😀١٢", "'; DROP TABLE runs;--" + "x" * 20000]
RAW = ["%ED%A0%80", "%FF%FE", "%"]  # a lone surrogate, bytes that are not UTF-8, a bare %
SIDES = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1"}


def _json_error(response) -> None:
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        body = response.json()
        assert body["ok"] is False and body["status"] == response.status_code and body["error"], body


def test_hostile_values_in_every_query_parameter_are_a_json_4xx_or_an_answer():
    client = TestClient(APP)
    doc = client.get("/api/v1/openapi.json").json()
    for path, ops in doc["paths"].items():
        if "get" not in ops or "{" in path:
            continue
        names = [p["name"] for p in ops["get"]["parameters"] if p["in"] == "query"]
        base = SIDES if {"baseline", "candidate"} <= set(names) else {}  # reach past the sides' own checks
        for name in names:
            for value in ODD:
                _json_error(client.get(path, params=base | {name: value}))
            for raw in RAW:
                _json_error(client.get(f"{path}?{name}={raw}"))
    for raw in RAW + ["x%2Fy", "a" * 5000]:
        _json_error(client.get(f"/api/v1/sweeps/{raw}"))
    _json_error(client.get("/api/v1/no-such-route"))  # the JSON 404, not the dashboard's page


@pytest.mark.parametrize(
    "path, name, value",
    [
        ("/api/v1/runs", "limit", "١٢"),
        ("/api/v1/runs", "limit", "1_0"),
        ("/api/v1/runs", "limit", " 12\n3"),
        ("/api/v1/regressions", "threshold", "٥"),
        ("/api/v1/regressions", "threshold", "infinity"),
        ("/api/v1/regressions", "threshold", "1_0"),
        ("/api/v1/noise", "precision", "٢"),
        ("/api/v1/noise", "precision", "NaN"),
    ],
)
def test_numbers_are_ascii_decimals_not_whatever_python_reads_as_one(path, name, value):
    """int()/float() take other scripts' digits ("١٢" is 12), underscores and "infinity": a URL's number is
    refused unless it is written in ASCII digits, naming the parameter."""
    params = (SIDES if path == "/api/v1/regressions" else {}) | {name: value}
    response = TestClient(APP).get(path, params=params)
    assert response.status_code == 400 and response.json()["errors"][0]["field"] == name, response.text
