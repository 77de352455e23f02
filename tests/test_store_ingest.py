"""Ingest: canonical units, derived summaries, idempotency, refusals that leave the store unchanged."""

import json

import numpy as np
import pytest
from sqlalchemy import text

from db.errors import StoreError
from db.ingest.core import ingest_bundle
from db.query.read import read_data_version
from tests.bundles import make_bundle, make_result

TABLES = ("meta", "runs", "run_tags", "results")


def _dump(engine):
    with engine.connect() as c:
        return {t: sorted(map(repr, c.execute(text(f"SELECT * FROM {t}")).fetchall())) for t in TABLES}


def test_valid_bundle_stored_in_canonical_units_with_numpy_summary(engine):
    b = make_bundle(results=[make_result(unit="ms", samples=[0.005, 0.001, 0.004, 0.002, 0.003, 0.010])])
    v0 = read_data_version(engine)
    out = ingest_bundle(engine, json.dumps(b))
    assert (out.created, out.n_results) == (True, 1) and read_data_version(engine) != v0
    with engine.connect() as c:
        row = c.execute(text("SELECT unit, samples, median, p25, p75, stdev, mean FROM results")).one()
    arr = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 10.0])
    assert row[0] == "µs" and row[1] == pytest.approx(list(arr))
    assert row[2:] == pytest.approx(
        (np.median(arr), np.percentile(arr, 25), np.percentile(arr, 75), np.std(arr, ddof=1), arr.mean())
    )


def test_same_bundle_twice_is_one_copy(engine):
    b = make_bundle()
    ingest_bundle(engine, b)
    before = _dump(engine)
    assert ingest_bundle(engine, json.dumps(b)).created is False
    assert _dump(engine) == before


@pytest.mark.parametrize(
    ("raw", "status", "field"),
    [
        (b"{not json", 400, None),
        (b"[1, 2]", 400, None),
        (make_bundle(results=[make_result(metric="speed")]), 422, "results[0].metric"),
        (make_bundle(results=[make_result(unit="GiB")]), 422, "results[0].unit"),
        (make_bundle(results=[make_result(samples=[1.0, float("nan")])]), 422, "results[0].samples[1]"),
        (make_bundle(results=[make_result(samples=[])]), 422, "results[0]"),
        (make_bundle(results=[make_result(status="unsupported", message="no fp8")]), 422, "results[0]"),
        (make_bundle(results=[make_result(case_key='{"rows":2}')]), 422, "results[0].case_key"),
        (make_bundle(run_id="XYZ"), 422, "run_id"),
        (make_bundle(started_at="2026-12-02T10:00:00"), 422, "started_at"),
        (make_bundle(schema_version=99), 422, "schema_version"),
        (make_bundle(colour="red"), 422, "colour"),
    ],
)
def test_refusals_change_nothing(engine, raw, status, field):
    ingest_bundle(engine, make_bundle())
    before = _dump(engine)
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, raw)
    assert info.value.status == status
    if field:
        assert field in [p.field for p in info.value.problems]
    assert _dump(engine) == before


def test_known_run_id_with_other_content_is_409(engine):
    b = make_bundle()
    ingest_bundle(engine, b)
    before = _dump(engine)
    with pytest.raises(StoreError) as info:
        ingest_bundle(engine, b | {"complete": False})
    assert info.value.status == 409 and _dump(engine) == before


def test_hostile_strings_stored_verbatim(engine):
    odd = "<script>alert(1)</script> '; DROP TABLE runs; -- ünï\ncode 🚀"
    b = make_bundle(tags={"note": odd}, results=[make_result(status="error", samples=[], message=odd)])
    ingest_bundle(engine, json.dumps(b))
    with engine.connect() as c:
        assert c.execute(text("SELECT value FROM run_tags")).scalar() == odd
        assert c.execute(text("SELECT message FROM results")).scalar() == odd
