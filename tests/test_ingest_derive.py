"""The set-based checks (db.ingest.schema_checks, derived from bundle.schema) against the schema itself: for every
bundle here the ingest accepts exactly what `Bundle.model_validate_json(strict=True)` accepts, stores the rows
the validated model says (canonical units, numpy's summaries), and refuses with the schema's own problems."""

import importlib.util
import json
from pathlib import Path

import duckdb
import numpy as np
import pytest
from pydantic import ValidationError
from sqlalchemy import text

from bundle.metrics import METRICS
from bundle.schema import MAX_TAGS, Bundle
from bundle.stats import summarize
from bundle.units import conversion_factor
from db.errors import StoreError
from db.ingest import refusals, results_text, staging
from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from tests.bundles import make_bundle, make_result

ROOT = Path(__file__).resolve().parent.parent
R = make_result


def _bench_bundle(rows: int) -> dict:
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "benchmarks" / "ingest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return json.loads(module.build_bundle_bytes(rows))


def _raw(bundle: dict, **kw) -> bytes:
    return json.dumps(bundle, ensure_ascii=False, **kw).encode()


def _with_summary(**kw) -> dict:
    r = R(**kw)
    return r | {"summary": summarize(r["samples"]).model_dump()}


def _results_first(bundle: dict) -> bytes:
    return _raw({"results": bundle["results"]} | {k: v for k, v in bundle.items() if k != "results"})


def _replace(bundle: dict, old: bytes, new: bytes) -> bytes:
    raw = _raw(bundle)
    assert old in raw
    return raw.replace(old, new, 1)


def _cases(*results: dict) -> list[dict]:
    """Each result its own case (a bundle holds a case once): the workload numbered by position."""
    return [r | {"workload": f"{r['workload']}-{k}"} for k, r in enumerate(results)]


VALID = {
    "make_bundle": lambda: _raw(make_bundle()),
    "example": lambda: (ROOT / "examples" / "cpu-quick.json").read_bytes(),
    "benchmark_6000": lambda: _raw(_bench_bundle(6000)),  # rows in several of DuckDB's 2048-row vectors
    "indented": lambda: _raw(make_bundle(), indent=1),
    "units": lambda: _raw(
        make_bundle(
            results=_cases(
                R(unit="ms", samples=[0.005, 0.001, 0.004]),
                R(unit="us"),
                R(unit="ns"),
                R(unit="usec", samples=[3.0]),
                R(metric="memory_driver_peak", unit="GiB", samples=[1.5]),
                R(metric="storage_bytes", unit="bytes", samples=[4096]),
                R(metric="decode_throughput", unit="tok/s", samples=[40, 41]),
                R(metric="max_abs_error", unit="1", samples=[0]),
                R(metric="psnr_vs_cpu", unit="dB", samples=[-3.0]),
                R(metric="memory_outside_allocator", unit="B", samples=[-5]),
                R(metric="achieved_bandwidth", unit="B/s", samples=[3e11]),
            )
        )
    ),
    "statuses": lambda: _raw(
        make_bundle(
            results=_cases(
                R(status="unsupported", samples=[], message="no fp8 on this chip"),
                R(status="fallback", samples=[1.0], message="aten::foo fell back to CPU", warnings=["cpu fallback"]),
                R(status="error", samples=[], message='RuntimeError: ünïcode "quoted" \\ back\nslash 🚀 NaN, ]'),
                R(metric="memory_reserved_peak", unit="B", status="unavailable", samples=[], message="no API"),
                R(status="error", samples=[], message="x", summary=summarize([1.0]).model_dump()),
            )
        )
    ),  # summary dropped
    "summaries_and_keys": lambda: _raw(
        make_bundle(
            results=_cases(
                _with_summary(),
                _with_summary(unit="ms", samples=[0.5, 0.25, 1.0, 2.0]),
                _with_summary(samples=[7.0]),
                R(params={"vocab": 128256, "rows": 1}, case_key='{"rows":1,"vocab":128256}'),
                R(params={"flag": True, "none": None, "ratio": 0.5, "name": 'é/"x"', "big": 2**63 - 1}),
                {k: v for k, v in R(warnings=["noisy: IQR 12 %", "ünï"]).items() if k != "compile"},
            )
        )
    ),
    "hostile_strings": lambda: _raw(
        make_bundle(
            tags={"note": "<script>'; DROP TABLE runs; --"},
            results=[
                R(status="error", samples=[], message='\'; DROP TABLE results; -- \u2028 \t \x01 "compile": null')
            ],
        )
    ),
    "empty": lambda: _raw(make_bundle(results=[])),
    "max_tags": lambda: _raw(make_bundle(tags={f"k{i}": f"v{i}" for i in range(MAX_TAGS)})),
    "duplicate_key": lambda: _replace(make_bundle(), b'"suite": "kernels"', b'"suite": "x", "suite": "kernels"'),
    "escaped_key": lambda: _replace(make_bundle(), b'"compile": "eager"', b'"\\u0063ompile": "eager"'),
    "results_first": lambda: _results_first(make_bundle()),
    "params_int65": lambda: _raw(make_bundle(results=[R(params={"n": 2**64 + 1})])),  # past int64: a float
    "summary_reordered": lambda: _raw(
        make_bundle(
            results=[  # not the collector's key order: the general check
                R(samples=[7.0, 9.0], summary=dict(reversed(summarize([7.0, 9.0]).model_dump().items())))
            ]
        )
    ),
}

INVALID = {
    "metric": _raw(make_bundle(results=[R(metric="speed")])),
    "unit": _raw(make_bundle(results=[R(unit="GiB")])),
    "inf": _raw(make_bundle(results=[R(samples=[1.0, 1e400])])).replace(b"Infinity", b"1e400"),
    "no_samples": _raw(make_bundle(results=[R(samples=[])])),
    "unsupported_with_samples": _raw(make_bundle(results=[R(status="unsupported", message="no fp8")])),
    "error_without_message": _raw(make_bundle(results=[R(status="error", samples=[])])),
    "status": _raw(make_bundle(results=[R(status="maybe")])),
    "case_key": _raw(make_bundle(results=[R(case_key='{"rows":2}')])),
    "unknown_key": _raw(make_bundle(results=[R(colour="red")])),
    "workload_number": _raw(make_bundle(results=[R(workload=5)])),
    "workload_empty": _raw(make_bundle(results=[R(workload="")])),
    "dtype_long": _raw(make_bundle(results=[R(dtype="x" * 201)])),
    "compile_null": _raw(make_bundle(results=[R(compile=None)])),
    "samples_null": _raw(make_bundle(results=[R(samples=None)])),
    "case_key_null": _raw(make_bundle(results=[R(case_key=None)])),
    "warnings_null": _raw(make_bundle(results=[R(warnings=None)])),
    # a schema-1 row lacks contention and processes (read as NULL like a null): the text search must still find
    # the one row that states null, and an escaped key spelling it
    "contention_null_beside_absent": _raw(make_bundle(schema_version=3, results=[R(), R(), R(contention=None)])),
    "processes_null_beside_absent": _raw(make_bundle(schema_version=2, results=[R(), R(processes=None)])),
    "escaped_processes_null": _replace(
        make_bundle(schema_version=2), b'"compile": "eager"', b'"compile": "eager", "\\u0070rocesses": null'
    ),
    "unknown_key_null": _raw(make_bundle(results=[R(), R(), R(colour=None)])),
    "not_an_object": _raw(make_bundle(results=[R(), 7])),
    "passed_number": _raw(make_bundle(results=[R(passed=2)])),
    "params_list": _raw(make_bundle(results=[R(params={"shape": [1, 2]})])),
    "message_long": _raw(make_bundle(results=[R(message="m" * 20_001)])),
    "warnings_number": _raw(make_bundle(results=[R(warnings=[3])])),
    "summary_disagrees": _raw(make_bundle(results=[R(samples=[1.0, 2.0], summary=summarize([1.0, 3.0]).model_dump())])),
    "summary_partial": _raw(make_bundle(results=[R(summary={"n": 4})])),
    "summary_string": _raw(make_bundle(results=[R(samples=[7.0], summary=summarize([7.0]).model_dump() | {"n": "1"})])),
    "summary_float_n": _raw(
        make_bundle(results=[R(samples=[7.0], summary=summarize([7.0]).model_dump() | {"n": 1.0})])
    ),
    "summary_reordered_string": _raw(
        make_bundle(
            results=[
                R(samples=[7.0], summary=dict(reversed((summarize([7.0]).model_dump() | {"median": "7.0"}).items())))
            ]
        )
    ),
    "second_row": _raw(make_bundle(results=[R(), R(metric="speed")])),
    "samples_strings": _raw(make_bundle(results=[R(samples=["7.5", 8])])),
    "tolerance_string": _raw(make_bundle(results=[R(tolerance="0.1")])),
    "negative_time": _raw(make_bundle(results=[R(samples=[-7.0])])),
    "negative_error": _raw(make_bundle(results=[R(metric="max_rel_error", unit="1", samples=[-1e-3])])),
    "overflow": _raw(make_bundle(results=[R(samples=[1e308, 1e308])])),
    "spread_overflow": _raw(make_bundle(results=[R(metric="psnr_vs_cpu", unit="dB", samples=[-1e308, 1e308])])),
    "spaced_null": _replace(make_bundle(), b'"compile": "eager"', b'"compile" \n\t:  null'),
    "escaped_null": _replace(make_bundle(), b'"compile": "eager"', b'"\\u0063ompile": null'),
    "run_id": _raw(make_bundle(run_id="XYZ")),
    "naive_time": _raw(make_bundle(started_at="2026-12-02T10:00:00")),
    "schema_version": _raw(make_bundle(schema_version=99)),
    "header_key": _raw(make_bundle(colour="red")),
}


def _schema_problems(raw: bytes) -> list[tuple[str, str]] | None:
    """The schema's own answer: None (valid) or its problems, worded as the ingest words them."""
    try:
        Bundle.model_validate_json(raw, strict=True)
        return None
    except ValidationError as exc:
        return [(p.field, p.rule) for p in refusals.problems(exc)]


def _stored(engine) -> list[dict]:
    with engine.connect() as c:
        rows = c.execute(text("SELECT * FROM results ORDER BY CAST(split_part(result_id, ':', 2) AS INTEGER)"))
        return [dict(r._mapping) for r in rows]


def _expected(raw: bytes) -> list[dict]:
    """The rows the validated model says, computed here without the ingest."""
    b = Bundle.model_validate_json(raw, strict=True)
    out = []
    for i, r in enumerate(b.results):
        factor = conversion_factor(r.unit, METRICS[r.metric].unit)
        out.append(
            dict(
                result_id=f"{b.run_id}:{i}",
                workload=r.workload,
                suite=r.suite,
                case_key=r.case_key,
                params_json=json.dumps(r.params, ensure_ascii=False),
                dtype=r.dtype,
                compile=r.compile,
                metric=r.metric,
                unit=METRICS[r.metric].unit,
                status=r.status.value,
                message=r.message,
                warnings_json=json.dumps(r.warnings, ensure_ascii=False),
                samples=[x * factor for x in r.samples],
                passed=r.passed,
                tolerance=r.tolerance,
            )
        )
    return out


@pytest.mark.parametrize("name", VALID)
def test_a_valid_bundle_is_stored_as_the_schema_says(name):
    raw = VALID[name]()
    assert _schema_problems(raw) is None
    engine = open_store(":memory:")
    assert ingest_bundle(engine, raw).created
    rows, expected = _stored(engine), _expected(raw)
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        assert {k: row[k] for k in want if k != "samples"} == {k: v for k, v in want.items() if k != "samples"}
        assert row["samples"] == pytest.approx(want["samples"], rel=1e-12)
        arr = np.array(want["samples"])
        if len(arr):
            assert (row["n"], row["median"], row["p25"], row["p75"], row["mean"]) == pytest.approx(
                (len(arr), np.median(arr), *np.percentile(arr, [25, 75]), arr.mean()), rel=1e-12
            )
            assert (row["stdev"] is None) == (len(arr) == 1)
        else:
            assert row["n"] == 0 and row["median"] is None
    assert ingest_bundle(engine, raw).created is False


@pytest.mark.parametrize("name", INVALID)
def test_an_invalid_bundle_is_refused_with_the_schemas_problems(name):
    raw = INVALID[name]
    expected = _schema_problems(raw)
    assert expected is not None
    engine = open_store(":memory:")
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, raw)
    assert info.value.status == 422
    assert [(p.field, p.rule) for p in info.value.problems] == expected
    with engine.connect() as c:
        assert c.execute(text("SELECT count(*) FROM runs")).scalar() == 0


@pytest.mark.parametrize("name", ["benchmark_6000", "summaries_and_keys", "hostile_strings"])
def test_an_array_parsed_in_two_pieces_stores_the_same_rows(monkeypatch, name):
    raw = VALID[name]()
    whole = open_store(":memory:")
    ingest_bundle(whole, raw)
    monkeypatch.setattr(results_text, "SPLIT_BYTES", 1)
    split = open_store(":memory:")
    ingest_bundle(split, raw)
    assert _stored(split) == _stored(whole)


def test_a_cut_inside_a_string_is_read_again_whole(monkeypatch):
    trap = "x" * 400 + "}, {" + "y" * 400
    raw = _raw(make_bundle(results=_cases(R(), R(status="error", samples=[], message=trap))))
    assert raw.index(b"}, {", len(raw) // 2) > raw.index(trap.encode())  # the cut lands in the message
    monkeypatch.setattr(results_text, "SPLIT_BYTES", 1)
    engine = open_store(":memory:")
    assert ingest_bundle(engine, raw).created and len(_stored(engine)) == 2


def test_a_failed_comma_scan_leaves_the_document_to_the_schema(monkeypatch, tmp_path):
    def broken(paths):
        raise duckdb.IOException("scan failed")

    monkeypatch.setattr(results_text, "_scan", broken)
    monkeypatch.setattr(results_text, "SCRATCH", str(tmp_path))
    engine = open_store(":memory:")
    comma = _raw(make_bundle(results=[R(samples=[7.0, 8.0])])).replace(b"[7.0, 8.0]", b"[7.0, 8.0,]")
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, comma)
    assert info.value.status == 400  # refused as the schema's parser refuses it, not stored, no crash
    assert ingest_bundle(engine, _raw(make_bundle())).created  # a valid one is still stored
    assert list(tmp_path.iterdir()) == []  # the scratch files went with the scan


def test_a_big_refusal_checks_only_the_first_suspects(monkeypatch):
    bundle = _bench_bundle(6000)
    for i in (3, 4100, 5999):  # in three of DuckDB's 2048-row vectors: the indices must survive the scan
        bundle["results"][i]["unit"] = "furlongs"
    monkeypatch.setattr(staging, "SUSPECTS", 2)
    with pytest.raises(StoreError) as info:
        ingest_bundle(open_store(":memory:"), _raw(bundle))
    problems = info.value.problems
    assert [p.field for p in problems] == ["results[3].unit", "results[4100].unit", "results"]
    assert "first 2 results" in problems[-1].rule


def test_same_content_in_another_spelling_is_already_present_and_other_content_409():
    mem = dict(metric="memory_driver_peak", unit="MiB", samples=[512.0])
    bundle = make_bundle(results=[R(**mem)])
    engine = open_store(":memory:")
    assert ingest_bundle(engine, _raw(bundle)).created
    same = bundle | {"results": [R(**mem | {"unit": "B", "samples": [512.0 * 2**20]})]}  # canonical unit
    assert ingest_bundle(engine, _raw(same, indent=4)).created is False
    assert ingest_bundle(engine, _results_first(bundle)).created is False
    assert ingest_bundle(engine, bundle).created is False  # a dict: the same path
    other = bundle | {"results": [R(**mem | {"samples": [513.0]})]}
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, _raw(other))
    assert info.value.status == 409


def test_all_of_a_runs_tags_are_stored():
    tags = {f"key-{i}": f"value {i} ü" for i in range(MAX_TAGS)}
    bundle = make_bundle(tags=tags)
    engine = open_store(":memory:")
    ingest_bundle(engine, bundle)
    with engine.connect() as c:
        rows = c.execute(text("SELECT run_id, key, value FROM run_tags")).fetchall()
    assert sorted(rows) == sorted((bundle["run_id"], k, v) for k, v in tags.items())


def test_split_cuts_out_the_last_results_array_only():
    bundle = make_bundle()
    header, array = results_text.split(_raw(bundle, indent=2) + b"\n")
    assert json.loads(header) == bundle | {"results": []} and json.loads(bytes(array)) == bundle["results"]
    assert results_text.split(b'{"results": [1]} trailing') is None
    assert results_text.split(b"[1, 2]") is None
