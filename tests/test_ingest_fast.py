"""The fast ingest path (db.ingest.fast) against the reference path (pydantic): same rows stored, and it never
accepts what the reference refuses (it declines, and the reference gives the exact refusal)."""
import importlib.util
import json
import math
from pathlib import Path

import duckdb
import pytest
from sqlalchemy import text

import db.ingest.core as ingest
from bundle.stats import summarize
from db.ingest import fast as ingest_fast
from db.ingest import results_text
from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result

ROOT = Path(__file__).resolve().parent.parent
SUMMARY_COLUMNS = ("median", "mean", "min", "max", "p25", "p75", "stdev")


def _bench_bundle(rows: int) -> dict:
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "benchmarks" / "ingest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return json.loads(module.build_bundle_bytes(rows))


def _example() -> dict:
    return json.loads((ROOT / "examples" / "cpu-quick.json").read_text())


def _no_reference(duck, raw):
    raise AssertionError("the fast path declined a bundle it should have taken")


def _stored(engine) -> tuple[list[dict], dict]:
    with engine.connect() as c:
        rows = [dict(r._mapping) for r in c.execute(text("SELECT * FROM results ORDER BY result_id"))]
        run = dict(c.execute(text("SELECT * FROM runs")).one()._mapping)
    run.pop("ingested_at")
    return rows, run


def _assert_same(fast_rows, ref_rows):
    assert len(fast_rows) == len(ref_rows)
    for f, r in zip(fast_rows, ref_rows):
        assert {k: v for k, v in f.items() if k not in SUMMARY_COLUMNS} == \
               {k: v for k, v in r.items() if k not in SUMMARY_COLUMNS}
        for k in SUMMARY_COLUMNS:
            assert (f[k] is None) == (r[k] is None), k
            if f[k] is not None:
                assert math.isclose(f[k], r[k], rel_tol=1e-12, abs_tol=1e-300), (k, f[k], r[k])


def _with_summary(**kw) -> dict:
    r = make_result(**kw)
    return r | {"summary": summarize(r["samples"]).model_dump()}


PARITY = {
    "make_bundle": lambda: make_bundle(),
    "example": _example,
    "benchmark": lambda: _bench_bundle(160),
    "benchmark_6000": lambda: _bench_bundle(6000),  # rows in several of DuckDB's 2048-row vectors
    "units": lambda: make_bundle(results=[
        make_result(unit="ms", samples=[0.005, 0.001, 0.004]), make_result(unit="us"), make_result(unit="ns"),
        make_result(unit="usec", samples=[3.0]), make_result(metric="memory_driver_peak", unit="GiB", samples=[1.5]),
        make_result(metric="storage_bytes", unit="bytes", samples=[4096]),
        make_result(metric="decode_throughput", unit="tok/s", samples=[40, 41]),
        make_result(metric="bandwidth_fraction", unit="1", samples=[0.4, 0.5]),
        make_result(metric="achieved_bandwidth", unit="B/s", samples=[3e11])]),
    "statuses": lambda: make_bundle(results=[
        make_result(status="unsupported", samples=[], message="no fp8 on this chip"),
        make_result(status="fallback", samples=[1.0], message="aten::foo fell back to CPU", warnings=["cpu fallback"]),
        make_result(status="error", samples=[], message="RuntimeError: ünïcode \"quoted\" \\ back\nslash 🚀"),
        make_result(metric="memory_reserved_peak", unit="B", status="unavailable", samples=[], message="no API")]),
    "summaries_and_keys": lambda: make_bundle(results=[
        _with_summary(), _with_summary(unit="ms", samples=[0.5, 0.25, 1.0, 2.0]), _with_summary(samples=[7.0]),
        make_result(params={"vocab": 128256, "rows": 1}, case_key='{"rows":1,"vocab":128256}'),
        make_result(params={"flag": True, "none": None, "ratio": 0.5, "name": "é/\"x\""}),
        {k: v for k, v in make_result(warnings=["noisy: IQR 12 %", "ünï"]).items() if k != "compile"}]),
    "hostile_strings": lambda: make_bundle(tags={"note": "<script>'; DROP TABLE runs; --"}, results=[
        make_result(status="error", samples=[], message="'; DROP TABLE results; -- \u2028 \t \x01")]),
    "empty": lambda: make_bundle(results=[]),
    "lax_summary": lambda: make_bundle(results=[  # a stated summary is read as pydantic's lax mode reads it
        make_result(samples=[7.0], summary=summarize([7.0]).model_dump() | {"n": "1", "mean": "7.0", "stdev": None})]),
    "big_numbers": lambda: make_bundle(results=[  # beyond 64 bits, the case_key keeps every digit
        make_result(params={"n": 2**64 + 1, "neg": -(2**63) - 1, "huge": 10**30, "f": 1e308, "tiny": 5e-324})]),
}


@pytest.mark.parametrize("name", PARITY)
def test_fast_and_reference_store_identical_rows(monkeypatch, name):
    bundle = PARITY[name]()
    ref = open_store(":memory:")
    ingest_bundle(ref, bundle)  # a dict goes straight to the reference path
    fast = open_store(":memory:")
    with monkeypatch.context() as m:
        m.setattr(ingest, "_stage_reference", _no_reference)
        out = ingest_bundle(fast, json.dumps(bundle, indent=1, ensure_ascii=False).encode())
    assert out.created and out.n_results == len(bundle["results"])
    (fast_rows, fast_run), (ref_rows, ref_run) = _stored(fast), _stored(ref)
    _assert_same(fast_rows, ref_rows)
    assert fast_run == ref_run  # including bundle_sha256: the hash does not depend on the path
    assert ingest_bundle(fast, bundle).created is False and ingest_bundle(ref, json.dumps(bundle)).created is False


@pytest.mark.parametrize("name", ["benchmark_6000", "summaries_and_keys", "hostile_strings"])
def test_an_array_parsed_in_two_pieces_stores_the_same_rows(monkeypatch, name):
    """Forced to cut every array in two (as it does past SPLIT_BYTES), the fast path stores the reference's rows."""
    bundle = PARITY[name]()
    ref = open_store(":memory:")
    ingest_bundle(ref, bundle)
    fast = open_store(":memory:")
    monkeypatch.setattr(results_text, "SPLIT_BYTES", 1)
    monkeypatch.setattr(ingest, "_stage_reference", _no_reference)
    ingest_bundle(fast, json.dumps(bundle, ensure_ascii=False).encode())
    _assert_same(_stored(fast)[0], _stored(ref)[0])
    assert _stored(fast)[1] == _stored(ref)[1]


def test_a_cut_inside_a_string_is_declined(monkeypatch):
    """The first "}, {" past the middle is inside a message: no piece is an array, so the reference runs."""
    trap = "x" * 400 + "}, {" + "y" * 400
    bundle = make_bundle(results=[make_result(), make_result(status="error", samples=[], message=trap)])
    raw = _raw(bundle)
    assert raw.index(b"}, {", len(raw) // 2) > raw.index(trap.encode())  # the cut lands in the message
    monkeypatch.setattr(results_text, "SPLIT_BYTES", 1)
    assert _declines(raw)
    assert ingest_bundle(open_store(":memory:"), raw).created
    monkeypatch.setattr(results_text, "SPLIT_BYTES", len(raw))  # one piece: the fast path takes it
    assert not _declines(raw)


def test_an_unknown_key_in_the_second_piece_is_declined(monkeypatch):
    bundle = make_bundle(results=[make_result() for _ in range(8)] + [make_result(colour="red")])
    monkeypatch.setattr(results_text, "SPLIT_BYTES", 1)
    assert _declines(_raw(bundle))


def _declines(raw: bytes) -> bool:
    engine = open_store(":memory:")
    with engine.connect() as conn:
        duck = conn.connection.driver_connection
        try:
            staged = ingest_fast.stage(duck, raw)
        except duckdb.Error:
            return True
        return staged is None or isinstance(staged, ingest_fast.Suspects)


def _raw(bundle: dict) -> bytes:
    return json.dumps(bundle, ensure_ascii=False).encode()


def _dup_key(bundle: dict) -> bytes:
    return _raw(bundle).replace(b'"suite": "kernels"', b'"suite": "kernels", "suite": "models"', 1)


def _spaced_null(bundle: dict) -> bytes:
    return _raw(bundle).replace(b'"compile": "eager"', b'"compile" \n\t:  null', 1)


def _escaped_key(bundle: dict, value: bytes) -> bytes:
    return _raw(bundle).replace(b'"compile": "eager"', b'"\\u0063ompile": ' + value, 1)


def _results_first(bundle: dict) -> bytes:
    return _raw({"results": bundle["results"]} | {k: v for k, v in bundle.items() if k != "results"})


R = make_result
# (bundle bytes, the field the reference refuses, or None where the reference accepts a lax spelling)
HOSTILE = [
    (_raw(make_bundle(results=[R(metric="speed")])), "results[0].metric"),
    (_raw(make_bundle(results=[R(unit="GiB")])), "results[0].unit"),
    (_raw(make_bundle(results=[R(samples=[1.0, float("nan")])])), "results[0].samples"),
    (_raw(make_bundle(results=[R(samples=[1.0, float("inf")])])), "results[0].samples"),
    (_raw(make_bundle(results=[R(samples=[])])), "results[0]"),
    (_raw(make_bundle(results=[R(status="unsupported", message="no fp8")])), "results[0]"),
    (_raw(make_bundle(results=[R(status="error", samples=[])])), "results[0]"),
    (_raw(make_bundle(results=[R(status="maybe")])), "results[0].status"),
    (_raw(make_bundle(results=[R(case_key='{"rows":2}')])), "results[0].case_key"),
    (_raw(make_bundle(results=[R(colour="red")])), "results[0].colour"),
    (_raw(make_bundle(results=[R(workload=5)])), "results[0].workload"),
    (_raw(make_bundle(results=[R(workload="")])), "results[0].workload"),
    (_raw(make_bundle(results=[R(dtype="x" * 201)])), "results[0].dtype"),
    (_raw(make_bundle(results=[R(compile=None)])), "results[0].compile"),
    (_raw(make_bundle(results=[R(samples=None)])), "results[0].samples"),
    (_raw(make_bundle(results=[R(case_key=None)])), "results[0].case_key"),
    (_raw(make_bundle(results=[R(warnings=None)])), "results[0].warnings"),
    (_raw(make_bundle(results=[R(), R(), R(colour=None)])), "results[2].colour"),  # an unknown key, null valued
    (_raw(make_bundle(results=[R(), 7])), "results[1]"),
    (_raw(make_bundle(results=[R(passed=2)])), "results[0].passed"),
    (_raw(make_bundle(results=[R(params={"shape": [1, 2]})])), "results[0].params.shape.str"),
    (_raw(make_bundle(results=[R(message="m" * 20_001)])), "results[0].message"),
    (_raw(make_bundle(results=[R(warnings=[3])])), "results[0].warnings[0]"),
    (_raw(make_bundle(results=[R(samples=[1.0, 2.0], summary=summarize([1.0, 3.0]).model_dump())])), "results[0]"),
    (_raw(make_bundle(results=[R(summary={"n": 4})])), "results[0].summary.median"),
    (_raw(make_bundle(results=[R(), R(metric="speed")])), "results[1].metric"),
    (_raw(make_bundle(run_id="XYZ")), "run_id"),
    (_raw(make_bundle(started_at="2026-12-02T10:00:00")), "started_at"),
    (_raw(make_bundle(schema_version=99)), "schema_version"),
    (_raw(make_bundle(colour="red")), "colour"),
    (_raw(make_bundle(results=[R(samples=["7.5", 8])])), None),  # pydantic's lax mode takes "7.5"
    (_raw(make_bundle(results=[R(metric="psnr_vs_cpu", unit="dB", samples=[60.0], passed=1)])), None),
    (_raw(make_bundle(results=[R(tolerance="0.1")])), None),
    (_raw(make_bundle(results=[R(workload="é" * 150)])), None),  # 150 characters, 300 bytes
    (_dup_key(make_bundle()), None),  # json.loads keeps the last of a duplicated key
    (_spaced_null(make_bundle()), "results[0].compile"),
    (_escaped_key(make_bundle(), b"null"), "results[0].compile"),  # the null hides behind an escaped key
    (_escaped_key(make_bundle(), b'"eager"'), None),
    (_results_first(make_bundle()), None),  # results not last: not cut out, read by the reference
]


@pytest.mark.parametrize(("raw", "field"), HOSTILE, ids=[f"{i}-{f}" for i, (_, f) in enumerate(HOSTILE)])
def test_fast_path_declines_what_it_cannot_prove_and_reference_decides(raw, field):
    assert _declines(raw)
    engine = open_store(":memory:")
    if field is None:
        assert ingest_bundle(engine, raw).created
        with engine.connect() as c:
            assert c.execute(text("SELECT count(*) FROM results")).scalar() == len(json.loads(raw)["results"])
        return
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, raw)
    assert info.value.status == 422 and field in [p.field for p in info.value.problems]
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM runs")).scalar() == 0


def _problems(engine, raw) -> list[tuple[str, str]]:
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, raw)
    return [(p.field, p.rule) for p in info.value.problems]


@pytest.mark.parametrize(("raw", "field"), [h for h in HOSTILE if h[1]], ids=[h[1] for h in HOSTILE if h[1]])
def test_every_refusal_names_what_the_reference_names(raw, field):
    """Bytes (fast path, suspects checked one by one) and the same bundle as a dict (reference path only) are
    refused with the same problems, in the same order."""
    assert _problems(open_store(":memory:"), raw) == _problems(open_store(":memory:"), json.loads(raw))


def test_a_big_refusal_checks_only_the_suspects(monkeypatch):
    """A big bundle with bad rows is refused from the suspects alone (the reference path is never run), and
    says when it stopped looking."""
    bundle = _bench_bundle(6000)
    for i in (3, 4100, 5999):  # in three of DuckDB's 2048-row vectors: the indices must survive the scan
        bundle["results"][i]["unit"] = "furlongs"
    monkeypatch.setattr(ingest, "_stage_reference", _no_reference)
    monkeypatch.setattr(ingest_fast, "SUSPECTS", 2)
    problems = _problems(open_store(":memory:"), _raw(bundle))
    assert [p[0] for p in problems] == ["results[3].unit", "results[4100].unit", "results"]
    assert "first 2 results" in problems[-1][1]


def test_same_content_in_another_spelling_is_already_present():
    mem = dict(metric="memory_driver_peak", unit="MiB", samples=[512.0])
    bundle = make_bundle(results=[R(**mem)])
    engine = open_store(":memory:")
    assert ingest_bundle(engine, _raw(bundle)).created
    same = bundle | {"results": [R(**mem | {"unit": "B", "samples": [512.0 * 2**20]})]}  # canonical unit
    assert ingest_bundle(engine, json.dumps(same, indent=4).encode()).created is False
    assert ingest_bundle(engine, _results_first(bundle)).created is False  # reference path, same hash
    other = bundle | {"results": [R(**mem | {"samples": [513.0]})]}
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, _raw(other))
    assert info.value.status == 409


def test_split_cuts_out_the_last_results_array_only():
    """split cuts from the results value to the last "]"; DuckDB's reader refuses a cut that is more than one
    array (results not last), so the fast path declines it (HOSTILE's _results_first case)."""
    bundle = make_bundle()
    header, array = results_text.split(json.dumps(bundle, indent=2).encode() + b"\n")
    assert header == bundle | {"results": []} and json.loads(bytes(array)) == bundle["results"]
    assert results_text.split(b'{"results": [1]} trailing') is None
    assert results_text.split(b"[1, 2]") is None
