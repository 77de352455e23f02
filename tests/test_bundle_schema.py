"""The bundle models: derived summaries, canonical case keys, refusals that name the field and the rule."""

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from bundle.schema import Bundle, Result, case_key, json_schema


def _result(**kw):
    base = dict(
        workload="softmax",
        suite="kernels",
        params={"rows": 1, "vocab": 128256},
        dtype="float32",
        metric="op_time",
        unit="µs",
        status="ok",
        samples=[7.1, 7.3, 7.2, 9.0],
    )
    return base | kw


def _bundle(**kw):
    base = dict(
        schema_version=1,
        run_id=uuid.uuid4().hex,
        started_at=datetime(2026, 12, 2, tzinfo=timezone.utc),
        complete=True,
        machine={"name": "m3u", "os": "macOS", "chip": "Apple M3 Ultra"},
        build={"torch_version": "2.15.0rc1", "channel": "rc", "python_version": "3.11.7", "collector_version": "0.1.0"},
        device={"type": "mps", "name": "Apple M3 Ultra"},
        results=[_result()],
    )
    return base | kw


def test_summary_is_derived_from_samples_like_numpy():
    samples = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    s = Result(**_result(samples=samples)).summary
    arr = np.array(samples)
    assert (s.n, s.min, s.max) == (6, 1.0, 10.0)
    assert s.median == pytest.approx(np.median(arr))
    assert s.p25 == pytest.approx(np.percentile(arr, 25)) and s.p75 == pytest.approx(np.percentile(arr, 75))
    assert s.stdev == pytest.approx(np.std(arr, ddof=1)) and s.mean == pytest.approx(arr.mean())
    assert Result(**_result(samples=[3.0])).summary.stdev is None


def test_case_key_is_order_independent_and_checked():
    assert case_key({"b": 1, "a": "x"}) == case_key({"a": "x", "b": 1}) == '{"a":"x","b":1}'
    with pytest.raises(ValidationError, match="does not match params"):
        Result(**_result(case_key='{"rows":2}'))


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        ({"unit": "GiB"}, "", "not a time unit"),
        ({"metric": "speed"}, "", "unknown metric"),
        ({"samples": [1.0, float("nan")]}, "samples", "finite"),
        ({"samples": []}, "", "needs at least one sample"),
        ({"status": "unavailable", "samples": [], "message": None}, "", "needs a message"),
        ({"status": "unsupported", "message": "no fp8"}, "", "must carry no samples"),
        (
            {"summary": {"n": 4, "median": 1, "mean": 1, "min": 1, "max": 1, "p25": 1, "p75": 1, "stdev": 0}},
            "",
            "summary does not match",
        ),
        ({"colour": "red"}, "colour", "Extra inputs are not permitted"),
        ({"samples": [7.0, 0.0]}, "samples", "must be > 0"),
        ({"metric": "max_abs_error", "unit": "1", "samples": [-1e-9]}, "samples", "must be >= 0"),
        ({"samples": [1e308] * 3}, "samples", "overflow"),
        ({"tolerance": float("inf")}, "tolerance", "finite"),
        ({"params": {"x": float("nan")}}, "params.x", ""),
    ],
)
def test_invalid_results_name_field_and_rule(change, field, rule):
    with pytest.raises(ValidationError) as info:
        Bundle(**_bundle(results=[_result(**change)]))
    err = info.value.errors()[0]
    named = (err.get("ctx") or {}).get("field")  # a model check that belongs to one field names it
    loc = (*err["loc"], named) if named else err["loc"]
    assert ".".join(map(str, loc)).startswith(f"results.0{'.' + field if field else ''}")
    assert rule in err["msg"]


@pytest.mark.parametrize(
    ("change", "loc", "rule"),
    [
        ({"schema_version": 99}, "schema_version", "not supported"),
        ({"run_id": "not-a-uuid"}, "run_id", "pattern"),
        ({"started_at": "2026-12-02T10:00:00"}, "started_at", "UTC offset"),
        ({"device": {"type": "tpu", "name": "x"}}, "device.type", "pattern"),
        ({"schema_version": "1"}, "schema_version", "valid integer"),
        ({"schema_version": True}, "schema_version", "valid integer"),
        ({"started_at": "9999-12-31T23:59:59-01:00"}, "started_at", "2000..2100"),
        ({"started_at": "1999-12-31T23:59:59Z"}, "started_at", "2000..2100"),
        ({"ended_at": datetime(2026, 12, 1, tzinfo=timezone.utc)}, "ended_at", "before started_at"),
        ({"machine": {"name": "m", "os": "macOS", "gpu_cores": 2**31}}, "machine.gpu_cores", "less than"),
        ({"machine": {"name": "m", "os": "macOS", "memory_bytes": 2**63}}, "machine.memory_bytes", "less than"),
        ({"tags": {str(i): "v" for i in range(1001)}}, "tags", "at most 1000"),
    ],
)
def test_invalid_headers_name_field_and_rule(change, loc, rule):
    with pytest.raises(ValidationError) as info:
        Bundle(**_bundle(**change))
    err = info.value.errors()[0]
    named = (err.get("ctx") or {}).get("field")
    assert ".".join(map(str, (*err["loc"], named) if named else err["loc"])) == loc and rule in err["msg"]


def test_schema_version_is_required():
    with pytest.raises(ValidationError, match="schema_version"):
        Bundle(**{k: v for k, v in _bundle().items() if k != "schema_version"})


def test_signs_come_from_the_metric_registry():
    """Differences and dB may be negative, errors and counts zero; times, rates and sizes must be positive."""
    for metric, unit, ok in [
        ("psnr_vs_cpu", "dB", -3.0),
        ("memory_outside_allocator", "B", -1.0),
        ("max_rel_error", "1", 0.0),
        ("pad_calls", "calls", 0.0),
    ]:
        assert Result(**_result(metric=metric, unit=unit, samples=[ok])).samples == [ok]
    for metric, unit in [("decode_throughput", "tokens/s"), ("memory_allocated_peak", "B"), ("compile_time", "s")]:
        with pytest.raises(ValidationError, match="must be > 0"):
            Result(**_result(metric=metric, unit=unit, samples=[0.0]))


def test_units_are_canonicalised_and_unavailable_has_no_value():
    r = Result(**_result(unit="us"))
    assert r.unit == "µs"
    gone = Result(
        **_result(
            metric="memory_reserved_peak",
            unit="B",
            status="unavailable",
            samples=[],
            message="this build has no allocator peak statistics for mps",
        )
    )
    assert gone.summary is None and gone.samples == []


def test_exported_json_schema_is_current():
    committed = json.loads((Path(__file__).parents[1] / "docs" / "bundle.schema.json").read_text())
    assert committed == json_schema(), "run: python -m bundle.schema > docs/bundle.schema.json"
