"""Kernels breakdowns in the store (case_kernels, store v13): stored at ingest with their run, read back per case for
the two sides of a comparison (db.query.what_ran) and compared (db.review.what_ran.kernels); in an export, and back."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from bundle.pytorch_oss.reading import from_records
from bundle.pytorch_oss.writing import to_records
from bundle.schema import Bundle
from db.ingest.core import _header_json, ingest_bundle
from db.query.run_bundles import run_bundles
from db.query.selectors import parse_selector
from db.query.what_ran import case_breakdowns
from db.review.what_ran.kernels import what_ran
from db.store.engine import open_store
from db.store.writers.retract import retract_run
from tests.bundles import make_bundle, make_result

CASE = ("softmax", '{"rows":1,"vocab":128256}', "float32", "eager")
MPS = "MPSProfiler (PYTORCH_MPS_LOG_PROFILE_INFO=8)"


def _kernels(kind: str, name: str, time: float) -> dict:
    return {
        "workload": "softmax",
        "params": {"rows": 1, "vocab": 128256},
        "dtype": "float32",
        "metric": "op_time",
        "status": "ok",
        "profiler": MPS,
        "op_calls": 23,
        "entries": [
            {"name": name, "kind": kind, "calls_per_call": 1.0, "device_time_us": time, "share": 1.0},
        ],
        "warnings": ["left out as the case's setup (…): copy CPU to MPS ×1"],
    }


def _bundle(version: str, kind: str, name: str, time: float, machine: str = "m3u") -> dict:
    return make_bundle(
        schema_version=5,
        run_id=uuid.uuid4().hex,
        build={"torch_version": version, "channel": "release", "python_version": "3.11.7", "collector_version": "0.2"},
        machine={"name": machine, "os": "macOS", "chip": "Apple M3 Ultra"},
        results=[make_result(samples=[time, time * 1.01])],
        kernels=[_kernels(kind, name, time)],
    )


@pytest.fixture
def engine(tmp_path):
    found = open_store(str(tmp_path / "store.duckdb"))
    yield found
    found.dispose()


def test_a_case_read_for_both_sides_and_compared(engine):
    runs = [
        _bundle("2.14.1", "graph", "softmax_mps_out", 57.4),
        _bundle("2.14.1", "graph", "softmax_mps_out", 57.6, machine="other"),
        _bundle("2.15.0", "kernel", "softmax_float", 7.1),
    ]
    for b in runs:
        assert ingest_bundle(engine, b).created
    with engine.connect() as conn:
        row = conn.execute(text("SELECT op_calls, device_time_us, status FROM case_kernels WHERE run_id = :r"),
                           {"r": runs[2]["run_id"]}).one()  # fmt: skip
    assert tuple(row) == (23, 7.1, "ok")
    base, cand = case_breakdowns(engine, parse_selector("torch=2.14.1", "b"), parse_selector("torch=2.15.0", "c"), CASE)
    assert [b["run_id"] for b in base] == [runs[0]["run_id"], runs[1]["run_id"]]
    assert cand[0]["entries"][0]["name"] == "softmax_float" and cand[0]["op_calls"] == 23
    mine, _ = case_breakdowns(
        engine, parse_selector("torch=2.14.1", "b"), parse_selector("torch=2.15.0", "c"), CASE, "machine", "m3u"
    )
    assert [b["run_id"] for b in mine] == [runs[0]["run_id"]]
    found = what_ran(base, cand, "softmax")
    assert found.headline() == "path changed: softmax ran as a Metal kernel instead of an MPSGraph graph"
    assert found.baseline_us == pytest.approx(57.5)  # the median of the two baseline runs
    retract_run(engine, runs[2]["run_id"], "ran on battery", "admin", admin=True)
    _, gone = case_breakdowns(engine, parse_selector("torch=2.14.1", "b"), parse_selector("torch=2.15.0", "c"), CASE)
    assert gone == []


def test_a_repost_is_already_present_and_a_bundle_without_kernels_hashes_as_before(engine):
    b = _bundle("2.15.0", "kernel", "softmax_float", 7.1)
    assert ingest_bundle(engine, b).created and not ingest_bundle(engine, b).created
    changed = json.loads(json.dumps(b))
    changed["kernels"][0]["entries"][0]["name"] = "softmax_half"
    with pytest.raises(Exception, match="different content"):
        ingest_bundle(engine, changed)
    old = Bundle.model_validate(make_bundle(schema_version=4))
    assert '"kernels"' not in _header_json(old)  # what a schema-4 bundle's hash was made of: no kernels key


def test_an_export_carries_each_breakdown_and_reads_back(engine):
    b = _bundle("2.15.0", "kernel", "softmax_float", 7.1)
    ingest_bundle(engine, b)
    [stored] = list(run_bundles(engine, [b["run_id"]]))
    assert stored["kernels"][0]["entries"][0]["device_time_us"] == 7.1 and list(stored)[-2:] == ["kernels", "results"]
    records = to_records(stored)
    [carrier] = [r for r in records if r["metric"]["name"] == "op_time(us)"]
    assert carrier["metric"]["extra_info"]["kernels"]["device_time_us"] == 7.1
    assert "kernels" not in carrier["benchmark"]["extra_info"]["mpsbench"]  # each on its case's record, not the run's
    assert all("kernels" not in r["metric"]["extra_info"] for r in records if r is not carrier)
    back, _ = from_records(records, b"x", "export", datetime(2026, 12, 5, tzinfo=timezone.utc))
    again = Bundle.model_validate(back)
    assert again.kernels == Bundle.model_validate(b).kernels
