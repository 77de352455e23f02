"""The store's column types are the ones declared in db/tables.py: 64-bit floats and 64-bit byte counts."""

import pytest
from sqlalchemy import text

from db.store.engine import open_store
from tests.bundles import make_bundle

FLOATS = ("median", "mean", "min", "max", "p25", "p75", "stdev", "tolerance")


@pytest.fixture
def types(tmp_path):
    engine = open_store(tmp_path / "t.duckdb")
    with engine.connect() as conn:
        out = {t: {r[0]: r[1] for r in conn.execute(text(f"DESCRIBE {t}"))} for t in ("runs", "results")}
    engine.dispose()
    return out


def test_every_float_column_is_double_and_samples_a_double_list(types):
    assert {c: types["results"][c] for c in FLOATS} == dict.fromkeys(FLOATS, "DOUBLE")
    assert types["results"]["samples"] == "DOUBLE[]"
    assert "FLOAT" not in types["results"].values() and "FLOAT" not in types["runs"].values()


def test_byte_counts_are_bigint_and_small_counts_stay_integer(types):
    assert types["runs"]["memory_bytes"] == "BIGINT"
    assert (types["runs"]["gpu_cores"], types["runs"]["n_results"], types["results"]["n"]) == ("INTEGER",) * 3


def test_192_gib_and_a_17_digit_median_round_trip_exactly(tmp_path):
    from db.ingest.core import ingest_bundle
    from tests.bundles import make_result

    engine = open_store(tmp_path / "t.duckdb")
    precise = 7.123456789012345  # 32-bit FLOAT would keep ~7 digits
    ingest_bundle(engine, make_bundle(results=[make_result(samples=[precise])]))
    with engine.connect() as conn:
        memory = conn.execute(text("SELECT memory_bytes FROM runs")).scalar()
        median = conn.execute(text("SELECT median FROM results")).scalar()
    engine.dispose()
    assert memory == 192 * 1024**3 and median == precise
