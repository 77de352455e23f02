"""run_seq (store v2): ingest numbers runs 1, 2, … on the run and every one of its results; a v1 file is
migrated (runs numbered in the order their results lie in the file, results rewritten in that order, indexes
kept); the Compare query, which now joins on run_seq, gives the same figures as before."""

import duckdb
import pytest
from sqlalchemy import text

from db.ingest.core import ingest_bundle
from db.review.comparison import CompareQuery, compute_compare
from db.store.engine import open_store
from db.store.tables import STORE_VERSION
from tests.bundles import make_bundle
from tests.test_store_migrate import V0_DDL

V1_EXTRA = """
ALTER TABLE results ADD COLUMN passed BOOLEAN; ALTER TABLE results ADD COLUMN tolerance DOUBLE;
CREATE INDEX ix_results_run_id ON results(run_id);
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
INSERT INTO meta VALUES ('store_version', '1'), ('data_version', 'v1-data');
INSERT INTO runs SELECT * REPLACE ('fedcba9876543210fedcba9876543210' AS run_id, '2.15.0' AS torch_version,
  TIMESTAMPTZ '2026-01-03 10:00:00+00' AS ingested_at) FROM runs;
"""
OLD, NEW = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"


@pytest.fixture
def v1_file(tmp_path):
    """Two runs whose results interleave in the file (NEW's first row lies before OLD's)."""
    path = tmp_path / "v1.duckdb"
    with duckdb.connect(str(path)) as raw:
        raw.execute(V0_DDL.split("INSERT INTO results")[0])
        raw.execute(V1_EXTRA)
        for run_id, index, samples in ((NEW, 0, [7.5, 8.5, 9.5]), (OLD, 0, [7.0, 8.0, 9.0]), (NEW, 1, [1.0])):
            raw.execute(
                "INSERT INTO results (result_id, run_id, workload, suite, case_key, params_json, dtype,"
                " compile, metric, unit, status, warnings_json, samples, n) VALUES (?, ?, 'softmax',"
                " 'kernels', '{\"rows\":1}', '{\"rows\": 1}', 'float32', 'eager', ?, 'µs', 'ok', '[]', ?, ?)",
                [f"{run_id}:{index}", run_id, "op_time" if index == 0 else "achieved_bandwidth", samples, len(samples)],
            )
    return path


def _seqs(engine) -> tuple[list, list]:
    with engine.connect() as conn:
        runs = conn.execute(text("SELECT run_id, run_seq FROM runs ORDER BY run_seq")).fetchall()
        results = conn.execute(text("SELECT result_id, run_seq FROM results ORDER BY rowid")).fetchall()
    return [tuple(r) for r in runs], [tuple(r) for r in results]


def test_v1_file_is_numbered_in_file_order_and_rewritten_run_by_run(v1_file):
    engine = open_store(v1_file)
    runs, results = _seqs(engine)
    with engine.connect() as conn:
        indexes = {
            r[0] for r in conn.execute(text("SELECT index_name FROM duckdb_indexes() WHERE table_name='results'"))
        }
        samples = conn.execute(text("SELECT samples FROM results WHERE result_id=:r"), {"r": f"{OLD}:0"}).scalar()
        version = conn.execute(text("SELECT value FROM meta WHERE key='store_version'")).scalar()
    engine.dispose()
    assert runs == [(NEW, 1), (OLD, 2)]
    assert results == [(f"{NEW}:0", 1), (f"{NEW}:1", 1), (f"{OLD}:0", 2)]  # contiguous per run now
    assert indexes == {"ix_results_run_id"} and samples == [7.0, 8.0, 9.0] and version == str(STORE_VERSION)


def test_migrated_v1_file_compares_as_before(v1_file):
    engine = open_store(v1_file)
    result = compute_compare(
        engine, CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0"})
    )
    engine.dispose()
    case = result.cases.iloc[0]
    assert len(result.cases) == 1 and (case.baseline_median, case.candidate_median) == (8.0, 8.5)
    assert list(result.unmatched.metric) == ["achieved_bandwidth"]


def test_ingest_numbers_each_run_and_all_its_results(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    first, second = make_bundle(), make_bundle()
    for bundle in (first, second, first):  # the repeat is already stored: no new number
        ingest_bundle(engine, bundle)
    runs, results = _seqs(engine)
    engine.dispose()
    assert runs == [(first["run_id"], 1), (second["run_id"], 2)]
    assert [s for _, s in results] == [1] * len(first["results"]) + [2] * len(second["results"])
